//go:build unix

package factory

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx"
)

type apiClient struct {
	t   *testing.T
	url string
}

func (h *harness) server(t *testing.T) *apiClient {
	r := httprouter.New()
	h.svc.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &apiClient{t: t, url: srv.URL}
}

// do sends a request with the owner token (unless token is "-") and
// returns the status, the content type and the body.
func (c *apiClient) do(method, path, body string, hdr ...string) (int, string, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ownerToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

type problem struct {
	Status      int    `json:"status"`
	Code        string `json:"code"`
	Message     string `json:"message"`
	Diagnostics []struct {
		Field string `json:"field"`
	} `json:"diagnostics"`
}

func (c *apiClient) problem(method, path, body string, hdr ...string) (int, problem) {
	c.t.Helper()
	status, ct, data := c.do(method, path, body, hdr...)
	if ct != "application/problem+json" {
		c.t.Fatalf("%s %s: %d %s %s, want a problem", method, path, status, ct, data)
	}
	var p problem
	if err := json.Unmarshal(data, &p); err != nil {
		c.t.Fatal(err)
	}
	return status, p
}

func TestHTTPRunLifecycle(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	c := h.server(t)
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	body, _ := json.Marshal(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "add a feature", Profile: "fake", Verify: []string{"test -f feature.txt"}})
	status, _, data := c.do("POST", "/api/v1/runs", string(body))
	is.Equal(status, http.StatusCreated)
	var run Run
	is.NoErr(json.Unmarshal(data, &run))
	is.Equal(run.State, StateQueued)
	h.wait(run.ID)

	status, _, data = c.do("GET", "/api/v1/runs/"+run.ID, "")
	is.Equal(status, http.StatusOK)
	var got map[string]any
	is.NoErr(json.Unmarshal(data, &got))
	is.Equal(got["state"], StateSucceeded)
	for _, k := range []string{"source_tree", "checkpoint_revision", "changed_files", "diff", "verification", "final_verification", "turns", "tasks", "journal"} {
		if _, ok := got[k]; !ok {
			t.Errorf("run lacks %q", k)
		}
	}

	status, _, data = c.do("GET", "/api/v1/runs/"+run.ID+"/plan", "")
	is.Equal(status, http.StatusOK)
	var plan Plan
	is.NoErr(json.Unmarshal(data, &plan))
	is.Equal(plan.Revision, 1)
	is.Equal(plan.Role, RoleImplementer)
	is.Equal(plan.Provider.Profile, "fake")
	is.Equal(plan.Checks[0].Name, "test -f feature.txt")
	is.Equal(len(plan.Tasks), 2)

	status, _, data = c.do("GET", "/api/v1/runs/"+run.ID+"/journal", "")
	is.Equal(status, http.StatusOK)
	var j JournalView
	is.NoErr(json.Unmarshal(data, &j))
	is.True(j.Valid)
	is.True(len(j.Entries) >= 8)

	status, _, data = c.do("GET", "/api/v1/runs/"+run.ID+"/worker-messages", "")
	is.Equal(status, http.StatusOK)
	is.Equal(strings.TrimSpace(string(data)), `{"run_id":"`+run.ID+`","messages":[]}`)

	status, ct, data := c.do("GET", "/api/v1/runs/"+run.ID+"/diff", "")
	is.Equal(status, http.StatusOK)
	is.True(strings.HasPrefix(ct, "text/x-diff"))
	is.True(strings.Contains(string(data), "+feature"))

	status, ct, data = c.do("GET", "/api/v1/runs/"+run.ID+"/artifacts/changes.zip", "")
	is.Equal(status, http.StatusOK)
	is.Equal(ct, "application/zip")
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	is.NoErr(err)
	is.Equal(len(zr.File), 2)

	// Finished: cannot be cancelled or reconciled, can be retried.
	st, p := c.problem("POST", "/api/v1/runs/"+run.ID+"/cancel", "")
	is.Equal(st, http.StatusConflict)
	is.Equal(p.Code, "FA-CONFLICT")
	st, p = c.problem("POST", "/api/v1/runs/"+run.ID+"/reconcile", `{"note":"x"}`)
	is.Equal(st, http.StatusConflict)
	st, p = c.problem("POST", "/api/v1/runs/"+run.ID+"/resume", "")
	is.Equal(st, http.StatusConflict)
	st, _ = c.problem("POST", "/api/v1/runs/"+run.ID+"/handoff", `{"profile":"fake"}`)
	is.Equal(st, http.StatusConflict)
	is.Equal(p.Code, "FA-CONFLICT")
	status, _, data = c.do("POST", "/api/v1/runs/"+run.ID+"/retry", "")
	is.Equal(status, http.StatusCreated)
	var retry Run
	is.NoErr(json.Unmarshal(data, &retry))
	is.Equal(retry.RetryOf, run.ID)
	h.wait(retry.ID)

	// List pages with a cursor bound to its filters.
	status, _, data = c.do("GET", "/api/v1/runs?limit=1", "")
	is.Equal(status, http.StatusOK)
	var page RunPage
	is.NoErr(json.Unmarshal(data, &page))
	is.Equal(len(page.Runs), 1)
	is.Equal(page.Runs[0].ID, retry.ID)
	is.True(page.NextCursor != "")
	status, _, data = c.do("GET", "/api/v1/runs?limit=1&cursor="+page.NextCursor, "")
	is.Equal(status, http.StatusOK)
	var page2 RunPage
	is.NoErr(json.Unmarshal(data, &page2))
	is.Equal(page2.Runs[0].ID, run.ID)
	is.Equal(page2.NextCursor, "")
	st, p = c.problem("GET", "/api/v1/runs?limit=1&state=failed&cursor="+page.NextCursor, "")
	is.Equal(st, http.StatusBadRequest)
	status, _, data = c.do("GET", "/api/v1/runs?state=failed", "")
	is.Equal(status, http.StatusOK)
	is.Equal(strings.TrimSpace(string(data)), `{"runs":[]}`)
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.server(t)
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	okBody := `{"repo":` + mustJSON(repo) + `,"mode":"test","verify":["true"]}`
	unknown := "/api/v1/runs/0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e"
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		code, field              string
	}{
		{"no token", "GET", "/api/v1/runs", "", []string{"Authorization", ""}, 401, "FA-UNAUTHORIZED", ""},
		{"wrong token", "GET", "/api/v1/runs", "", []string{"Authorization", "Bearer nope"}, 401, "FA-UNAUTHORIZED", ""},
		{"unknown field", "POST", "/api/v1/runs", `{"repo":"/x","mode":"test","branch":"main"}`, nil, 400, "FA-BAD-REQUEST", "branch"},
		{"duplicate key", "POST", "/api/v1/runs", `{"repo":"/x","mode":"test","mode":"build"}`, nil, 400, "FA-BAD-REQUEST", ""},
		{"bad utf8", "POST", "/api/v1/runs", "{\"repo\":\"\xff\",\"mode\":\"test\"}", nil, 400, "FA-BAD-REQUEST", ""},
		{"wrong type", "POST", "/api/v1/runs", `{"repo":"/x","mode":"test","repair_attempts":"2"}`, nil, 400, "FA-BAD-REQUEST", "repair_attempts"},
		{"trailing", "POST", "/api/v1/runs", okBody + `{}`, nil, 400, "FA-BAD-REQUEST", ""},
		{"empty body", "POST", "/api/v1/runs", "", nil, 400, "FA-BAD-REQUEST", ""},
		{"not json", "POST", "/api/v1/runs", okBody, []string{"Content-Type", "text/plain"}, 415, "FA-UNSUPPORTED-MEDIA-TYPE", ""},
		{"too large", "POST", "/api/v1/runs", `{"repo":"` + strings.Repeat("x", maxBodyBytes) + `"}`, nil, 413, "FA-TOO-LARGE", ""},
		{"invalid mode", "POST", "/api/v1/runs", `{"repo":` + mustJSON(repo) + `,"mode":"deploy"}`, nil, 422, "FA-VALIDATION", "mode"},
		{"relative repo", "POST", "/api/v1/runs", `{"repo":"repo","mode":"test"}`, nil, 422, "FA-VALIDATION", "repo"},
		{"unknown run", "GET", unknown, "", nil, 404, "FA-NOT-FOUND", ""},
		{"not a uuid", "GET", "/api/v1/runs/nope/plan", "", nil, 404, "FA-NOT-FOUND", ""},
		{"journal of unknown", "GET", unknown + "/journal", "", nil, 404, "FA-NOT-FOUND", ""},
		{"messages of unknown", "GET", unknown + "/worker-messages", "", nil, 404, "FA-NOT-FOUND", ""},
		{"zip of unknown", "GET", unknown + "/artifacts/changes.zip", "", nil, 404, "FA-NOT-FOUND", ""},
		{"cancel unknown", "POST", unknown + "/cancel", "", nil, 404, "FA-NOT-FOUND", ""},
		{"cancel with a body", "POST", unknown + "/cancel", `{"force":true}`, nil, 400, "FA-BAD-REQUEST", "force"},
		{"reconcile without note", "POST", unknown + "/reconcile", `{}`, nil, 422, "FA-VALIDATION", "note"},
		{"resume unknown", "POST", unknown + "/resume", "", nil, 404, "FA-NOT-FOUND", ""},
		{"answer without text", "POST", unknown + "/answer", `{}`, nil, 422, "FA-VALIDATION", "text"},
		{"answer unknown run", "POST", unknown + "/answer", `{"text":"blue"}`, nil, 404, "FA-NOT-FOUND", ""},
		{"handoff without profile", "POST", unknown + "/handoff", `{}`, nil, 422, "FA-VALIDATION", "profile"},
		{"handoff unknown field", "POST", unknown + "/handoff", `{"model":"x"}`, nil, 400, "FA-BAD-REQUEST", "model"},
		{"bad limit", "GET", "/api/v1/runs?limit=101", "", nil, 400, "FA-BAD-REQUEST", ""},
		{"bad state", "GET", "/api/v1/runs?state=done", "", nil, 400, "FA-BAD-REQUEST", ""},
		{"unknown query", "GET", "/api/v1/runs?sort=asc", "", nil, 400, "FA-BAD-REQUEST", ""},
		{"query on run", "GET", unknown + "?verbose=1", "", nil, 400, "FA-BAD-REQUEST", ""},
		{"forged cursor", "GET", "/api/v1/runs?cursor=abc.def", "", nil, 400, "FA-BAD-REQUEST", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			status, p := c.problem(tc.method, tc.path, tc.body, tc.hdr...)
			if status != tc.status || p.Code != tc.code || p.Status != tc.status {
				t.Fatalf("got %d %+v, want %d %s", status, p, tc.status, tc.code)
			}
			if tc.field != "" && (len(p.Diagnostics) == 0 || p.Diagnostics[0].Field != tc.field) {
				t.Fatalf("diagnostics %+v, want field %s", p.Diagnostics, tc.field)
			}
		})
	}
	// Nothing was created by the refused requests.
	c.t = t
	_, _, data := c.do("GET", "/api/v1/runs", "")
	if strings.TrimSpace(string(data)) != `{"runs":[]}` {
		t.Fatalf("runs were created: %s", data)
	}
}

// The OpenAPI document describes exactly the routes served, and is public.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	c := h.server(t)
	status, _, data := c.do("GET", DocPath, "", "Authorization", "")
	is.Equal(status, http.StatusOK)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	is.NoErr(json.Unmarshal(data, &doc))
	is.Equal(doc.OpenAPI, "3.1.0")
	var documented, served []string
	for p, ops := range doc.Paths {
		for m := range ops {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	for _, rt := range h.svc.routes() {
		if !rt.public {
			served = append(served, rt.method+" "+httpx.OpenAPIPath(rt.path))
		}
	}
	sort.Strings(documented)
	sort.Strings(served)
	is.Equal(documented, served)
	for _, want := range []string{"GET /api/v1/runs/{id}", "GET /api/v1/runs/{id}/plan", "GET /api/v1/runs/{id}/journal",
		"GET /api/v1/runs/{id}/worker-messages", "GET /api/v1/runs/{id}/artifacts/changes.zip"} {
		is.True(strings.Contains(strings.Join(served, "\n"), want))
	}
	// Platform tokens are documented on exactly the read routes, which are
	// the GET routes (docs/factory-api.md, "Access").
	for p, ops := range doc.Paths {
		for m, op := range ops {
			sec, _ := json.Marshal(op["security"])
			if got, want := strings.Contains(string(sec), "platformToken"), m == "get"; got != want {
				t.Errorf("%s %s security %s", m, p, sec)
			}
		}
	}
	// Every route answers something other than 501.
	for _, rt := range h.svc.routes() {
		path := strings.ReplaceAll(rt.path, ":id", "0192a0c4-7e1f-7b2d-9c3e-4f5a6b7c8d9e")
		status, _, _ := c.do(rt.method, path, "")
		is.True(status != http.StatusNotImplemented)
	}
}
