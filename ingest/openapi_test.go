package ingest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/httpx/docsui"
)

func fetchIngestDoc(t *testing.T, h *harness) []byte {
	t.Helper()
	resp := h.do(http.MethodGet, PathAPIDocs, nil) // public: no token
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("api-docs: %d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	return body
}

// TestOpenAPIMatchesRoutes: the document is served without a token where
// the UI looks for it, every documented operation is routed to the
// surface's handlers, and every documented route is in the document.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	is.Equal(PathAPIDocs, docsui.IngestDocURL)
	var doc map[string]any
	is.NoErr(json.Unmarshal(fetchIngestDoc(t, h), &doc))
	is.Equal(doc["openapi"], "3.1.0")
	head := h.do(http.MethodHead, PathAPIDocs, nil)
	head.Body.Close()
	is.Equal(head.StatusCode, 200)

	documented := map[string]bool{}
	for _, k := range httpx.OperationKeys(doc) {
		documented[k] = true
	}
	for _, rt := range h.svc.routes() {
		key := rt.Method + " " + rt.Path
		if rt.Undocumented {
			is.True(!documented[key])
			continue
		}
		is.True(documented[key]) // a documented route is in the document
		delete(documented, key)
	}
	is.Equal(len(documented), 0) // and nothing else is

	for _, k := range httpx.OperationKeys(doc) {
		method, path, _ := strings.Cut(k, " ")
		path = strings.NewReplacer("{provider}", "p0", "{event_id}", uuid.NewString()).Replace(path)
		resp := h.do(method, path, nil)
		resp.Body.Close()
		want := http.StatusUnauthorized // the surface's guard answered, not the router
		if strings.HasPrefix(path, "/api/v1/webhook/") {
			want = http.StatusUnsupportedMediaType // public: the handler refused the request (no Content-Type)
		}
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", k, resp.StatusCode, want)
		}
	}
}

// TestResponsesMatchTheirSchemas validates real answers against the
// document's closed schemas, so the document cannot miss or invent a field.
func TestResponsesMatchTheirSchemas(t *testing.T) {
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	docAny, err := jsonschema.UnmarshalJSON(bytes.NewReader(fetchIngestDoc(t, h)))
	is.NoErr(err)
	c := jsonschema.NewCompiler()
	is.NoErr(c.AddResource("https://bridge.local/ingest.json", docAny))
	check := func(name string, body []byte) {
		t.Helper()
		s, err := c.Compile("https://bridge.local/ingest.json#/components/schemas/" + name)
		is.NoErr(err)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		is.NoErr(err)
		if err := s.Validate(v); err != nil {
			t.Errorf("%s does not match its schema: %v\n%s", name, err, body)
		}
	}
	read := func(resp *http.Response, status int) []byte {
		t.Helper()
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		is.NoErr(err)
		is.Equal(resp.StatusCode, status)
		return body
	}
	auth := []string{"Authorization", "Bearer " + testOwnerToken}

	check("Ack", read(h.post("p0", []byte(`{"a":1}`), "Content-Type", jsonCT), http.StatusAccepted))
	refused := read(h.post("p0", nil, "Content-Type", jsonCT), http.StatusBadRequest) // dead-lettered
	check("Problem", refused)
	var p struct {
		EventID string `json:"event_id"`
	}
	var page Page[DLQEntry]
	waitFor(t, "a dead letter", func() bool {
		is.NoErr(json.Unmarshal(read(h.do(http.MethodGet, pathDLQ, nil, auth...), 200), &page))
		return len(page.Items) == 1
	})
	check("PageDLQEntry", read(h.do(http.MethodGet, pathDLQ, nil, auth...), 200))
	p.EventID = page.Items[0].EventID
	check("DLQEntry", read(h.do(http.MethodGet, "/api/v1/webhook-dlq/"+p.EventID, nil, auth...), 200))
	check("PageRecord", read(h.do(http.MethodGet, pathEvents, nil, auth...), 200))
	check("Problem", read(h.do(http.MethodGet, pathEvents+"?limit=0", nil, auth...), 400))
}
