package callbacks

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/httpx/docsui"
)

func fetchDoc(t *testing.T, h *harness) map[string]any {
	t.Helper()
	resp, err := http.Get(h.srv.URL + pathAPIDocs) // public: no token
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("api-docs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIMatchesRoutes: every documented operation is routed, and every
// registered API route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	doc := fetchDoc(t, h)
	is.Equal(doc["openapi"], "3.1.0")

	documented := map[string]bool{}
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	// What Routes actually registers on a router.
	router := httprouter.New()
	var registered []string
	rec := &recordingRouter{Router: router, seen: &registered}
	for _, rt := range h.svc.routes() {
		rec.Handle(rt.Method, httpx.RouterPath(rt.Path), nil)
		if !rt.Public {
			key := rt.Method + " " + rt.Path
			if !documented[key] {
				t.Errorf("route %s is not documented", key)
			}
			delete(documented, key)
		}
	}
	for key := range documented {
		t.Errorf("documented %s has no route", key)
	}
	// And each documented path answers on the real server (not 404/405 of the router).
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			url := strings.Replace(path, "{id}", uuid.NewString(), 1)
			req, _ := http.NewRequest(strings.ToUpper(method), h.srv.URL+url, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			is.NoErr(err)
			resp.Body.Close()
			is.Equal(resp.StatusCode, 401) // our handler answered, not the router
		}
	}
	is.True(len(registered) > 20)
}

type recordingRouter struct {
	*httprouter.Router
	seen *[]string
}

func (r *recordingRouter) Handle(method, path string, _ httprouter.Handle) {
	*r.seen = append(*r.seen, method+" "+path)
}

// TestResponsesMatchTheirSchemas validates real answers of every resource
// against the document's (closed) schemas, so the document cannot miss or
// invent a field.
func TestResponsesMatchTheirSchemas(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	raw, err := json.Marshal(fetchDoc(t, h))
	is.NoErr(err)
	docAny, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	is.NoErr(err)
	c := jsonschema.NewCompiler()
	is.NoErr(c.AddResource("https://bridge.local/api-docs.json", docAny))
	schema := func(name string) *jsonschema.Schema {
		s, err := c.Compile("https://bridge.local/api-docs.json#/components/schemas/" + name)
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		return s
	}
	is.True(schema("Configuration").Validate(map[string]any{"id": "x"}) != nil)                         // required fields
	is.True(schema("FieldError").Validate(map[string]any{"field": "a", "message": "b", "x": 1}) != nil) // closed objects
	check := func(name string, body []byte) {
		t.Helper()
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		is.NoErr(err)
		if err := schema(name).Validate(v); err != nil {
			t.Errorf("%s does not match its schema: %v\n%s", name, err, body)
		}
	}

	rc := newReceiver(t, func(n int, _ *http.Request) (int, http.Header, string) {
		if n == 1 {
			return 500, nil, "first fails"
		}
		return 200, nil, "ok"
	})
	check("AuthorizedDomain", h.must(201, "POST", pathDomains, map[string]any{"domain": "127.0.0.1"}, nil))
	cfgBody := h.must(201, "POST", pathConfigs, map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x"},
		"signatureEnabled": true, "secret": testSecret, "maxRetries": 1}, nil)
	check("Configuration", cfgBody)
	var cfg Configuration
	is.NoErr(json.Unmarshal(cfgBody, &cfg))
	check("EventSubscription", h.must(201, "POST", pathSubscriptions, map[string]any{"name": "s", "topicOrQueue": "t"}, nil))
	check("AuthorizedDomainPage", h.must(200, "GET", pathDomains, nil, nil))
	check("ConfigurationPage", h.must(200, "POST", pathConfigs+"/filter", FilterRequest{}, nil))
	check("EventSubscriptionPage", h.must(200, "GET", pathSubscriptions, nil, nil))

	h.publish("t", "x", "", `{"hello":"world"}`)
	waitFor(t, 15*time.Second, "two attempts", func() bool {
		ex := h.executions()
		return len(ex) == 2 && ex[1].State == StateSucceeded
	})
	check("ExecutionPage", h.must(200, "GET", pathExecutions+"?size=1", nil, nil))
	for _, e := range h.executions() {
		check("Execution", h.must(200, "GET", pathExecutions+"/"+e.ID, nil, nil))
	}
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	check("ReplayResult", h.must(202, "POST", pathExecutions+"/replay", map[string]any{"since": since}, nil))
	_, _, prob := h.call("POST", pathConfigs, map[string]any{"name": ""}, nil)
	check("Problem", prob)

	// Inputs: the documented bounds agree with the validation, on both sides.
	long := strings.Repeat("n", 201)
	in := map[string]any{"name": long, "url": rc.URL, "subscribedEventTypes": []string{"x"}}
	data, _ := json.Marshal(in)
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	is.True(schema("ConfigurationInput").Validate(v) != nil)
	in["name"] = long[:200]
	data, _ = json.Marshal(in)
	v, _ = jsonschema.UnmarshalJSON(bytes.NewReader(data))
	is.NoErr(schema("ConfigurationInput").Validate(v))
}

// TestSwaggerUIServesThisDocumentFirst: /swagger-ui.html is the daemon's
// Swagger UI (httpx/docsui, tested there) offering this service's document
// first; its page and assets are public and carry the UI's CSP.
func TestSwaggerUIServesThisDocumentFirst(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, nil)
	resp, err := http.Get(h.srv.URL + pathSwaggerUI)
	is.NoErr(err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200)
	is.Equal(resp.Header.Get("Content-Type"), "text/html; charset=utf-8")
	is.Equal(resp.Header.Get("Content-Security-Policy"), docsui.CSP)
	is.True(bytes.Contains(page, []byte(`src="/swagger-ui/swagger-ui-bundle.js"`)))
	is.True(bytes.Contains(page, []byte(`data-docs="[{&#34;id&#34;:&#34;callbacks&#34;,&#34;title&#34;:&#34;Callbacks (spec 3)&#34;,&#34;url&#34;:&#34;/v3/api-docs&#34;}`)))
	for _, asset := range []string{"swagger-ui-bundle.js", "swagger-ui.css", "app.js", "app.css", "LICENSE"} {
		resp, err := http.Get(h.srv.URL + pathSwaggerAssets + asset)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, 200)
		is.Equal(resp.Header.Get("Content-Security-Policy"), docsui.CSP)
	}
	var public []string
	for _, rt := range h.svc.routes() {
		if rt.Public && rt.Method == http.MethodGet {
			public = append(public, rt.Path)
		}
	}
	sort.Strings(public)
	is.Equal(public, []string{"/swagger-ui.html", "/swagger-ui/LICENSE", "/swagger-ui/NOTICE", "/swagger-ui/app.css", "/swagger-ui/app.js",
		"/swagger-ui/swagger-ui-bundle.js", "/swagger-ui/swagger-ui-bundle.js.LICENSE.txt", "/swagger-ui/swagger-ui.css", "/v3/api-docs"})
	is.Equal(pathAPIDocs, docsui.CallbacksDocURL)
	// Swagger UI renders descriptions as Markdown, dropping a bare <tag>:
	// angle brackets stand only in code spans.
	desc := fetchDoc(t, h)["info"].(map[string]any)["description"].(string)
	is.True(!strings.Contains(regexp.MustCompile("`[^`]*`").ReplaceAllString(desc, ""), "<"))
}
