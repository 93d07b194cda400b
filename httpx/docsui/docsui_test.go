package docsui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// sampleDoc is a small OpenAPI document with two operations.
const sampleDoc = `{"openapi":"3.1.0","info":{"title":"Sample API","version":"1"},"servers":[{"url":"/"}],
"paths":{"/api/v1/things":{"get":{"operationId":"listThings","summary":"List the sample things","responses":{"200":{"description":"ok"}}},
"post":{"operationId":"makeThing","summary":"Make a sample thing","responses":{"201":{"description":"made"}}}}}}`

// serveUI serves a UI at /swagger-ui.html offering the sample document and
// one that does not answer.
func serveUI(t *testing.T) *httptest.Server {
	t.Helper()
	ui, err := New("/swagger-ui.html", "/swagger-ui/", []Doc{
		{ID: "sample", Title: "Sample", URL: "/v3/api-docs"},
		{ID: "gone", Title: "Gone", URL: "/docs/openapi.json"},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for p, h := range ui.Handlers() {
		mux.Handle(p, h)
	}
	mux.Handle("/v3/api-docs", JSON(func() ([]byte, error) { return []byte(sampleDoc), nil }))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// external matches anything that would load from another origin: src/href,
// CSS url() and @import, fetch() of an absolute or protocol-relative URL.
var external = regexp.MustCompile(`(?i)((src|href)\s*=\s*["']?|url\(\s*["']?|@import\s*["']?|fetch\(\s*["'\x60])(https?:)?//`)

func TestPageAndAssetsAreServedWithCSP(t *testing.T) {
	is := is.New(t)
	srv := serveUI(t)
	for path, ctype := range map[string]string{
		"/swagger-ui.html":                             "text/html; charset=utf-8",
		"/swagger-ui/swagger-ui-bundle.js":             "text/javascript; charset=utf-8",
		"/swagger-ui/swagger-ui.css":                   "text/css; charset=utf-8",
		"/swagger-ui/app.js":                           "text/javascript; charset=utf-8",
		"/swagger-ui/app.css":                          "text/css; charset=utf-8",
		"/swagger-ui/LICENSE":                          "text/plain; charset=utf-8",
		"/swagger-ui/NOTICE":                           "text/plain; charset=utf-8",
		"/swagger-ui/swagger-ui-bundle.js.LICENSE.txt": "text/plain; charset=utf-8",
	} {
		resp, body := get(t, http.MethodGet, srv.URL+path)
		is.Equal(resp.StatusCode, 200)
		is.Equal(resp.Header.Get("Content-Type"), ctype)
		is.Equal(resp.Header.Get("Content-Security-Policy"), CSP)
		is.Equal(resp.Header.Get("X-Content-Type-Options"), "nosniff")
		is.True(len(body) > 10)
		// Unchanged files are not sent again.
		again, _ := get(t, http.MethodGet, srv.URL+path, "If-None-Match", resp.Header.Get("ETag"))
		is.Equal(again.StatusCode, http.StatusNotModified)
		head, hb := get(t, http.MethodHead, srv.URL+path)
		is.Equal(head.StatusCode, 200)
		is.Equal(len(hb), 0)
	}
	// The vendored Swagger UI is the real one, with its licence.
	_, bundle := get(t, http.MethodGet, srv.URL+"/swagger-ui/swagger-ui-bundle.js")
	is.True(bytes.Contains(bundle, []byte("SwaggerUIBundle")))
	_, license := get(t, http.MethodGet, srv.URL+"/swagger-ui/LICENSE")
	is.True(bytes.Contains(license, []byte("Apache License")))
	resp, _ := get(t, http.MethodGet, srv.URL+"/swagger-ui/missing.js")
	is.Equal(resp.StatusCode, 404)
}

func TestPageLoadsOnlyItsOwnFiles(t *testing.T) {
	is := is.New(t)
	srv := serveUI(t)
	_, page := get(t, http.MethodGet, srv.URL+"/swagger-ui.html")
	_, js := get(t, http.MethodGet, srv.URL+"/swagger-ui/app.js")
	_, css := get(t, http.MethodGet, srv.URL+"/swagger-ui/app.css")
	for name, body := range map[string][]byte{"page": page, "app.js": js, "app.css": css} {
		if m := external.Find(body); m != nil {
			t.Errorf("%s references %s", name, m)
		}
	}
	// No inline script or style: a strict CSP (script-src 'self') runs it.
	for _, tag := range regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`).FindAll(page, -1) {
		is.True(regexp.MustCompile(`^<script src="/swagger-ui/[a-z.-]+"></script>$`).Match(tag))
	}
	is.True(!bytes.Contains(page, []byte("<style")))
	is.True(!bytes.Contains(page, []byte("style=")))
	is.True(bytes.Contains(page, []byte(`src="/swagger-ui/swagger-ui-bundle.js"`)))
	is.True(bytes.Contains(page, []byte(`href="/swagger-ui/swagger-ui.css"`)))
	// The documents travel in a data attribute, escaped.
	m := regexp.MustCompile(`data-docs="([^"]*)"`).FindSubmatch(page)
	is.True(m != nil)
	var docs []Doc
	is.NoErr(json.Unmarshal([]byte(strings.ReplaceAll(string(m[1]), "&#34;", `"`)), &docs))
	is.Equal(docs[0], Doc{ID: "sample", Title: "Sample", URL: "/v3/api-docs"})
	// The validator badge would call validator.swagger.io.
	is.True(bytes.Contains(js, []byte("validatorUrl: null")))
}

func TestDocumentsPutsThePrimaryFirst(t *testing.T) {
	is := is.New(t)
	ids := func(docs []Doc) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out
	}
	is.Equal(ids(Documents("callbacks")), []string{"callbacks", "platform", "bridge", "factory", "ingest"})
	is.Equal(ids(Documents("platform")), []string{"platform", "callbacks", "bridge", "factory", "ingest"})
	is.Equal(ids(Documents("bridge")), []string{"bridge", "callbacks", "platform", "factory", "ingest"})
	is.Equal(ids(Documents("factory")), []string{"factory", "callbacks", "platform", "bridge", "ingest"})
	is.Equal(ids(Documents("ingest")), []string{"ingest", "callbacks", "platform", "bridge", "factory"})
	is.Equal(ids(Documents("nothing")), []string{"callbacks", "platform", "bridge", "factory", "ingest"})
	is.Equal(Documents("bridge")[0].URL, BridgeDocURL)
	is.Equal(len(Documents("platform")), len(documents())) // the reorder does not lose or repeat one
}

func TestNewRefusesBadArguments(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct{ page, assets string }{{"docs", "/docs/"}, {"/docs", "/docs"}, {"/docs", "docs/"}} {
		_, err := New(c.page, c.assets, Documents(""))
		is.True(err != nil)
	}
	_, err := New("/docs", "/docs/", nil)
	is.True(err != nil)
}

func TestJSONServesTheDocumentOnce(t *testing.T) {
	is := is.New(t)
	calls := 0
	h := JSON(func() ([]byte, error) { calls++; return []byte(`{"openapi":"3.1.0"}`), nil })
	for i := 0; i < 3; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v3/api-docs/bridge", nil))
		is.Equal(rec.Code, 200)
		is.Equal(rec.Header().Get("Content-Type"), "application/json")
		is.Equal(rec.Body.String(), `{"openapi":"3.1.0"}`)
	}
	is.Equal(calls, 1)
	failing := JSON(func() ([]byte, error) { return nil, io.ErrUnexpectedEOF })
	rec := httptest.NewRecorder()
	failing.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v3/api-docs/bridge", nil))
	is.Equal(rec.Code, 500)
	is.Equal(rec.Header().Get("Content-Type"), "application/problem+json")
}

// TestSwaggerUIRendersOffline loads the page in headless Chromium (when
// installed) with every name but loopback unresolvable and checks that
// Swagger UI rendered the document's operations under the page's CSP.
func TestSwaggerUIRendersOffline(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium installed")
	}
	srv := serveUI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--virtual-time-budget=15000", "--dump-dom", srv.URL+"/swagger-ui.html")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v: %s", err, stderr.String())
	}
	for _, want := range []string{"List the sample things", "Make a sample thing", `<option value="sample">Sample</option>`} {
		if !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	// The document that does not answer is not offered.
	if bytes.Contains(dom, []byte(`value="gone"`)) {
		t.Error("a missing document is offered")
	}
}
