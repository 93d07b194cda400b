package platform_test

import (
	"database/sql"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/identity"
)

func TestClientConfiguration(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	for _, path := range []string{"/api/v1/client-configuration", "/client-configuration"} {
		var cc identity.ClientConfiguration
		h.must(200, h.get(path, ""), &cc)
		is.Equal(cc.DisplayName, "Acme workflows")
		is.Equal(len(cc.SignIn), 2)
		is.Equal(cc.SignIn[0].ProviderID, platform.LocalProviderID)
		is.Equal(cc.SignIn[0].Issuer, h.base+"/idp")
		corp := cc.SignIn[1]
		is.Equal(corp.ProviderID, "corp")
		is.Equal(corp.DisplayName, "Corp SSO")
		is.Equal(corp.ClientID, extClient)
		is.Equal(corp.Scopes, []string{"openid", "profile"})
		is.Equal(corp.Issuer, extIssuer)
		is.Equal(corp.Flow, "device")
	}
	// Public: a bad token does not matter; HEAD has no body.
	h.must(200, h.get("/api/v1/client-configuration", "garbage"), nil)
	res := h.do(req{method: "HEAD", path: "/api/v1/client-configuration"})
	is.Equal(res.status, 200)
	is.Equal(len(res.body), 0)
	checkPlatformHeaders(t, res)
}

func TestIdentityRoute(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	pa := h.project("alpha")
	ea := h.environment(pa.ID, "staging")
	pb := h.project("beta")
	h.environment(pb.ID, "dev")
	// carol: viewer on one environment of alpha, developer on beta.
	carol := h.link("human", "carol")
	h.grant(carol, identity.Scope{Tenant: h.ws.TenantID, Project: pa.ID, Environment: ea.ID}, "viewer")
	h.grant(carol, identity.Scope{Tenant: h.ws.TenantID, Project: pb.ID}, "developer")
	tok := h.ext.token(t, "carol", nil)

	for _, path := range []string{"/api/v1/identity", "/identity"} {
		var id identity.Identity
		h.must(200, h.get(path, tok), &id)
		is.Equal(id.PrincipalID, carol)
		is.Equal(id.Kind, "human")
		is.Equal(len(id.Grants), 2)
		is.Equal(len(id.Workspaces), 1)
		ps := id.Workspaces[0].Projects
		is.Equal(len(ps), 2) // not the bootstrapped Default project
		is.Equal(ps[0].ID, pa.ID)
		is.Equal(len(ps[0].Environments), 1) // only staging
		is.Equal(ps[0].Environments[0].ID, ea.ID)
		is.Equal(ps[1].ID, pb.ID)
		is.Equal(len(ps[1].Environments), 1)
		is.Equal(id.Grants[0].EffectiveCapabilities, []string{"catalog.read", "status.read", "run.read"})
	}
	// A new environment shows up at once (the cached view is invalidated).
	eb2 := h.environment(pb.ID, "prod")
	var id identity.Identity
	h.must(200, h.get("/api/v1/identity", tok), &id)
	is.Equal(id.Workspaces[0].Projects[1].Environments[1].ID, eb2.ID)

	res := h.do(req{method: "HEAD", path: "/api/v1/identity", token: tok})
	is.Equal(res.status, 200)
	is.Equal(len(res.body), 0)
	res = h.do(req{method: "HEAD", path: "/api/v1/identity"})
	is.Equal(res.status, 401)
	is.Equal(len(res.body), 0)
	is.Equal(res.header.Get("Content-Type"), "application/problem+json")
	is.Equal(res.header.Get("WWW-Authenticate"), "Bearer")
	checkPlatformHeaders(t, res)

	// A worker sees the environments it may claim in.
	w := h.link("worker", "worker-1")
	h.grant(w, identity.Scope{Tenant: h.ws.TenantID, Project: pa.ID, Environment: ea.ID}, "worker")
	h.must(200, h.get("/api/v1/identity", h.ext.token(t, "worker-1", nil)), &id)
	is.Equal(id.Kind, "worker")
	is.Equal(id.Grants[0].EffectiveCapabilities, []string{"task.claim"})
	is.Equal(id.Workspaces[0].Projects[0].Environments[0].ID, ea.ID)
}

func TestProvisioning(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	T := h.ws.TenantID

	// Tenants: platform administration only.
	var tnt identity.Tenant
	res := h.post("/admin/tenants", op, map[string]string{"name": "acme"})
	h.must(201, res, &tnt)
	is.Equal(tnt.Name, "acme")
	is.Equal(tnt.Revision, int64(1))
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.Equal(res.header.Get("Location"), "/api/v1/tenants/"+tnt.ID)
	// Platform administration is no business access: the operator did not
	// become the new tenant's administrator.
	h.problem(403, "PF-FORBIDDEN", h.get("/api/v1/tenants/"+tnt.ID, op))
	// Bootstrapping oneself is refused; bootstrapping someone else works.
	h.problem(403, "PF-FORBIDDEN", h.post("/admin/tenants", op, map[string]string{"name": "x", "admin_principal_id": h.ws.OperatorID}))
	dave := h.link("human", "dave")
	var t2 identity.Tenant
	h.must(201, h.post("/admin/tenants", op, map[string]string{"name": "dave's", "admin_principal_id": dave}), &t2)
	daveTok := h.ext.token(t, "dave", nil)
	h.must(200, h.get("/api/v1/tenants/"+t2.ID, daveTok), nil)
	h.problem(403, "PF-FORBIDDEN", h.post("/admin/tenants", daveTok, map[string]string{"name": "nope"}))
	h.problem(422, "PF-VALIDATION", h.post("/admin/tenants", op, map[string]string{"name": "x", "admin_principal_id": "not-a-uuid"}))
	h.problem(422, "PF-VALIDATION", h.post("/admin/tenants", op, map[string]string{"name": "x", "admin_principal_id": "00000000-0000-4000-8000-000000000000"}))

	// Names: 1..200 characters, trimmed, no control characters.
	for _, c := range []struct {
		name   string
		status int
	}{
		{strings.Repeat("n", 200), 201}, {strings.Repeat("é", 200), 201}, {strings.Repeat("n", 201), 422},
		{"", 422}, {"   ", 422}, {"a\x00b", 422}, {"a", 201},
	} {
		res := h.post("/api/v1/tenants/"+T+"/projects", op, map[string]string{"name": c.name})
		if c.status == 201 {
			h.must(201, res, nil)
			continue
		}
		p := h.problem(422, "PF-VALIDATION", res)
		is.Equal(p.Diagnostics[0].Path, "/name")
	}

	// Projects.
	res = h.post("/api/v1/tenants/"+T+"/projects", op, map[string]string{"name": " payments "})
	var p identity.Project
	h.must(201, res, &p)
	is.Equal(p.Name, "payments")
	is.Equal(p.TenantID, T)
	is.Equal(res.header.Get("Location"), "/api/v1/tenants/"+T+"/projects/"+p.ID)
	var got identity.Project
	res = h.get("/api/v1/tenants/"+T+"/projects/"+p.ID, op)
	h.must(200, res, &got)
	is.Equal(got, p)
	is.Equal(res.header.Get("ETag"), `"1"`)
	h.problem(404, "PF-NOT-FOUND", h.get("/api/v1/tenants/"+T+"/projects/00000000-0000-4000-8000-000000000000", op))
	h.problem(404, "PF-NOT-FOUND", h.get("/api/v1/tenants/"+T+"/projects/NOT-A-UUID", op))
	h.problem(404, "PF-NOT-FOUND", h.get("/api/v1/tenants/"+T+"/projects/"+strings.ToUpper(p.ID), op))
	// Project of another tenant through this tenant's path.
	h.problem(404, "PF-NOT-FOUND", h.post("/api/v1/tenants/"+T+"/projects/"+p.ID+"x/environments", op, map[string]string{"name": "x"}))

	// Environments, and the environment read (status.read).
	res = h.post("/api/v1/tenants/"+T+"/projects/"+p.ID+"/environments", op, map[string]string{"name": "production"})
	var e identity.Environment
	h.must(201, res, &e)
	is.Equal(e.ProjectID, p.ID)
	is.Equal(e.TenantID, T)
	path := h.envPath(T, p.ID, e.ID)
	is.Equal(res.header.Get("Location"), path)
	var ge identity.Environment
	res = h.get(path, op)
	h.must(200, res, &ge)
	is.Equal(ge, e)
	is.Equal(res.header.Get("ETag"), `"1"`)
	// An environment of another project is not found under this one.
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(T, h.ws.ProjectID, e.ID), op))
	h.problem(404, "PF-NOT-FOUND", h.post("/api/v1/tenants/"+T+"/projects/00000000-0000-4000-8000-000000000000/environments", op, map[string]string{"name": "x"}))
	// Reading needs status.read; a viewer has it, an outsider does not.
	_, viewer := h.user("vera", "viewer", identity.Scope{Tenant: T, Project: p.ID})
	h.must(200, h.get(path, viewer), nil)
	h.problem(403, "PF-FORBIDDEN", h.post("/api/v1/tenants/"+T+"/projects/"+p.ID+"/environments", viewer, map[string]string{"name": "x"}))
	h.problem(403, "PF-FORBIDDEN", h.get(h.envPath(t2.ID, p.ID, e.ID), viewer))
	// Compatibility routes: same handler and data, no redirect.
	var compat identity.Environment
	h.must(200, h.get(strings.TrimPrefix(path, "/api/v1"), op), &compat)
	is.Equal(compat, e)
	h.must(201, h.post("/tenants/"+T+"/projects", op, map[string]string{"name": "via compat"}), nil)
}

func TestGrants(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	T := h.ws.TenantID
	p := h.project("alpha")
	e := h.environment(p.ID, "dev")
	erin := h.link("human", "erin")
	erinTok := h.ext.token(t, "erin", nil)

	// 200 Identifier: a UUID.
	res := h.post("/admin/grants", op, identity.GrantRequest{PrincipalID: erin, Scope: identity.Scope{Tenant: T, Project: p.ID}, Role: "developer", Capabilities: []string{"run.read", "grant.manage"}})
	var gid string
	h.must(200, res, &gid)
	is.Equal(len(gid), 36)
	h.must(200, h.get(h.envPath(T, p.ID, e.ID), erinTok), nil)

	// Grants cannot escalate: erin (grant.manage on alpha) cannot give what
	// she lacks, nor anything outside alpha.
	frank := h.link("human", "frank")
	cases := []struct {
		name   string
		req    identity.GrantRequest
		status int
		code   string
		path   string
	}{
		{"within scope and held", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T, Project: p.ID, Environment: e.ID}, Role: "viewer"}, 200, "", ""},
		{"capability not held", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T, Project: p.ID}, Role: "operator"}, 403, "PF-FORBIDDEN", ""},
		{"outside the scope", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T}, Role: "viewer"}, 403, "PF-FORBIDDEN", ""},
		{"platform level", identity.GrantRequest{PrincipalID: frank, Role: "platform_admin"}, 403, "PF-FORBIDDEN", ""},
		{"unknown role", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T}, Role: "owner"}, 422, "PF-VALIDATION", "/role"},
		{"unknown capability", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T}, Capabilities: []string{"run.read", "run.fly"}}, 422, "PF-VALIDATION", "/capabilities/1"},
		{"nothing granted", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T}}, 422, "PF-VALIDATION", "/role"},
		{"project without tenant", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Project: p.ID}, Role: "viewer"}, 422, "PF-VALIDATION", "/scope/tenant"},
		{"unknown environment", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: T, Project: p.ID, Environment: "00000000-0000-4000-8000-000000000000"}, Role: "viewer"}, 422, "PF-VALIDATION", "/scope/environment"},
		{"bad uuid", identity.GrantRequest{PrincipalID: frank, Scope: identity.Scope{Tenant: "T"}, Role: "viewer"}, 422, "PF-VALIDATION", "/scope/tenant"},
		{"unknown principal", identity.GrantRequest{PrincipalID: "00000000-0000-4000-8000-000000000000", Scope: identity.Scope{Tenant: T}, Role: "viewer"}, 422, "PF-VALIDATION", "/principal_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.post("/admin/grants", erinTok, c.req)
			if c.status == 200 {
				h.must(200, res, nil)
				return
			}
			pr := checkProblem(t, c.status, c.code, res)
			if c.path != "" && pr.Diagnostics[0].Path != c.path {
				t.Fatalf("path %q, want %q", pr.Diagnostics[0].Path, c.path)
			}
			if c.status == 403 {
				rows := h.audit(pr.RequestID)
				last := rows[len(rows)-1]
				if last.Action != "delegate" || last.Allowed {
					t.Fatalf("audit %+v", rows)
				}
			}
		})
	}
	// Without any grant authority: 403 before the body is looked at.
	h.problem(403, "PF-FORBIDDEN", h.post("/admin/grants", h.ext.token(t, "frank", nil), "{not json"))
	// Worker principals can only get worker capabilities.
	w := h.link("worker", "w1")
	h.problem(422, "PF-VALIDATION", h.post("/admin/grants", op, identity.GrantRequest{PrincipalID: w, Scope: identity.Scope{Tenant: T}, Role: "developer"}))
	h.problem(422, "PF-VALIDATION", h.post("/admin/grants", op, identity.GrantRequest{PrincipalID: w, Scope: identity.Scope{Tenant: T}, Role: "worker", Capabilities: []string{"definition.publish"}}))
	h.must(200, h.post("/admin/grants", op, identity.GrantRequest{PrincipalID: w, Scope: identity.Scope{Tenant: T}, Role: "worker"}), nil)
	// Platform-level grants carry no business capability.
	h.problem(422, "PF-VALIDATION", h.post("/admin/grants", op, identity.GrantRequest{PrincipalID: frank, Role: "viewer"}))
	h.must(200, h.post("/admin/grants", op, identity.GrantRequest{PrincipalID: frank, Role: "platform_admin"}), nil)

	// Listing the tenant's grants needs grant.manage on the tenant.
	h.problem(403, "PF-FORBIDDEN", h.get("/api/v1/tenants/"+T+"/grants", erinTok))
	var page struct {
		Items      []identity.Grant `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}
	h.must(200, h.get("/api/v1/tenants/"+T+"/grants?principal_id="+erin, op), &page)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0].ID, gid)
	is.Equal(page.Items[0].Capabilities, []string{"run.read", "grant.manage"})
	is.True(page.NextCursor == nil)

	// Revocation: by someone with authority over the grant; applies at once.
	h.problem(403, "PF-FORBIDDEN", h.do(req{method: "DELETE", path: "/admin/grants/" + gid, token: h.ext.token(t, "frank", nil)}))
	var g identity.Grant
	h.must(200, h.do(req{method: "DELETE", path: "/admin/grants/" + gid, token: op}), &g)
	is.True(g.Revoked)
	is.True(g.RevokedAt != nil)
	is.Equal(len(g.EffectiveCapabilities), 0)
	h.must(200, h.do(req{method: "DELETE", path: "/admin/grants/" + gid, token: op}), nil) // again: unchanged
	h.problem(403, "PF-FORBIDDEN", h.get(h.envPath(T, p.ID, e.ID), erinTok))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: "/admin/grants/00000000-0000-4000-8000-000000000000", token: op}))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: "/admin/grants/nope", token: op}))
	h.must(200, h.get("/api/v1/tenants/"+T+"/grants?principal_id="+erin, op), &page)
	is.Equal(len(page.Items), 0)
	h.must(200, h.get("/api/v1/tenants/"+T+"/grants?principal_id="+erin+"&include_revoked=true", op), &page)
	is.Equal(len(page.Items), 1)
	h.problem(422, "PF-FILTER", h.get("/api/v1/tenants/"+T+"/grants?include_revoked=yes", op))
	h.problem(422, "PF-FILTER", h.get("/api/v1/tenants/"+T+"/grants?principal_id=x", op))
}

func TestPrincipals(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	res := h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "application", Issuer: extIssuer, Subject: "ci", Name: "CI"})
	var p identity.Principal
	h.must(201, res, &p)
	is.Equal(p.Kind, "application")
	is.Equal(p.Revision, int64(1))
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.Equal(res.header.Get("Location"), "/admin/principals/"+p.ID)
	pr := h.problem(409, "PF-CONFLICT", h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "human", Issuer: extIssuer, Subject: "ci"}))
	is.True(strings.Contains(pr.Message, p.ID))
	h.problem(422, "PF-VALIDATION", h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "robot", Issuer: extIssuer, Subject: "x"}))
	h.problem(422, "PF-VALIDATION", h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "human", Issuer: "https://unknown.example", Subject: "x"}))
	h.problem(422, "PF-VALIDATION", h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "human", Issuer: extIssuer, Subject: strings.Repeat("s", 256)}))
	h.must(201, h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "human", Issuer: extIssuer, Subject: strings.Repeat("s", 255)}), nil)
	h.problem(422, "PF-VALIDATION", h.post("/admin/principals", op, map[string]string{"kind": "human", "issuer": extIssuer}))
	// The built-in provider's URL links to the stable local issuer.
	var local identity.Principal
	h.must(201, h.post("/admin/principals", op, identity.CreatePrincipalRequest{Kind: "human", Issuer: h.base + "/idp", Subject: "someone"}), &local)
	is.Equal(local.Issuer, identity.LocalIssuer)

	// Reading: oneself, or an access administrator.
	h.must(200, h.get("/admin/principals/"+p.ID, op), nil)
	ciTok := h.ext.token(t, "ci", func(c map[string]any) { c["azp"] = "ci-runner" })
	h.must(200, h.get("/admin/principals/"+p.ID, ciTok), nil)
	h.problem(403, "PF-FORBIDDEN", h.get("/admin/principals/"+h.ws.OperatorID, ciTok))
	h.problem(403, "PF-FORBIDDEN", h.get("/admin/principals", ciTok))
	h.problem(404, "PF-NOT-FOUND", h.get("/admin/principals/00000000-0000-4000-8000-000000000000", op))

	var page struct {
		Items []identity.Principal `json:"items"`
	}
	h.must(200, h.get("/admin/principals?kind=application&issuer="+extIssuer, op), &page)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0].ID, p.ID)
	h.problem(422, "PF-FILTER", h.get("/admin/principals?kind=robot", op))

	// Disabling needs platform administration.
	h.problem(403, "PF-FORBIDDEN", h.post("/admin/principals/"+p.ID+"/disable", ciTok, nil))
	var d identity.Principal
	res = h.post("/admin/principals/"+p.ID+"/disable", op, nil)
	h.must(200, res, &d)
	is.True(d.Disabled)
	is.Equal(d.Revision, int64(2))
	is.Equal(res.header.Get("ETag"), `"2"`)
	h.must(200, h.post("/admin/principals/"+p.ID+"/disable", op, nil), &d) // no change
	is.Equal(d.Revision, int64(2))
	h.problem(404, "PF-NOT-FOUND", h.post("/admin/principals/00000000-0000-4000-8000-000000000000/disable", op, nil))
}

func TestMigrationsAndBootstrap(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	rows, err := h.d.DB.Reader().Query(`SELECT version, name FROM schema_migrations ORDER BY version`)
	is.NoErr(err)
	var names []string
	for rows.Next() {
		var v int
		var n string
		is.NoErr(rows.Scan(&v, &n))
		names = append(names, n)
	}
	rows.Close()
	is.Equal(names, []string{"0001_boot", "0002_access", "0003_access_audit", "0004_definitions", "0005_activations", "0006_runs", "0010_incidents",
		"0011_schedules", "0012_worker_tasks", "0013_human_tasks", "0014_dispatches", "0015_triggers", "0017_outbox", "0018_provider_inbox", "0021_operations", "0022_compatibility", "0023_step_test_items", "0025_run_lifecycle", "0026_scheduler_indexes", "0028_files",
		"0030_debug_sessions", "0031_studio_documents", "0032_run_archive", "0033_run_log_records", "0034_idempotency_compact", "0035_runs_env_index", "0036_access_audit_compact", "0037_run_keys", "0038_run_event_keys", "0039_access_decisions_context"})
	var n int
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_tenants`).Scan(&n))
	is.Equal(n, 1)
	h.restart(true)
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_tenants`).Scan(&n))
	is.Equal(n, 1)
	// The signing key is sealed, never stored in the clear.
	var sealed []byte
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT sealed FROM platform_secrets WHERE name = 'idp-signing-key'`).Scan(&sealed))
	is.True(!strings.Contains(string(sealed), "PRIVATE KEY"))
	is.True(sql.ErrNoRows != nil)
}

func TestHealthCarriesPlatformHeaders(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	for _, p := range []string{"/health/live", "/health/ready"} {
		res := h.get(p, "")
		is.Equal(res.status, http.StatusOK)
		checkPlatformHeaders(t, res)
	}
}
