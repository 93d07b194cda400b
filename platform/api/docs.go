package api

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx/docsui"
)

// Paths of the interactive documentation.
const (
	DocsPath        = "/docs"
	DocsOpenAPIPath = docsui.PlatformDocURL
)

// ServeDocs registers the interactive documentation at DocsPath (Swagger UI
// from httpx/docsui, this document first; its files under /docs/) and the
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
	ui, err := docsui.New(DocsPath, DocsPath+"/", docsui.Documents("platform"))
	if err == nil { // fixed, valid arguments: cannot fail
		for path, h := range ui.Handlers() {
			a.rawGET(r, path, h.ServeHTTP)
		}
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
