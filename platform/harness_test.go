package platform_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/sim"
)

// testKeys are generated once per test binary: [0] signs for the built-in
// provider, [1] for the external provider, [2] is an attacker's key.
var testKeys = sync.OnceValue(func() []*rsa.PrivateKey {
	keys := make([]*rsa.PrivateKey, 3)
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

const (
	extIssuer   = "https://sso.example.test/realms/acme"
	extAudience = "platform-api"
	extClient   = "bridge-cli"
	extKID      = "corp-1"
)

// extIdP is an external OIDC provider: a JWKS document served by httptest
// and tokens signed by the test.
type extIdP struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newExtIdP(t testing.TB) *extIdP {
	x := &extIdP{key: testKeys()[1]}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &x.key.PublicKey, KeyID: extKID, Algorithm: "RS256", Use: "sig"}}}
	body, _ := json.Marshal(set)
	x.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(x.srv.Close)
	return x
}

func extClaims(sub string) map[string]any {
	now := time.Now()
	return map[string]any{
		"typ": "Bearer", "iss": extIssuer, "aud": extAudience, "azp": extClient, "sub": sub,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
	}
}

// sign makes a compact JWS of claims with key and kid (RS256 unless alg).
func sign(t testing.TB, key any, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// token returns a valid token of the external provider for sub, after mod.
func (x *extIdP) token(t testing.TB, sub string, mod func(map[string]any)) string {
	c := extClaims(sub)
	if mod != nil {
		mod(c)
	}
	return sign(t, x.key, jose.RS256, extKID, c)
}

// harness is a daemon running the platform, started in-process on port 0.
type harness struct {
	t     testing.TB
	dir   string
	d     *daemon.Daemon
	svc   *platform.Service
	base  string
	owner string
	ext   *extIdP
	ws    identity.LocalWorkspace
	hc    *http.Client
	env   map[string]string

	opTok string // the local operator's token, fetched once
	port  int    // services port of the next start (0: any)
	// now is the platform's clock (nil: time.Now); schedule tests drive
	// it.
	now func() time.Time
	// simLimits replace the simulator's limits (nil: the documented ones).
	simLimits *sim.Limits
}

type harnessOption func(*harness)

// withEnv sets environment variables seen by the daemon's config.
func withEnv(kv ...string) harnessOption {
	return func(h *harness) {
		for i := 0; i+1 < len(kv); i += 2 {
			h.env[kv[i]] = kv[i+1]
		}
	}
}

func configYAML(jwks string) string {
	return fmt.Sprintf(`platform:
  identity:
    display-name: Acme workflows
    providers:
      corp:
        display-name: Corp SSO
        issuer: %s
        jwks-url: %s
        audience: %s
        clients:
          %s: {kind: human}
          ci-runner: {kind: application}
    sign-in:
      corp:
        provider: corp
        client: %s
        scopes: [openid, profile]
`, extIssuer, jwks, extAudience, extClient, extClient)
}

func newHarness(t testing.TB, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), env: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second}}
	for _, o := range opts {
		o(h)
	}
	h.ext = newExtIdP(t)
	h.start()
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *harness) start() {
	t := h.t
	t.Helper()
	file, err := config.Parse("config.yaml", []byte(configYAML(h.ext.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	file.LookupEnv = func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, h.port
	factory := func(d daemon.Deps) (daemon.Subsystem, error) {
		s, err := platform.New(context.Background(), d, platform.Options{SigningKey: testKeys()[0], Now: h.now, SimLimits: h.simLimits})
		h.svc = s
		return s, err
	}
	h.d, err = daemon.Start(context.Background(), daemon.Options{
		DataDir: h.dir, Config: cfg, File: file, Migrations: platform.Migrations(),
		Subsystems: []daemon.Factory{factory}, DisableKeyring: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.base = h.d.State().ServicesURL
	tok, err := daemon.ReadOwnerToken(filepath.Join(h.dir, daemon.OwnerTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	h.owner = tok
	h.ws = h.svc.LocalWorkspace()
	h.opTok = ""
}

func (h *harness) stop() {
	if h.d != nil {
		if err := h.d.Shutdown(); err != nil {
			h.t.Error(err)
		}
		h.d = nil
	}
}

// restart stops the daemon and starts it again on the same services port
// (samePort) or on a new one.
func (h *harness) restart(samePort bool) {
	h.port = 0
	if samePort {
		u, _ := url.Parse(h.base)
		h.port, _ = strconv.Atoi(u.Port())
	}
	h.stop()
	h.start()
}

// resp is a response read whole.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// req describes a request.
type req struct {
	method, path, token string
	body                any // []byte is sent as is
	hdr                 map[string]string
	hdrs                map[string][]string
}

func (h *harness) do(r req) resp {
	h.t.Helper()
	out, err := h.doRaw(r)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// doRaw is do answering transport errors.
func (h *harness) doRaw(r req) (resp, error) {
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	hr, err := http.NewRequest(r.method, h.base+r.path, rd)
	if err != nil {
		return resp{}, err
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.hdr {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	for k, vs := range r.hdrs {
		hr.Header[k] = vs
	}
	res, err := h.hc.Do(hr)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	return resp{status: res.StatusCode, header: res.Header, body: body}, nil
}

func (h *harness) get(path, token string) resp {
	return h.do(req{method: "GET", path: path, token: token})
}

func (h *harness) post(path, token string, body any) resp {
	return h.do(req{method: "POST", path: path, token: token, body: body})
}

// must asserts status and decodes the body into out.
func (h *harness) must(status int, r resp, out any) {
	h.t.Helper()
	if r.status != status {
		h.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	checkPlatformHeaders(h.t, r)
	if out != nil {
		r.json(h.t, out)
	}
}

// problem is a decoded problem body.
type problem struct {
	Status      int    `json:"status"`
	Code        string `json:"code"`
	Message     string `json:"message"`
	RequestID   string `json:"request_id"`
	Diagnostics []struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Path      string `json:"path"`
		Parameter string `json:"parameter"`
	} `json:"diagnostics"`
}

// problem asserts a problem+json answer with status and code.
func (h *harness) problem(status int, code string, r resp) problem {
	h.t.Helper()
	return checkProblem(h.t, status, code, r)
}

func checkProblem(t testing.TB, status int, code string, r resp) problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q", ct)
	}
	var p problem
	r.json(t, &p)
	var raw map[string]any
	r.json(t, &raw)
	for _, f := range []string{"status", "code", "message", "request_id", "diagnostics"} {
		if _, ok := raw[f]; !ok {
			t.Fatalf("problem lacks %s: %s", f, r.body)
		}
	}
	if p.Status != status || p.Code != code || p.Message == "" {
		t.Fatalf("problem %+v, want %d %s", p, status, code)
	}
	if p.RequestID == "" || p.RequestID != r.header.Get("X-Platform-Request-ID") {
		t.Fatalf("request_id %q vs header %q", p.RequestID, r.header.Get("X-Platform-Request-ID"))
	}
	if status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("401 without WWW-Authenticate: Bearer")
	}
	for _, secret := range []string{"eyJ", "brg_", "goroutine", ".go:"} {
		if bytes.Contains(r.body, []byte(secret)) {
			t.Fatalf("problem leaks %q: %s", secret, r.body)
		}
	}
	checkPlatformHeaders(t, r)
	return p
}

func checkPlatformHeaders(t testing.TB, r resp) {
	t.Helper()
	if len(r.header.Get("X-Platform-Request-ID")) != 32 {
		t.Fatalf("X-Platform-Request-ID %q", r.header.Get("X-Platform-Request-ID"))
	}
	if r.header.Get("X-Platform-Wire-Version") != "platform/api-v1" {
		t.Fatalf("X-Platform-Wire-Version %q", r.header.Get("X-Platform-Wire-Version"))
	}
}

// localToken signs the local operator in through the built-in provider's
// device flow over HTTP (approved with the owner token).
func (h *harness) localToken() string {
	h.t.Helper()
	if h.opTok != "" {
		return h.opTok
	}
	form := func(path string, v url.Values, bearer string) (int, map[string]any) {
		hr, _ := http.NewRequest("POST", h.base+"/idp"+path, strings.NewReader(v.Encode()))
		hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if bearer != "" {
			hr.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := h.hc.Do(hr)
		if err != nil {
			h.t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	code, dc := form("/oauth/device/code", url.Values{"client_id": {"bridge-cli"}}, "")
	if code != 200 {
		h.t.Fatalf("device code: %d %v", code, dc)
	}
	if code, out := form("/oauth/device/approve", url.Values{"user_code": {dc["user_code"].(string)}}, h.owner); code != 200 {
		h.t.Fatalf("approve: %d %v", code, out)
	}
	code, tok := form("/oauth/token", url.Values{"client_id": {"bridge-cli"}, "device_code": {dc["device_code"].(string)},
		"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}}, "")
	if code != 200 {
		h.t.Fatalf("token: %d %v", code, tok)
	}
	h.opTok = tok["access_token"].(string)
	return h.opTok
}

// link creates a principal for an external subject (as the system
// principal) and returns its id.
func (h *harness) link(kind, sub string) string {
	h.t.Helper()
	var p identity.Principal
	h.must(201, h.post("/admin/principals", h.owner, map[string]string{"kind": kind, "issuer": extIssuer, "subject": sub}), &p)
	return p.ID
}

// grant creates a grant as the local operator.
func (h *harness) grant(principal string, scope identity.Scope, role string, caps ...string) string {
	h.t.Helper()
	var id string
	h.must(200, h.post("/admin/grants", h.localToken(), identity.GrantRequest{PrincipalID: principal, Scope: scope, Role: role, Capabilities: caps}), &id)
	return id
}

// user links an external subject, grants it role at scope and returns its
// principal id and a token.
func (h *harness) user(sub, role string, scope identity.Scope) (string, string) {
	h.t.Helper()
	id := h.link("human", sub)
	if role != "" {
		h.grant(id, scope, role)
	}
	return id, h.ext.token(h.t, sub, nil)
}

// project creates a project in the local tenant as the operator.
func (h *harness) project(name string) identity.Project {
	h.t.Helper()
	var p identity.Project
	h.must(201, h.post("/api/v1/tenants/"+h.ws.TenantID+"/projects", h.localToken(), map[string]string{"name": name}), &p)
	return p
}

func (h *harness) environment(project, name string) identity.Environment {
	h.t.Helper()
	var e identity.Environment
	h.must(201, h.post("/api/v1/tenants/"+h.ws.TenantID+"/projects/"+project+"/environments", h.localToken(), map[string]string{"name": name}), &e)
	return e
}

func (h *harness) localScope() identity.Scope { return identity.Scope{Tenant: h.ws.TenantID} }

func (h *harness) envPath(tenant, project, env string) string {
	return "/api/v1/tenants/" + tenant + "/projects/" + project + "/environments/" + env
}

// audit returns the access decisions recorded for a request id.
func (h *harness) audit(requestID string) []auditRow {
	h.t.Helper()
	if err := h.svc.FlushAudit(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	rows, err := h.d.DB.Reader().Query(`SELECT action, capability, principal_id, allowed, reason, tenant_id, project_id, environment_id, route, method
		FROM platform_access_audit WHERE request_id = ? ORDER BY seq`, requestID)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var a auditRow
		if err := rows.Scan(&a.Action, &a.Capability, &a.Principal, &a.Allowed, &a.Reason, &a.Tenant, &a.Project, &a.Environment, &a.Route, &a.Method); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

type auditRow struct {
	Action, Capability, Principal        string
	Allowed                              bool
	Reason, Tenant, Project, Environment string
	Route, Method                        string
}

func TestMain(m *testing.M) {
	os.Setenv("BRIDGE_DISABLE_KEYRING", "1")
	os.Exit(m.Run())
}
