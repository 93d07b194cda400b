package api

import (
	"embed"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/julienschmidt/httprouter"
)

// The documentation viewer is self-contained (embedded HTML, JS and CSS):
// it works offline and loads nothing from elsewhere.
//
//go:embed docsui/index.html docsui/app.js docsui/app.css
var docsFS embed.FS

// docsCSP lets the viewer load only its own files and call only this origin.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Paths of the interactive documentation.
const (
	DocsPath        = "/docs"
	DocsOpenAPIPath = "/docs/openapi.json"
)

// ServeDocs registers the interactive documentation at DocsPath and the
// OpenAPI document at DocsOpenAPIPath (public, GET and HEAD). The platform
// calls it only when PLATFORM_DOCS_ENABLED=true; otherwise those paths are
// unknown routes (404). The document is built once, after every route is
// registered.
func (a *API) ServeDocs(r *httprouter.Router, info Info) {
	doc := sync.OnceValue(func() []byte { return a.openAPIBytes(info) })
	openapi := func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(doc())
	}
	files := map[string]string{
		DocsPath:              "docsui/index.html",
		DocsPath + "/app.js":  "docsui/app.js",
		DocsPath + "/app.css": "docsui/app.css",
	}
	types := map[string]string{
		"docsui/index.html": "text/html; charset=utf-8",
		"docsui/app.js":     "text/javascript; charset=utf-8",
		"docsui/app.css":    "text/css; charset=utf-8",
	}
	for path, name := range files {
		h := func(w http.ResponseWriter, req *http.Request) {
			data, err := docsFS.ReadFile(name)
			if err != nil {
				WriteError(w, req, a.log, err)
				return
			}
			hd := w.Header()
			hd.Set("Content-Type", types[name])
			hd.Set("Content-Security-Policy", docsCSP)
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.Set("Referrer-Policy", "no-referrer")
			hd.Set("Cache-Control", "no-cache")
			_, _ = w.Write(data)
		}
		a.rawGET(r, path, h)
	}
	a.rawGET(r, DocsOpenAPIPath, openapi)
}

func (a *API) openAPIBytes(info Info) []byte {
	data, err := json.MarshalIndent(a.OpenAPI(info), "", "  ")
	if err != nil {
		return []byte("{}")
	}
	return data
}

// rawGET registers a public GET (and HEAD) handler with the platform headers.
func (a *API) rawGET(r *httprouter.Router, path string, h http.HandlerFunc) {
	handle := func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) {
		if req.Method == http.MethodHead {
			w = headWriter{w}
		}
		WithPlatformHeaders(h).ServeHTTP(w, req)
	}
	r.GET(path, handle)
	r.HEAD(path, handle)
}
