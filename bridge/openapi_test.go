package bridge_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestOpenAPIMatchesRoutes fails when a route exists that the document
// lacks, or the reverse: every documented operation must answer something
// other than the router's 404/405.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit,control,workflows")
	doc := e.do("GET", "/v1/bridge/openapi.json", tok, nil).json(t)
	is.Equal(doc["openapi"], "3.1.0")
	is.Equal(doc["info"].(map[string]any)["version"], "0.2.8")
	paths := doc["paths"].(map[string]any)
	documented := map[string]bool{}
	for p, item := range paths {
		for method, op := range item.(map[string]any) {
			documented[strings.ToUpper(method)+" "+p] = true
			if op.(map[string]any)["summary"] == "" {
				t.Errorf("%s %s has no summary", method, p)
			}
		}
	}
	// Every documented operation is routed: it never answers "no such route".
	id := e.submit(tok, map[string]any{"prompt": "x"})
	e.waitState(tok, id, "succeeded")
	for op := range documented {
		method, p, _ := strings.Cut(op, " ")
		p = strings.ReplaceAll(p, "{id}", id)
		p = strings.ReplaceAll(p, "{tool}", "1")
		p = strings.ReplaceAll(p, "{client}", "nobody")
		if method == "GET" && p == "/v1/bridge/events" {
			continue // a stream; covered by the events tests
		}
		r := e.do(method, p, e.owner, nil)
		if r.Status == 404 && strings.Contains(string(r.Body), "no such route") {
			t.Errorf("%s is documented but not routed", op)
		}
	}
	// Every routed operation of the spec's table is documented.
	for _, op := range []string{
		"GET /v1/bridge/status", "GET /v1/bridge/jobs", "GET /v1/bridge/jobs/{id}", "GET /v1/bridge/jobs/{id}/audit",
		"GET /v1/bridge/jobs/{id}/tools", "GET /v1/bridge/jobs/{id}/tools/{tool}", "GET /v1/bridge/jobs/{id}/attempts",
		"POST /v1/bridge/jobs/{id}/pause", "POST /v1/bridge/jobs/{id}/resume", "POST /v1/bridge/jobs/{id}/cancel",
		"POST /v1/bridge/jobs/{id}/retry", "GET /v1/bridge/jobs/{id}/result", "GET /v1/bridge/jobs/{id}/messages",
		"POST /v1/bridge/jobs/{id}/messages", "GET /v1/bridge/events", "POST /v1/bridge/admin/tokens",
		"POST /v1/bridge/jobs", "POST /v1/chat/completions", "GET /v1/models",
	} {
		if !documented[op] {
			t.Errorf("%s is not documented", op)
		}
	}
	// And routes the document lacks answer as unknown.
	is.Equal(e.do("GET", "/v1/bridge/undocumented", tok, nil).Status, 404)
}

func TestBridgeListenerRefusesForeignHostAndOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read")
	r := e.do("GET", "/v1/bridge/status", tok, nil, "Origin", "https://evil.example")
	is.Equal(r.Status, 403)
	is.Equal(r.code(), "host_not_allowed")
	r = e.do("GET", "/v1/bridge/status", tok, nil, "Host", "rebind.example:8766")
	is.Equal(r.Status, 403)
	r = e.do("GET", "/v1/bridge/status", tok, nil, "Origin", strings.Replace(e.url, "127.0.0.1", "localhost", 1))
	is.Equal(r.Status, 200)
}

// TestOpenAPIDocumentBytes: the document GET /v1/bridge/openapi.json
// answers is byte for byte testdata/openapi.json, so that a refactoring
// of the route table (each route declares its own documentation,
// routes_http.go) cannot change it unnoticed. After an intended change of
// a route or a schema, write the new document with
// BRIDGE_UPDATE_OPENAPI=1 go test -run TestOpenAPIDocumentBytes ./bridge/
// and review the diff.
func TestOpenAPIDocumentBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read")
	r := e.do("GET", "/v1/bridge/openapi.json", tok, nil)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	golden := filepath.Join("testdata", "openapi.json")
	if os.Getenv("BRIDGE_UPDATE_OPENAPI") == "1" {
		if err := os.WriteFile(golden, r.Body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Body, want) {
		t.Errorf("the OpenAPI document differs from %s (%d bytes, want %d); see the test's comment to update it", golden, len(r.Body), len(want))
	}
}
