package wire_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx/docsui"
)

// TestAPIDocsOnTheServicesListener: the daemon's services listener serves
// Swagger UI at /swagger-ui.html and /docs (when enabled), and all three
// OpenAPI documents the UI offers, without a token; the bridge's copy is the
// bridge listener's own document naming the bridge listener as its server.
func TestAPIDocsOnTheServicesListener(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newDaemonEnv(t, "platform:\n  docs:\n    enabled: true\n")
	for page, assets := range map[string]string{"/swagger-ui.html": "/swagger-ui/", "/docs": "/docs/"} {
		r := e.do("GET", e.services+page, "", nil)
		is.Equal(r.status, 200)
		is.Equal(r.header.Get("Content-Security-Policy"), docsui.CSP)
		is.True(strings.Contains(string(r.body), `src="`+assets+`swagger-ui-bundle.js"`))
		for _, asset := range []string{"swagger-ui-bundle.js", "swagger-ui.css", "app.js", "app.css"} {
			a := e.do("GET", e.services+assets+asset, "", nil)
			is.Equal(a.status, 200)
			is.Equal(a.header.Get("Content-Security-Policy"), docsui.CSP)
		}
	}
	for _, d := range docsui.Documents("") {
		r := e.do("GET", e.services+d.URL, "", nil)
		is.Equal(r.status, 200) // every document the UI offers answers
		is.Equal(r.json(t)["openapi"], "3.1.0")
	}
	tok := e.token("reader", "read")
	own := e.do("GET", e.bridge+"/v1/bridge/openapi.json", tok, nil).json(t)
	copied := e.do("GET", e.services+docsui.BridgeDocURL, "", nil).json(t)
	is.True(reflect.DeepEqual(own["paths"], copied["paths"]))
	is.True(reflect.DeepEqual(own["components"], copied["components"]))
	servers, _ := json.Marshal(copied["servers"])
	is.True(strings.Contains(string(servers), `"url":"`+e.bridge+`"`))
	// The bridge listener itself serves no UI and no unauthenticated document.
	is.Equal(e.do("GET", e.bridge+"/v1/bridge/openapi.json", "", nil).status, 401)
	is.Equal(e.do("GET", e.bridge+"/swagger-ui.html", tok, nil).status, 404)
}
