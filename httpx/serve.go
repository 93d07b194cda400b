package httpx

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Reader reads a route's typed request from an HTTP request: a JSON body,
// path parameters, a query. Its error is encoded by the surface.
type Reader[Req any] func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (Req, error)

// Serve is the handler of a route that reads its request, calls one typed
// service method and writes the result as JSON with status: the shape of
// a *_http.go handler (docs/architecture.md), written once.
func Serve[Req, Resp any](read Reader[Req], call func(context.Context, Req) (Resp, error), status int) HandlerFunc {
	return serve(read, call, status, nil)
}

// ServeCreated is Serve answering 201 Created with a Location header:
// location names the resource call created.
func ServeCreated[Req, Resp any](read Reader[Req], call func(context.Context, Req) (Resp, error), location func(Resp) string) HandlerFunc {
	return serve(read, call, http.StatusCreated, location)
}

func serve[Req, Resp any](read Reader[Req], call func(context.Context, Req) (Resp, error), status int, location func(Resp) string) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		req, err := read(w, r, p)
		if err != nil {
			return err
		}
		resp, err := call(r.Context(), req)
		if err != nil {
			return err
		}
		if location != nil {
			w.Header().Set("Location", location(resp))
		}
		WriteJSON(w, status, resp)
		return nil
	}
}

// JSONBody reads the request body strictly into a Req (DecodeJSON with o).
func JSONBody[Req any](o DecodeOptions) Reader[Req] {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (Req, error) {
		var req Req
		return req, DecodeJSON(w, r, &req, o)
	}
}
