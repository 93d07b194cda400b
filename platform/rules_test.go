package platform_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/steptest"
)

func TestRequestIDsAreServerGenerated(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		res := h.do(req{method: "GET", path: "/api/v1/identity", token: h.localToken(),
			hdr: map[string]string{"X-Platform-Request-ID": "client-chosen", "X-Request-ID": "client-chosen"}})
		checkPlatformHeaders(t, res)
		id := res.header.Get("X-Platform-Request-ID")
		is.True(id != "client-chosen")
		is.True(!seen[id])
		seen[id] = true
		rows := h.audit(id)
		is.Equal(len(rows), 1) // the identity read is audited under that id
		is.Equal(rows[0].Principal, h.ws.OperatorID)
	}
	// Errors and refusals carry it too, even the Host guard's.
	res := h.do(req{method: "GET", path: "/api/v1/identity", hdr: map[string]string{"Host": "evil.example"}})
	is.Equal(res.status, 403)
	is.Equal(len(res.header.Get("X-Platform-Request-ID")), 32)
}

func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tok := h.localToken()
	for _, path := range []string{"/api/v1/nope", "/api/v1/tenants/" + h.ws.TenantID + "/nope", "/tenants/x/y/z", "/admin/nope", "/api/v1"} {
		t.Run(path, func(t *testing.T) {
			p := h.problem(401, "PF-UNAUTHENTICATED", h.get(path, ""))
			if len(h.audit(p.RequestID)) != 1 {
				t.Fatal("unknown-route authentication not audited")
			}
			h.problem(401, "PF-UNAUTHENTICATED", h.get(path, "garbage"))
			h.problem(404, "PF-NOT-FOUND", h.get(path, tok))
		})
	}
	// A known path with another method is not a route either.
	h.problem(401, "PF-UNAUTHENTICATED", h.do(req{method: "DELETE", path: "/api/v1/identity"}))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: "/api/v1/identity", token: tok}))
	// Outside the platform's paths the daemon's 404 applies; so does /docs
	// unless PLATFORM_DOCS_ENABLED=true.
	res := h.get("/nope", "")
	if res.status != 404 || res.header.Get("Content-Type") != "application/problem+json" || res.header.Get("X-Platform-Request-ID") == "" {
		t.Fatalf("%d %v", res.status, res.header)
	}
	h.problem(404, "PF-NOT-FOUND", h.get("/docs", ""))
	h.problem(404, "PF-NOT-FOUND", h.get("/docs/openapi.json", tok))
}

// TestHeadForEveryGet: every GET route answers HEAD with the same status
// and headers and no body, at its canonical and compatibility paths.
func TestHeadForEveryGet(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	fill := strings.NewReplacer("{tenant}", h.ws.TenantID, "{project}", h.ws.ProjectID, "{environment}", h.ws.EnvironmentID,
		"{principal}", h.ws.OperatorID)
	ids := seedDefinitions(h)
	ids["activations"] = h.mustActivate(ePath(h), op, map[string]any{"published_version_id": ids["workflows"]}, "seed-activation", "").ID
	run := h.mustStartRun(op, map[string]any{"activation_id": ids["activations"], "input": map[string]any{"customerId": "c-1"}}, "seed-run")
	// A settled run answers GET and HEAD alike (the echo output has no tier,
	// so the decision step fails the run).
	h.waitRun(op, run.ID, "failed")
	_, task := h.humanTaskOf(op, h.setupReview(op), "seed-human", map[string]any{"orderId": "o-1"})
	ids["human-tasks"] = task.ID
	ids["files"] = h.uploadFile(op, "seed.txt", []byte("seed"), 0).ID
	sched := h.mustCreateSchedule(op, map[string]any{"cron": "0 9 * * 1-5", "activation_id": ids["activations"], "input": map[string]any{"customerId": "c-1"}})
	trig := h.mustCreateTrigger(op, map[string]any{"activation_id": ids["activations"]})
	draft := uuid.NewString()
	h.must(201, h.saveDraft(op, draft, "kind: workflow\nid: acme/head\nversion: 1\nsteps:\n  - id: pause\n    wait: 1h\n", ""), nil)
	h.must(200, h.putPolicy(op, "read_only", ""), nil)
	var st steptest.StepTestCreated
	h.must(200, h.stepTest(op, stepBody(draft, "wait", "pause", nil)), &st)
	ids["sessions"] = seedDebugSession(h, op)
	studioID := seedStudioSession(h, op)
	h.must(201, h.do(req{method: "PUT", path: pPath(h) + "/drafts/" + draft + "/studio/canvas", token: op,
		body: map[string]any{"draft_revision": 1, "document": map[string]any{"schemaVersion": 1, "kind": "canvas"}}}), nil)
	provider, conn := seedProviderSources(h, op, ids["activations"])
	maps.Copy(ids, provider)
	n := 0
	for _, rt := range h.svc.API().Routes() {
		if rt.Method != http.MethodGet || strings.HasSuffix(rt.Path, "/live") { // the live channel is a WebSocket
			continue
		}
		for _, p := range []string{rt.CanonicalPath(), rt.Path} {
			path := fill.Replace(p)
			path = strings.ReplaceAll(path, "/activations/{identifier}", "/activations/"+ids["activations"])
			path = strings.ReplaceAll(path, "/studio/local/debug/sessions/{identifier}", "/studio/local/debug/sessions/"+studioID)
			path = strings.ReplaceAll(path, "/drafts/{identifier}/studio/{kind}", "/drafts/"+draft+"/studio/canvas")
			if head, ok := strings.CutSuffix(path, "/{identifier}"); ok {
				path = head + "/" + ids[head[strings.LastIndex(head, "/")+1:]]
			}
			path = strings.ReplaceAll(path, "{adapter}", "echo")
			path = strings.ReplaceAll(path, "{run}", run.ID)
			path = strings.ReplaceAll(path, "{connection}", conn)
			path = strings.ReplaceAll(path, "/schedules/{id}", "/schedules/"+sched.ID)
			path = strings.ReplaceAll(path, "/triggers/{id}", "/triggers/"+trig.ID)
			path = strings.ReplaceAll(path, "/step-tests/{id}", "/step-tests/"+st.ID)
			get := h.get(path, op)
			head := h.do(req{method: "HEAD", path: path, token: op})
			if get.status != 200 {
				t.Fatalf("GET %s: %d %s", path, get.status, get.body)
			}
			is.Equal(head.status, 200)
			is.Equal(len(head.body), 0)
			is.Equal(head.header.Get("Content-Type"), get.header.Get("Content-Type"))
			is.Equal(head.header.Get("ETag"), get.header.Get("ETag"))
			is.Equal(head.header.Get("Content-Length"), get.header.Get("Content-Length"))
			checkPlatformHeaders(t, head)
			n++
		}
	}
	is.True(n >= 10)
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	path := "/api/v1/tenants/" + h.ws.TenantID + "/projects"
	send := func(tok, key string, body any) resp {
		return h.do(req{method: "POST", path: path, token: tok, body: body, hdr: map[string]string{"Idempotency-Key": key}})
	}
	var first, again identity.Project
	res := send(op, "k-1", `{"name":"payments"}`)
	h.must(201, res, &first)
	is.Equal(res.header.Get("Idempotent-Replayed"), "")
	// Same key, same body (also reformatted): the committed result again.
	for _, body := range []string{`{"name":"payments"}`, "{ \"name\" :\n \"payments\" }"} {
		res = send(op, "k-1", body)
		h.must(201, res, &again)
		is.Equal(again, first)
		is.Equal(res.header.Get("Idempotent-Replayed"), "true")
		is.Equal(res.header.Get("Location"), path+"/"+first.ID)
		is.Equal(res.header.Get("ETag"), `"1"`)
	}
	// Same key, different body: 409.
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", send(op, "k-1", `{"name":"billing"}`))
	// The same key in another scope (another path) or for another principal
	// is another key.
	h.must(201, h.do(req{method: "POST", path: "/api/v1/tenants/" + h.ws.TenantID + "/projects/" + h.ws.ProjectID + "/environments",
		token: op, body: `{"name":"payments"}`, hdr: map[string]string{"Idempotency-Key": "k-1"}}), nil)
	gina := h.link("human", "gina2")
	h.grant(gina, h.localScope(), "tenant_admin")
	var other identity.Project
	h.must(201, send(h.ext.token(t, "gina2", nil), "k-1", `{"name":"payments"}`), &other)
	is.True(other.ID != first.ID)
	// Compatibility path: same scope as the canonical one.
	res = h.do(req{method: "POST", path: "/tenants/" + h.ws.TenantID + "/projects", token: op, body: `{"name":"payments"}`,
		hdr: map[string]string{"Idempotency-Key": "k-1"}})
	h.must(201, res, &again)
	is.Equal(again.ID, first.ID)
	// Exactly one project was created by the key.
	var count int
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_projects WHERE name = 'payments'`).Scan(&count))
	is.Equal(count, 2) // first, and gina2's

	// Key bounds: 1..200 printable characters, one header.
	h.must(201, send(op, strings.Repeat("k", 200), `{"name":"x"}`), nil)
	for name, hdrs := range map[string][]string{
		"201 chars": {strings.Repeat("k", 201)}, "empty": {""}, "two headers": {"a", "b"}, "control": {"a\tb"}, "non-ascii": {"clé"},
	} {
		t.Run(name, func(t *testing.T) {
			res := h.do(req{method: "POST", path: path, token: op, body: `{"name":"x"}`, hdrs: map[string][]string{"Idempotency-Key": hdrs}})
			p := checkProblem(t, 422, "PF-IDEMPOTENCY", res)
			if p.Diagnostics[0].Parameter != "Idempotency-Key" {
				t.Fatalf("%+v", p)
			}
		})
	}
	// A failed change stores nothing: the key is still free afterwards.
	h.problem(422, "PF-VALIDATION", send(op, "k-2", `{"name":""}`))
	h.must(201, send(op, "k-2", `{"name":"ok"}`), nil)
	// Grants answer their Identifier again.
	w := h.link("human", "hank")
	var g1, g2 string
	body := identity.GrantRequest{PrincipalID: w, Scope: h.localScope(), Role: "viewer"}
	h.must(200, h.do(req{method: "POST", path: "/admin/grants", token: op, body: body, hdr: map[string]string{"Idempotency-Key": "g"}}), &g1)
	h.must(200, h.do(req{method: "POST", path: "/admin/grants", token: op, body: body, hdr: map[string]string{"Idempotency-Key": "g"}}), &g2)
	is.Equal(g1, g2)
}

// TestIfMatch covers every If-Match form on a route that takes it.
func TestIfMatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	op := h.localToken()
	id := h.link("human", "ivy")
	path := "/admin/principals/" + id + "/disable"
	cases := []struct {
		name   string
		values []string
		status int
		diag   string
	}{
		{"weak", []string{`W/"1"`}, 422, "weak"},
		{"wildcard", []string{"*"}, 422, "wildcard"},
		{"list", []string{`"1", "2"`}, 422, "multiple"},
		{"two headers", []string{`"1"`, `"1"`}, 422, "multiple"},
		{"zero", []string{`"0"`}, 422, "zero"},
		{"bare zero", []string{"0"}, 422, "zero"},
		{"signed plus", []string{"+1"}, 422, "signed"},
		{"signed minus", []string{`"-1"`}, 422, "signed"},
		{"zero padded", []string{`"01"`}, 422, "zero_padded"},
		{"empty", []string{""}, 422, "empty"},
		{"empty quotes", []string{`""`}, 422, "empty"},
		{"unbalanced", []string{`"1`}, 422, "malformed"},
		{"letters", []string{`"abc"`}, 422, "malformed"},
		{"decimal", []string{"1.0"}, 422, "malformed"},
		{"huge", []string{"9999999999999999999"}, 422, "too_large"},
		{"stale quoted", []string{`"7"`}, 412, ""},
		{"stale bare", []string{"2"}, 412, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.do(req{method: "POST", path: path, token: op, hdrs: map[string][]string{"If-Match": c.values}})
			p := checkProblem(t, c.status, "PF-ETAG", res)
			if c.diag != "" && (p.Diagnostics[0].Code != c.diag || p.Diagnostics[0].Parameter != "If-Match") {
				t.Fatalf("diagnostics %+v, want %s", p.Diagnostics, c.diag)
			}
			if c.status == 412 && res.header.Get("ETag") != `"1"` {
				t.Fatalf("412 without the current ETag")
			}
		})
	}
	// Current revision, quoted then bare.
	var p identity.Principal
	h.must(200, h.do(req{method: "POST", path: path, token: op, hdr: map[string]string{"If-Match": `"1"`}}), &p)
	if !p.Disabled || p.Revision != 2 {
		t.Fatalf("%+v", p)
	}
	h.must(200, h.do(req{method: "POST", path: "/admin/principals/" + id + "/enable", token: op, hdr: map[string]string{"If-Match": "2"}}), &p)
	if p.Disabled || p.Revision != 3 {
		t.Fatalf("%+v", p)
	}
}

func TestPagesAndCursors(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	T := h.ws.TenantID
	var created []string
	created = append(created, h.ws.ProjectID)
	for i := 0; i < 6; i++ {
		created = append(created, h.project(fmt.Sprintf("p%d", i)).ID)
	}
	sort.Strings(created)
	type page struct {
		Items      []identity.Project `json:"items"`
		NextCursor *string            `json:"next_cursor"`
	}
	list := func(query string) page {
		var p page
		h.must(200, h.get("/api/v1/tenants/"+T+"/projects"+query, op), &p)
		return p
	}
	// Default limit 50: everything on one page, next_cursor null.
	all := list("")
	is.Equal(len(all.Items), 7)
	is.True(all.NextCursor == nil)
	raw := h.get("/api/v1/tenants/"+T+"/projects", op)
	is.True(strings.Contains(string(raw.body), `"next_cursor":null`))
	// Walk pages of 2: stable id order, no duplicates, no gaps.
	var walked []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := "?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := list(q)
		for _, it := range p.Items {
			walked = append(walked, it.ID)
		}
		if p.NextCursor == nil {
			is.Equal(pages, 3)
			break
		}
		cursor = *p.NextCursor
	}
	is.Equal(walked, created)
	// limit bounds.
	is.Equal(len(list("?limit=1").Items), 1)
	is.Equal(len(list("?limit=100").Items), 7)
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=-1", "?limit=abc", "?limit=", "?limit=1.5", "?limit=1&limit=2", "?limit=%2B5"} {
		p := h.problem(422, "PF-VALIDATION", h.get("/api/v1/tenants/"+T+"/projects"+q, op))
		is.Equal(p.Diagnostics[0].Parameter, "limit")
	}
	// Cursor misuse: forged, truncated, empty, repeated, from another
	// collection, another tenant or other filters.
	first := list("?limit=2")
	cur := *first.NextCursor
	envCursor := func() string {
		for i := 0; i < 3; i++ {
			h.environment(h.ws.ProjectID, fmt.Sprintf("e%d", i))
		}
		var p page
		h.must(200, h.get("/api/v1/tenants/"+T+"/projects/"+h.ws.ProjectID+"/environments?limit=1", op), &p)
		return *p.NextCursor
	}()
	var t2 identity.Tenant
	h.must(201, h.post("/admin/tenants", h.owner, map[string]string{"name": "other", "admin_principal_id": h.ws.OperatorID}), &t2)
	for i := 0; i < 3; i++ {
		h.must(201, h.post("/api/v1/tenants/"+t2.ID+"/projects", op, map[string]string{"name": "x"}), nil)
	}
	var inT2 page
	h.must(200, h.get("/api/v1/tenants/"+t2.ID+"/projects?limit=1", op), &inT2)
	misuse := map[string]string{
		"forged":             "/api/v1/tenants/" + T + "/projects?cursor=" + "eyJhIjoiMDAwIn0.AAAAAAAAAAAAAAAAAAAAAA",
		"tampered":           "/api/v1/tenants/" + T + "/projects?cursor=" + cur[:len(cur)-2] + "AA",
		"truncated":          "/api/v1/tenants/" + T + "/projects?cursor=" + cur[:10],
		"empty":              "/api/v1/tenants/" + T + "/projects?cursor=",
		"repeated":           "/api/v1/tenants/" + T + "/projects?cursor=" + cur + "&cursor=" + cur,
		"other collection":   "/api/v1/tenants/" + T + "/projects?cursor=" + envCursor,
		"other tenant":       "/api/v1/tenants/" + T + "/projects?cursor=" + *inT2.NextCursor,
		"projects in env":    "/api/v1/tenants/" + T + "/projects/" + h.ws.ProjectID + "/environments?cursor=" + cur,
		"too long":           "/api/v1/tenants/" + T + "/projects?cursor=" + strings.Repeat("a", 3000),
		"not base64":         "/api/v1/tenants/" + T + "/projects?cursor=%21%21.%21%21",
		"cursor on t2 of t1": "/api/v1/tenants/" + t2.ID + "/projects?cursor=" + cur,
	}
	for name, path := range misuse {
		t.Run(name, func(t *testing.T) {
			p := checkProblem(t, 422, "PF-VALIDATION", h.get(path, op))
			if p.Diagnostics[0].Parameter != "cursor" && !(name == "repeated" && p.Diagnostics[0].Parameter == "cursor") {
				t.Fatalf("%+v", p.Diagnostics)
			}
		})
	}
	// Cursors are bound to filters: a cursor of one principal's grants is
	// refused for another principal or with include_revoked changed.
	for _, sub := range []string{"k1", "k2"} {
		id := h.link("human", sub)
		h.grant(id, h.localScope(), "viewer")
		h.grant(id, h.localScope(), "developer")
	}
	var gp struct {
		Items      []identity.Grant `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}
	var k1 identity.Identity
	h.must(200, h.get("/api/v1/identity", h.ext.token(t, "k1", nil)), &k1)
	h.must(200, h.get("/api/v1/tenants/"+T+"/grants?limit=1&principal_id="+k1.PrincipalID, op), &gp)
	gc := *gp.NextCursor
	h.must(200, h.get("/api/v1/tenants/"+T+"/grants?limit=1&principal_id="+k1.PrincipalID+"&cursor="+gc, op), &gp)
	is.Equal(len(gp.Items), 1)
	h.problem(422, "PF-VALIDATION", h.get("/api/v1/tenants/"+T+"/grants?limit=1&cursor="+gc, op))
	h.problem(422, "PF-VALIDATION", h.get("/api/v1/tenants/"+T+"/grants?limit=1&include_revoked=true&principal_id="+k1.PrincipalID+"&cursor="+gc, op))
	// The limit may change between pages; an unknown parameter may not appear.
	h.must(200, h.get("/api/v1/tenants/"+T+"/projects?limit=5&cursor="+cur, op), nil)
	p := h.problem(422, "PF-VALIDATION", h.get("/api/v1/tenants/"+T+"/projects?sort=name", op))
	is.Equal(p.Diagnostics[0].Parameter, "sort")
	// Cursors survive a restart (the key is sealed in the database).
	h.restart(true)
	h.must(200, h.get("/api/v1/tenants/"+T+"/projects?limit=2&cursor="+cur, op), nil)
}

func TestBodies(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	path := "/api/v1/tenants/" + h.ws.TenantID + "/projects"
	cases := []struct {
		name, body, diag, ptr string
		ctype                 string
	}{
		{name: "unknown field", body: `{"name":"a","colour":"red"}`, diag: "unknown_field", ptr: "/colour"},
		{name: "case-insensitive match refused", body: `{"Name":"a"}`, diag: "unknown_field", ptr: "/Name"},
		{name: "duplicate key", body: `{"name":"a","name":"b"}`, diag: "duplicate_key", ptr: "/name"},
		{name: "wrong type", body: `{"name":5}`, diag: "type", ptr: "/name"},
		{name: "null", body: `{"name":null}`, diag: "type", ptr: "/name"},
		{name: "missing", body: `{}`, diag: "required", ptr: "/name"},
		{name: "array body", body: `["a"]`, diag: "type", ptr: ""},
		{name: "trailing data", body: `{"name":"a"} {}`, diag: "trailing"},
		{name: "syntax", body: `{"name":`, diag: "syntax"},
		{name: "empty", body: ``, diag: "empty"},
		{name: "content type", body: `{"name":"a"}`, ctype: "text/plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := req{method: "POST", path: path, token: op, body: c.body}
			if c.body == "" {
				r.body = nil
			}
			if c.ctype != "" {
				r.hdr = map[string]string{"Content-Type": c.ctype}
			}
			p := checkProblem(t, 422, "PF-VALIDATION", h.do(r))
			if c.diag != "" && (p.Diagnostics[0].Code != c.diag || p.Diagnostics[0].Path != c.ptr) {
				t.Fatalf("diagnostics %+v, want %s at %q", p.Diagnostics, c.diag, c.ptr)
			}
		})
	}
	// Nested paths point into the structure.
	p := h.problem(422, "PF-VALIDATION", h.post("/admin/grants", op, `{"principal_id":"x","scope":{"tenant":1,"planet":"x"},"capabilities":["a",2]}`))
	var ptrs []string
	for _, d := range p.Diagnostics {
		ptrs = append(ptrs, d.Path)
	}
	slices.Sort(ptrs)
	is.Equal(ptrs, []string{"/capabilities/1", "/scope/planet", "/scope/tenant"})
	// Size: the configured limit (1 MiB by default) on both sides.
	name := strings.Repeat("a", 1<<20-len(`{"name":""}`))
	res := h.post(path, op, `{"name":"`+name+`"}`)
	p = h.problem(422, "PF-VALIDATION", res) // within the limit: only too long a name
	is.Equal(p.Diagnostics[0].Path, "/name")
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.post(path, op, `{"name":"`+name+`a"}`))
}

// TestBodyLimitConfigured: platform.api.max-body-bytes from the environment.
func TestBodyLimitConfigured(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withEnv("PLATFORM_API_MAX_BODY_BYTES", "1024"))
	path := "/api/v1/tenants/" + h.ws.TenantID + "/projects"
	pad := strings.Repeat(" ", 1024-len(`{"name":"ok"}`))
	h.must(201, h.post(path, h.localToken(), `{"name":"ok"}`+pad), nil)
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.post(path, h.localToken(), `{"name":"ok"}`+pad+" "))
}

func TestDocs(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, withEnv("PLATFORM_DOCS_ENABLED", "true"))
	res := h.get("/docs", "")
	is.Equal(res.status, 200)
	is.True(strings.Contains(res.header.Get("Content-Type"), "text/html"))
	is.True(strings.Contains(res.header.Get("Content-Security-Policy"), "default-src 'none'"))
	checkPlatformHeaders(t, res)
	for _, asset := range []string{"/docs/app.js", "/docs/app.css"} {
		is.Equal(h.get(asset, "").status, 200)
	}
	res = h.get("/docs/openapi.json", "")
	is.Equal(res.status, 200)
	var doc map[string]any
	is.NoErr(json.Unmarshal(res.body, &doc))
	is.Equal(doc["openapi"], "3.1.0")
	is.Equal(h.do(req{method: "HEAD", path: "/docs/openapi.json"}).status, 200)

	// The document lists exactly the routes the router serves (canonical,
	// compatibility and HEAD), plus the daemon's health probes.
	var want []string
	for _, rt := range h.svc.API().Routes() {
		for _, p := range []string{rt.CanonicalPath(), rt.Path} {
			if rt.Layout == api.Root && p != rt.CanonicalPath() {
				continue
			}
			want = append(want, rt.Method+" "+p)
			if rt.Method == "GET" {
				want = append(want, "HEAD "+p)
			}
		}
	}
	want = append(want, "GET /health/live", "HEAD /health/live", "GET /health/ready", "HEAD /health/ready")
	want = uniqueSorted(want)
	is.Equal(api.OperationKeys(doc), want)
	// And every documented operation is served (not 404 with a valid token).
	op := h.localToken()
	fill := strings.NewReplacer("{tenant}", h.ws.TenantID, "{project}", h.ws.ProjectID, "{environment}", h.ws.EnvironmentID,
		"{principal}", h.ws.OperatorID, "{grant}", "00000000-0000-4000-8000-000000000000")
	for _, k := range want {
		method, path, _ := strings.Cut(k, " ")
		res := h.do(req{method: method, path: fill.Replace(path), token: op, body: "{}"})
		if res.status == 404 {
			var p problem
			_ = json.Unmarshal(res.body, &p)
			if strings.Contains(p.Message, "no such route") {
				t.Fatalf("%s is documented but not served", k)
			}
		}
	}
}

func uniqueSorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
