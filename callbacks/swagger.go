package callbacks

import (
	"net/http"
	"sort"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/httpx/docsui"
)

// pathSwaggerAssets holds the UI's files (Swagger UI, embedded by docsui).
const pathSwaggerAssets = "/swagger-ui/"

// uiRoutes serve Swagger UI at /swagger-ui.html (callbacks/README.md), showing this
// service's document first and offering the daemon's others (docsui).
func uiRoutes() []httpx.Route {
	ui, err := docsui.New(pathSwaggerUI, pathSwaggerAssets, docsui.Documents("callbacks"))
	if err != nil {
		return nil // fixed, valid arguments: cannot happen
	}
	handlers := ui.Handlers()
	paths := make([]string, 0, len(handlers))
	for p := range handlers {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	routes := make([]httpx.Route, 0, 2*len(paths))
	for _, p := range paths {
		h := handlers[p]
		serve := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			h.ServeHTTP(w, r)
			return nil
		}
		routes = append(routes, httpx.Route{Method: http.MethodGet, Path: p, Public: true, Undocumented: true, Handler: serve},
			httpx.Route{Method: http.MethodHead, Path: p, Public: true, Undocumented: true, Handler: serve})
	}
	return routes
}
