package api_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

const (
	tenantA = "0190a000-0000-7000-8000-00000000000a"
	tenantB = "0190a000-0000-7000-8000-00000000000b"
)

// fakeAuth knows two tokens: "alice" (tenant_admin of tenant A) and
// "disabled".
type fakeAuth struct{}

func (fakeAuth) Authenticate(r *http.Request, acceptOwner bool) (*api.Caller, error) {
	tok, err := auth.BearerToken(r)
	if err != nil {
		return nil, api.Unauthenticated(string(auth.ReasonOf(err)))
	}
	p := auth.Principal{ID: "0190a000-0000-7000-8000-0000000000a1", Kind: auth.KindHuman}
	switch tok {
	case "alice":
		return &api.Caller{Principal: p, Grants: []auth.Grant{{ID: "g1", PrincipalID: p.ID, Scope: auth.Scope{Tenant: tenantA}, Role: auth.RoleTenantAdmin}}}, nil
	case "bob":
		p.ID = "0190a000-0000-7000-8000-0000000000b1"
		return &api.Caller{Principal: p, Grants: []auth.Grant{{ID: "g2", PrincipalID: p.ID, Scope: auth.Scope{Tenant: tenantA}, Role: auth.RoleTenantAdmin}}}, nil
	case "owner":
		if acceptOwner {
			return &api.Caller{Principal: p, Owner: true}, nil
		}
	case "disabled":
		p.Disabled = true
		return &api.Caller{Principal: p}, api.Forbidden("disabled")
	}
	return nil, api.Unauthenticated("token_malformed")
}

type recorder struct {
	mu sync.Mutex
	ds []api.Decision
}

func (r *recorder) Record(d api.Decision) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

func (r *recorder) all() []api.Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.Decision(nil), r.ds...)
}

type thing struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type env struct {
	a    *api.API
	db   *store.DB
	srv  *httptest.Server
	rec  *recorder
	logs *bytes.Buffer
}

// newEnv starts the test API; mods adjust its options (clock, retention).
func newEnv(t testing.TB, mods ...func(*api.Options)) *env {
	t.Helper()
	return newEnvAt(t, filepath.Join(t.TempDir(), "t.db"), mods...)
}

// thingsMigration is the test API's own table.
var thingsMigration = store.Migration{Version: 900, Name: "0900_things",
	SQL: `CREATE TABLE things (id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, name TEXT NOT NULL)`}

// newEnvAt is newEnv on the database at path (created, or migrated).
func newEnvAt(t testing.TB, path string, mods ...func(*api.Options)) *env {
	t.Helper()
	migs := append(platform.Migrations(), thingsMigration)
	if _, err := store.Migrate(context.Background(), path, migs); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), path, migs, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{db: db, rec: &recorder{}, logs: &bytes.Buffer{}}
	opts := api.Options{DB: db, Authenticator: fakeAuth{}, Auditor: e.rec, Cursors: httpx.NewCursors([]byte("0123456789abcdef0123456789abcdef")),
		Logger: slog.New(slog.NewTextHandler(e.logs, nil)), MaxBodyBytes: 4096}
	for _, m := range mods {
		m(&opts)
	}
	e.a = api.New(opts)
	r := httprouter.New()
	e.a.Handle(r, api.Route{Method: "POST", Path: "/tenants/{tenant}/things", Capability: auth.CapDefinitionPublish,
		Idempotency: api.PolicyRequired, Status: 201, Request: struct {
			Name string `json:"name" api:"required"`
		}{}, Response: thing{}, Handler: func(c *api.Call) error {
			var body struct {
				Name string `json:"name" api:"required"`
			}
			if err := c.Decode(&body); err != nil {
				return err
			}
			return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
				res, err := tx.Exec(`INSERT INTO things(tenant, name) VALUES (?, ?)`, c.Params.ByName("tenant"), body.Name)
				if err != nil {
					return nil, err
				}
				id, _ := res.LastInsertId()
				return &api.Result{Body: thing{ID: id, Name: body.Name}, Revision: 1}, nil
			}, nil)
		}})
	e.a.Handle(r, api.Route{Method: "GET", Path: "/tenants/{tenant}/things", Capability: auth.CapCatalogRead, Page: true,
		Query: []api.Param{{Name: "name"}}, Response: api.Page[thing]{}, Handler: func(c *api.Call) error {
			name, err := c.Query("name")
			if err != nil {
				return err
			}
			q, err := c.PageQuery("things", map[string]string{"name": name})
			if err != nil {
				return err
			}
			rows, err := db.Reader().Query(`SELECT id, name FROM things WHERE tenant = ? AND printf('%020d', id) > ? AND (? = '' OR name = ?) ORDER BY id LIMIT ?`,
				c.Params.ByName("tenant"), q.After, name, name, q.Fetch())
			if err != nil {
				return err
			}
			defer rows.Close()
			var out []thing
			for rows.Next() {
				var th thing
				if err := rows.Scan(&th.ID, &th.Name); err != nil {
					return err
				}
				out = append(out, th)
			}
			page, err := api.MakePage(q, out, func(th thing) string { return padID(th.ID) })
			if err != nil {
				return err
			}
			return c.OK(page)
		}})
	e.a.Handle(r, api.Route{Method: "PUT", Path: "/tenants/{tenant}/things/{thing}", Capability: auth.CapDefinitionWrite, IfMatch: api.PolicyRequired,
		Handler: func(c *api.Call) error {
			if err := api.CheckRevision(c.IfMatch(), 3); err != nil {
				return err
			}
			return c.JSON(200, map[string]int64{"revision": c.IfMatch()})
		}})
	e.a.Handle(r, api.Route{Method: "GET", Path: "/boom", Access: api.AccessPublic, Handler: func(c *api.Call) error {
		return errors.New("database exploded at brg_secret-token-value")
	}})

	e.a.Handle(r, api.Route{Method: "GET", Path: "/unready", Access: api.AccessPublic, Handler: func(c *api.Call) error {
		return api.Errorf(api.CodeUnavailable, "not ready")
	}})
	e.a.Handle(r, api.Route{Method: "GET", Path: "/admin/things", Layout: api.Root, Access: api.AccessOwnerOrToken, Handler: func(c *api.Call) error {
		return c.OK(map[string]bool{"owner": c.Caller.Owner})
	}})
	r.NotFound = e.a.NotFound(nil)
	e.srv = httptest.NewServer(r)
	t.Cleanup(e.srv.Close)
	return e
}

// padID makes integer ids sort as strings (cursor positions are strings).
func padID(id int64) string { return fmt.Sprintf("%020d", id) }

type result struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) call(t *testing.T, method, path, token, body string, hdr map[string][]string) result {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, _ := http.NewRequest(method, e.srv.URL+path, rd)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		r.Header[k] = v
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return result{res.StatusCode, res.Header, data}
}

func problemCode(t *testing.T, r result) string {
	t.Helper()
	var p struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("not a problem: %s", r.body)
	}
	if p.RequestID == "" || p.RequestID != r.header.Get(api.HeaderRequestID) {
		t.Fatalf("request id %q / %q", p.RequestID, r.header.Get(api.HeaderRequestID))
	}
	return p.Code
}

func key(k string) map[string][]string { return map[string][]string{"Idempotency-Key": {k}} }

func TestOrderOfChecks(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	// 401 first, even with a malformed scope id and a missing key.
	r := e.call(t, "POST", "/api/v1/tenants/nope/things", "", `{}`, nil)
	is.Equal(r.status, 401)
	is.Equal(r.header.Get("WWW-Authenticate"), "Bearer")
	// Then 404 for a malformed scope id.
	r = e.call(t, "POST", "/api/v1/tenants/nope/things", "alice", `{}`, nil)
	is.Equal(r.status, 404)
	// Then 403 for the declared capability.
	r = e.call(t, "POST", "/api/v1/tenants/"+tenantB+"/things", "alice", `{}`, nil)
	is.Equal(r.status, 403)
	is.Equal(problemCode(t, r), "PF-FORBIDDEN")
	// Then 422 for the required key, then the body.
	r = e.call(t, "POST", "/api/v1/tenants/"+tenantA+"/things", "alice", `{"name":"x"}`, nil)
	is.Equal(r.status, 422)
	is.Equal(problemCode(t, r), "PF-IDEMPOTENCY")
	r = e.call(t, "POST", "/api/v1/tenants/"+tenantA+"/things", "alice", `{}`, key("k"))
	is.Equal(r.status, 422)
	is.Equal(problemCode(t, r), "PF-VALIDATION")
	// A disabled principal is refused and audited with its id.
	r = e.call(t, "POST", "/api/v1/tenants/"+tenantA+"/things", "disabled", `{}`, nil)
	is.Equal(r.status, 403)
	ds := e.rec.all()
	last := ds[len(ds)-1]
	is.Equal(last.Action, api.ActionAuthenticate)
	is.True(!last.Allowed)
	is.True(last.PrincipalID != "")
	// Every decision carries the request id of its response.
	for _, d := range ds {
		is.Equal(len(d.RequestID), 32)
		is.Equal(d.Method, "POST")
	}
}

func TestRequiredIdempotencyConcurrent(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path := "/api/v1/tenants/" + tenantA + "/things"
	var wg sync.WaitGroup
	results := make([]result, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.call(t, "POST", path, "alice", `{"name":"one"}`, key("same"))
		}()
	}
	wg.Wait()
	replays := 0
	for _, r := range results {
		is.Equal(r.status, 201)
		is.Equal(string(r.body), string(results[0].body))
		is.Equal(r.header.Get("ETag"), `"1"`)
		if r.header.Get(api.HeaderReplayed) == "true" {
			replays++
		}
	}
	is.Equal(replays, len(results)-1)
	var n int
	is.NoErr(e.db.Reader().QueryRow(`SELECT count(*) FROM things`).Scan(&n))
	is.Equal(n, 1)
	// Another principal with the same key gets its own result.
	r := e.call(t, "POST", path, "bob", `{"name":"one"}`, key("same"))
	is.Equal(r.status, 201)
	is.Equal(r.header.Get(api.HeaderReplayed), "")
	r = e.call(t, "POST", path, "alice", `{"name":"two"}`, key("same"))
	is.Equal(r.status, 409)
	is.Equal(problemCode(t, r), "PF-IDEMPOTENCY-CONFLICT")
}

func TestIfMatchRequired(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path := "/api/v1/tenants/" + tenantA + "/things/x"
	r := e.call(t, "PUT", path, "alice", "", nil)
	is.Equal(r.status, 422)
	is.Equal(problemCode(t, r), "PF-ETAG")
	r = e.call(t, "PUT", path, "alice", "", map[string][]string{"If-Match": {`"2"`}})
	is.Equal(r.status, 412)
	is.Equal(r.header.Get("ETag"), `"3"`)
	r = e.call(t, "PUT", path, "alice", "", map[string][]string{"If-Match": {`3`}})
	is.Equal(r.status, 200)
}

func TestPagesWithFilters(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	for i, n := range []string{"a", "b", "a", "a", "c"} {
		r := e.call(t, "POST", "/api/v1/tenants/"+tenantA+"/things", "alice", `{"name":"`+n+`"}`, key(fmt.Sprint(i)))
		is.Equal(r.status, 201)
	}
	var p api.Page[thing]
	r := e.call(t, "GET", "/api/v1/tenants/"+tenantA+"/things?limit=1&name=a", "alice", "", nil)
	is.Equal(r.status, 200)
	is.NoErr(json.Unmarshal(r.body, &p))
	is.Equal(len(p.Items), 1)
	cur := *p.NextCursor
	r = e.call(t, "GET", "/api/v1/tenants/"+tenantA+"/things?limit=5&name=a&cursor="+cur, "alice", "", nil)
	is.Equal(r.status, 200)
	is.NoErr(json.Unmarshal(r.body, &p))
	is.Equal(len(p.Items), 2)
	is.True(p.NextCursor == nil)
	for _, q := range []string{"?name=b&cursor=" + cur, "?cursor=" + cur} {
		r = e.call(t, "GET", "/api/v1/tenants/"+tenantA+"/things"+q, "alice", "", nil)
		is.Equal(r.status, 422)
	}
	// Compatibility path shares the binding (same tenant, collection, filters).
	r = e.call(t, "GET", "/tenants/"+tenantA+"/things?name=a&cursor="+cur, "alice", "", nil)
	is.Equal(r.status, 200)
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	r := e.call(t, "GET", "/api/v1/boom", "", "", nil)
	is.Equal(r.status, 500)
	is.Equal(problemCode(t, r), "PF-INTERNAL")
	is.True(!bytes.Contains(r.body, []byte("exploded")))
	is.True(!bytes.Contains(r.body, []byte("brg_")))
	is.True(strings.Contains(e.logs.String(), r.header.Get(api.HeaderRequestID)))
}

// Only the server's own failures are logged at ERROR: a client's bad
// request is DEBUG, a deliberate 5xx answer WARN.
func TestClientErrorsAreNotLoggedAsErrors(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	r := e.call(t, "POST", "/api/v1/tenants/"+tenantA+"/things", "alice", `{"name":"a","name":"b"}`, key("log-1"))
	is.Equal(r.status, 422)
	r = e.call(t, "GET", "/api/v1/tenants/"+tenantA+"/things?limit=0", "alice", "", nil)
	is.Equal(r.status, 422)
	r = e.call(t, "GET", "/api/v1/tenants/"+tenantA+"/things", "", "", nil)
	is.Equal(r.status, 401)
	is.Equal(e.logs.String(), "") // DEBUG is below the handler's level
	r = e.call(t, "GET", "/api/v1/unready", "", "", nil)
	is.Equal(r.status, 503)
	is.True(strings.Contains(e.logs.String(), "level=WARN"))
	is.True(!strings.Contains(e.logs.String(), "level=ERROR"))
	r = e.call(t, "GET", "/api/v1/boom", "", "", nil)
	is.Equal(r.status, 500)
	is.True(strings.Contains(e.logs.String(), "level=ERROR"))
}

func TestOwnerOnlyWhereDeclared(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	r := e.call(t, "GET", "/admin/things", "owner", "", nil)
	is.Equal(r.status, 200)
	is.Equal(string(r.body), "{\"owner\":true}\n")
	r = e.call(t, "GET", "/api/v1/tenants/"+tenantA+"/things", "owner", "", nil)
	is.Equal(r.status, 401)
	// Root layout: no /api/v1 twin.
	r = e.call(t, "GET", "/api/v1/admin/things", "alice", "", nil)
	is.Equal(r.status, 404)
}

func TestNotFoundChain(t *testing.T) {
	is := is.New(t)
	a := api.New(api.Options{Authenticator: fakeAuth{}})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := a.NotFound(next)
	for path, want := range map[string]int{"/api/v1/x": 401, "/tenants/x": 401, "/admin/x": 401, "/other": 418, "/docs": 404, "/docs/x": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		is.Equal(rec.Code, want)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/v1/x", nil)
	r.Header.Set("Authorization", "Bearer alice")
	h.ServeHTTP(rec, r)
	is.Equal(rec.Code, 404)
	is.Equal(rec.Header().Get(api.HeaderWireVersion), api.WireVersion)
}

func TestMalformedRoutesPanic(t *testing.T) {
	for name, rt := range map[string]api.Route{
		"no handler":         {Method: "GET", Path: "/x"},
		"relative":           {Method: "GET", Path: "x", Handler: func(*api.Call) error { return nil }},
		"prefixed":           {Method: "GET", Path: "/api/v1/x", Handler: func(*api.Call) error { return nil }},
		"unknown capability": {Method: "GET", Path: "/x", Capability: "fly", Handler: func(*api.Call) error { return nil }},
		"public capability":  {Method: "GET", Path: "/x", Access: api.AccessPublic, Capability: auth.CapRunRead, Handler: func(*api.Call) error { return nil }},
		"public idempotent":  {Method: "POST", Path: "/x", Access: api.AccessPublic, Idempotency: api.PolicyOptional, Handler: func(*api.Call) error { return nil }},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			api.New(api.Options{}).Handle(httprouter.New(), rt)
		})
	}
}
