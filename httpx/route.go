package httpx

import (
	"net/http"
	"sync"

	"github.com/julienschmidt/httprouter"
)

// HandlerFunc serves one request: it writes its success response and
// returns its error, which the surface's ErrorEncoder writes.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// Route is one entry of a surface's route table: where it is served, how,
// and how it is documented. The surface registers the table and builds its
// OpenAPI document from the same values, so the two cannot drift apart.
type Route struct {
	Method string
	// Path is the OpenAPI path template ("/api/v1/things/{id}"); it is
	// served at the httprouter form of it.
	Path    string
	Handler HandlerFunc
	// Public routes skip the surface's Guard (documentation, ingestion).
	Public bool
	// Undocumented routes are served but left out of the document.
	Undocumented bool
	// Doc documents the route; its Method and Path are the route's.
	Doc Operation
}

// Surface serves route tables with one error encoder: the services
// listener's callbacks and ingest APIs, the bridge API.
type Surface struct {
	// Encode writes every error a handler or Guard returns.
	Encode ErrorEncoder
	// Guard, when set, runs before every non-public route's handler
	// (authentication, the headers of protected answers); its error is
	// encoded and the handler does not run.
	Guard func(w http.ResponseWriter, r *http.Request) error
}

// Handle returns the httprouter handle of rt.
func (s *Surface) Handle(rt Route) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if !rt.Public && s.Guard != nil {
			if err := s.Guard(w, r); err != nil {
				s.Encode(w, r, err)
				return
			}
		}
		if err := rt.Handler(w, r, p); err != nil {
			s.Encode(w, r, err)
		}
	}
}

// Register serves every route of routes on router.
func (s *Surface) Register(router *httprouter.Router, routes []Route) {
	for _, rt := range routes {
		router.Handle(rt.Method, RouterPath(rt.Path), s.Handle(rt))
	}
}

// AddRoutes documents the documented routes of a table.
func (o *OpenAPI) AddRoutes(routes []Route) {
	for _, rt := range routes {
		if rt.Undocumented {
			continue
		}
		op := rt.Doc
		op.Method, op.Path = rt.Method, rt.Path
		o.Add(op)
	}
}

// ServeDocument returns a handler of a document built once, on first use
// (after every route is registered), as indented JSON.
func ServeDocument(build func() map[string]any) http.HandlerFunc {
	doc := sync.OnceValue(func() []byte {
		data, err := MarshalDocument(build())
		if err != nil {
			return []byte("{}")
		}
		return data
	})
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(doc())
	}
}
