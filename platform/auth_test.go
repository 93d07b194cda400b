package platform_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/identity"
)

// TestExternalProviderTokens signs tokens with the test's own RSA key,
// served from an httptest JWKS server configured as an external provider,
// and checks they are accepted exactly when they should be (docs/platform-api.md,
// "Authentication": every 401 condition).
func TestExternalProviderTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	alice, _ := h.user("alice", "viewer", h.localScope())
	x := h.ext
	valid := x.token(t, "alice", nil)

	var id identity.Identity
	h.must(200, h.get("/api/v1/identity", valid), &id)
	is.New(t).Equal(id.PrincipalID, alice)

	other := testKeys()[2]
	cases := []struct {
		name, auth, reason string
		hdrs               []string
	}{
		{name: "missing", reason: "token_missing"},
		{name: "empty bearer", auth: "Bearer ", reason: "token_malformed"}, // the server trims the space
		{name: "not bearer", auth: "Basic YWxpY2U6cHc=", reason: "token_malformed"},
		{name: "two headers", hdrs: []string{"Bearer " + valid, "Bearer " + valid}, reason: "token_malformed"},
		{name: "malformed", auth: "Bearer not-a-jwt", reason: "token_malformed"},
		{name: "three garbage segments", auth: "Bearer aaa.bbb.ccc", reason: "token_malformed"},
		{name: "expired", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { c["exp"] = time.Now().Add(-2 * time.Minute).Unix() }), reason: "token_expired"},
		{name: "no expiry", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { delete(c, "exp") }), reason: "expiry_missing"},
		{name: "wrong issuer", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { c["iss"] = "https://evil.example.test" }), reason: "issuer_not_configured"},
		{name: "wrong audience", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { c["aud"] = "another-api" }), reason: "audience_mismatch"},
		{name: "wrong client", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { c["azp"] = "someone-else" }), reason: "client_not_allowed"},
		{name: "missing typ", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { delete(c, "typ") }), reason: "token_type_not_bearer"},
		{name: "id token typ", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { c["typ"] = "ID" }), reason: "token_type_not_bearer"},
		{name: "empty subject", auth: "Bearer " + x.token(t, "alice", func(c map[string]any) { c["sub"] = "" }), reason: "subject_missing"},
		{name: "unknown kid", auth: "Bearer " + sign(t, other, jose.RS256, "unknown-kid", extClaims("alice")), reason: "key_id_unknown"},
		{name: "known kid, wrong key", auth: "Bearer " + sign(t, other, jose.RS256, extKID, extClaims("alice")), reason: "signature_invalid"},
		{name: "HS256", auth: "Bearer " + sign(t, []byte("0123456789abcdef0123456789abcdef"), jose.HS256, extKID, extClaims("alice")), reason: "algorithm_not_allowed"},
		{name: "oversized", auth: "Bearer " + strings.Repeat("a", 32<<10+1), reason: "token_too_large"},
		{name: "unlinked subject", auth: "Bearer " + x.token(t, "mallory", nil), reason: identity.ReasonNotLinked},
		{name: "owner token off /admin", auth: "Bearer " + h.owner, reason: "token_malformed"},
		// encoding/json would keep the last sub, alice's.
		{name: "repeated claim", auth: "Bearer " + x.repeatedSub(t, "mallory", "alice"), reason: "token_malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := req{method: "GET", path: "/api/v1/identity", hdrs: map[string][]string{}}
			if c.auth != "" {
				r.hdrs["Authorization"] = []string{c.auth}
			}
			if c.hdrs != nil {
				r.hdrs["Authorization"] = c.hdrs
			}
			res := h.do(r)
			p := checkProblem(t, 401, "PF-UNAUTHENTICATED", res)
			if len(p.Diagnostics) != 1 || p.Diagnostics[0].Code != c.reason {
				t.Fatalf("diagnostics %+v, want reason %s", p.Diagnostics, c.reason)
			}
			rows := h.audit(p.RequestID)
			if len(rows) != 1 || rows[0].Action != "authenticate" || rows[0].Allowed || rows[0].Reason != c.reason {
				t.Fatalf("audit %+v", rows)
			}
		})
	}
	// Still accepted after all that (an unknown kid refreshes keys once,
	// without dropping the good key).
	h.must(200, h.get("/api/v1/identity", valid), nil)
}

// TestForbiddenConditions covers the 403 conditions: a disabled principal,
// a revoked grant and a scope outside the grant; each applies on the next
// request whatever the token's expiry, and each decision is audited.
func TestForbiddenConditions(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	pa := h.project("alpha")
	pb := h.project("beta")
	ea := h.environment(pa.ID, "dev")
	eb := h.environment(pb.ID, "dev")
	bob := h.link("human", "bob")
	grant := h.grant(bob, identity.Scope{Tenant: h.ws.TenantID, Project: pa.ID}, "viewer")
	tok := h.ext.token(t, "bob", nil)

	// Inside the grant.
	var env identity.Environment
	h.must(200, h.get(h.envPath(h.ws.TenantID, pa.ID, ea.ID), tok), &env)
	is.Equal(env.ID, ea.ID)

	// Scope outside the grant.
	res := h.get(h.envPath(h.ws.TenantID, pb.ID, eb.ID), tok)
	p := h.problem(403, "PF-FORBIDDEN", res)
	rows := h.audit(p.RequestID)
	is.Equal(len(rows), 1) // the capability decision names the principal
	is.Equal(rows[0].Action, "authorize")
	is.Equal(rows[0].Capability, "status.read")
	is.Equal(rows[0].Environment, eb.ID)
	is.True(!rows[0].Allowed)
	is.Equal(rows[0].Reason, "no_matching_grant")
	is.Equal(rows[0].Principal, bob)
	is.Equal(rows[0].Route, "/api/v1/tenants/{tenant}/projects/{project}/environments/{environment}")
	is.Equal(rows[0].Method, "GET")
	// An allowed decision is recorded too.
	res = h.get(h.envPath(h.ws.TenantID, pa.ID, ea.ID), tok)
	rows = h.audit(res.header.Get("X-Platform-Request-ID"))
	is.Equal(len(rows), 1)
	is.True(rows[0].Allowed)

	// A capability the role lacks, inside the scope.
	h.problem(403, "PF-FORBIDDEN", h.post("/api/v1/tenants/"+h.ws.TenantID+"/projects/"+pa.ID+"/environments", tok, map[string]string{"name": "x"}))

	// Disabled principal: refused on the next request, with the same token.
	h.must(200, h.post("/admin/principals/"+bob+"/disable", h.localToken(), nil), nil)
	res = h.get(h.envPath(h.ws.TenantID, pa.ID, ea.ID), tok)
	p = h.problem(403, "PF-FORBIDDEN", res)
	is.Equal(p.Diagnostics[0].Code, "principal_disabled")
	rows = h.audit(p.RequestID)
	is.Equal(rows[0].Reason, "principal_disabled")
	is.Equal(rows[0].Principal, bob)
	h.problem(403, "PF-FORBIDDEN", h.get("/api/v1/identity", tok))
	h.must(200, h.post("/admin/principals/"+bob+"/enable", h.localToken(), nil), nil)
	h.must(200, h.get(h.envPath(h.ws.TenantID, pa.ID, ea.ID), tok), nil)

	// Revoked grant: refused on the next request.
	h.must(200, h.do(req{method: "DELETE", path: "/admin/grants/" + grant, token: h.localToken()}), nil)
	h.problem(403, "PF-FORBIDDEN", h.get(h.envPath(h.ws.TenantID, pa.ID, ea.ID), tok))
	// Known identity without grants still reads its identity.
	var id identity.Identity
	h.must(200, h.get("/api/v1/identity", tok), &id)
	is.Equal(len(id.Grants), 0)
	is.Equal(len(id.Workspaces), 0)
}

// TestLocalOperatorLogin is the new user's path: serve, sign in through the
// built-in provider's device flow (approved by the owner token), then call
// /api/v1/identity and see the bootstrapped workspace. The token is
// verified through the same JWKS path as an external provider's.
func TestLocalOperatorLogin(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	tok := h.localToken()
	var id identity.Identity
	h.must(200, h.get("/api/v1/identity", tok), &id)
	is.Equal(id.PrincipalID, h.ws.OperatorID)
	is.Equal(id.Kind, "human")
	is.Equal(len(id.Workspaces), 1)
	ws := id.Workspaces[0]
	is.Equal(ws.ID, h.ws.TenantID)
	is.Equal(ws.Name, identity.LocalTenantName)
	is.Equal(len(ws.Projects), 1)
	is.Equal(ws.Projects[0].ID, h.ws.ProjectID)
	is.Equal(ws.Projects[0].Environments[0].ID, h.ws.EnvironmentID)
	roles := map[string]bool{}
	for _, g := range id.Grants {
		roles[g.Role] = true
	}
	is.True(roles["tenant_admin"] && roles["platform_admin"])

	// The discovery document and JWKS are published on the services listener.
	var disc map[string]any
	h.must(200, h.get("/idp/.well-known/openid-configuration", ""), nil)
	h.get("/idp/.well-known/openid-configuration", "").json(t, &disc)
	is.Equal(disc["jwks_uri"], h.base+"/idp/oauth/jwks")
	is.Equal(disc["issuer"], h.base+"/idp")

	// Approving a device code needs the owner token.
	res := h.do(req{method: "POST", path: "/idp/oauth/device/approve", token: tok, body: "user_code=BCDF-GHJK",
		hdr: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	is.Equal(res.status, http.StatusUnauthorized)

	// A restart keeps the signing key, the workspace and the sign-in.
	ws0 := h.ws
	h.restart(true)
	h.must(200, h.get("/api/v1/identity", tok), &id)
	is.Equal(id.Workspaces[0].ID, ws.ID)
	is.Equal(h.ws, ws0) // bootstrapped once

	// On another port the issuer URL changes: old tokens are refused, and a
	// new sign-in resolves to the same principal (linked by a stable issuer).
	h.restart(false)
	p := h.problem(401, "PF-UNAUTHENTICATED", h.get("/api/v1/identity", tok))
	is.Equal(p.Diagnostics[0].Code, "issuer_not_configured")
	h.must(200, h.get("/api/v1/identity", h.localToken()), &id)
	is.Equal(id.PrincipalID, h.ws.OperatorID)
}

// TestOwnerTokenIsTheSystemPrincipal: the owner token authenticates the
// system principal on /admin routes only, which holds platform
// administration and no business access.
func TestOwnerTokenIsTheSystemPrincipal(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	var tnt identity.Tenant
	h.must(201, h.post("/admin/tenants", h.owner, map[string]string{"name": "acme"}), &tnt)
	// No business access for the system principal, and no token use elsewhere.
	h.problem(401, "PF-UNAUTHENTICATED", h.get("/api/v1/tenants/"+tnt.ID, h.owner))
	// It cannot bootstrap itself into the tenant.
	var p identity.Principal
	h.must(200, h.get("/admin/principals/"+h.ws.SystemID, h.owner), &p)
	is.Equal(p.Kind, "application")
	res := h.post("/admin/tenants", h.owner, map[string]string{"name": "self", "admin_principal_id": h.ws.SystemID})
	h.problem(403, "PF-FORBIDDEN", res)
	// It cannot be disabled.
	h.problem(422, "PF-VALIDATION", h.post("/admin/principals/"+h.ws.SystemID+"/disable", h.localToken(), nil))
}

// Two Authorization headers are refused wherever the owner token counts,
// even when the first one is the owner token (the owner check reads only
// the first).
func TestRepeatedAuthorizationIsRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	two := map[string][]string{"Authorization": {"Bearer " + h.owner, "Bearer " + h.ext.token(t, "mallory", nil)}}
	p := h.problem(401, "PF-UNAUTHENTICATED", h.do(req{method: "POST", path: "/admin/tenants", body: map[string]string{"name": "x"}, hdrs: two}))
	is.Equal(p.Diagnostics[0].Code, "token_malformed")
	h.problem(401, "PF-UNAUTHENTICATED", h.do(req{method: "GET", path: "/admin/principals/" + h.ws.SystemID, hdrs: two}))
	// The same on the device approval of the built-in provider, which
	// otherwise answers the unknown user code.
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	res := h.do(req{method: "POST", path: "/idp/oauth/device/approve", body: "user_code=BCDF-GHJK", hdr: form, hdrs: two})
	is.Equal(res.status, http.StatusUnauthorized)
	res = h.do(req{method: "POST", path: "/idp/oauth/device/approve", body: "user_code=BCDF-GHJK", hdr: form, token: h.owner})
	is.Equal(res.status, http.StatusNotFound)
}

// repeatedSub is a validly signed token of the external provider whose
// payload names sub first as first, then as last.
func (x *extIdP) repeatedSub(t testing.TB, first, last string) string {
	t.Helper()
	payload, err := json.Marshal(extClaims(last))
	if err != nil {
		t.Fatal(err)
	}
	payload = append([]byte(`{"sub":"`+first+`",`), payload[1:]...)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: x.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", extKID))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
