package callbacks

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// crud describes a resource with create, read, update, delete, list and
// filter, served the same way for authorized domains, configurations and
// subscriptions:
//
//	POST   {base}          create   201 + Location
//	GET    {base}          list     200 PaginationResponse (?page=&size=&cursor=)
//	POST   {base}/filter   filter   200 PaginationResponse
//	GET    {base}/{id}     read     200
//	PUT    {base}/{id}     update   200 (replaces the resource)
//	DELETE {base}/{id}     delete   204
type crud[In, Out any] struct {
	base, tag, what string // what: "authorized domain"
	create          func(ctx context.Context, in In) (Out, error)
	get             func(ctx context.Context, id string) (Out, error)
	update          func(ctx context.Context, id string, in In) (Out, error)
	del             func(ctx context.Context, id string) error
	filter          func(ctx context.Context, req FilterRequest) (*PaginationResponse[Out], error)
	idOf            func(Out) string
	createNotes     string // extra documentation of create and update
	createErrs      []int  // statuses beyond 400/401/413/415/422
}

func (c crud[In, Out]) routes() []httpx.Route {
	var in In
	var out Out
	var page PaginationResponse[Out]
	writeErrs := append([]int{400, 401, 413, 415, 422}, c.createErrs...)
	return []httpx.Route{
		route(http.MethodPost, c.base, httpx.ServeCreated(bodyOf[In](), c.create, c.location), operation{
			id: "create", tag: c.tag, summary: "Create a " + c.what, description: c.createNotes,
			body: in, status: http.StatusCreated, resp: out, errs: writeErrs}),
		route(http.MethodGet, c.base, httpx.Serve(queryOf(), c.filter, http.StatusOK), operation{
			id: "list", tag: c.tag, summary: "List " + c.what + "s, one page at a time",
			query: pageParams, status: http.StatusOK, resp: page, errs: []int{400, 401, 422}}),
		route(http.MethodPost, c.base+"/filter", httpx.Serve(bodyOf[FilterRequest](), c.filter, http.StatusOK), operation{
			id: "filter", tag: c.tag, summary: "Filter, sort and page " + c.what + "s",
			body: FilterRequest{}, status: http.StatusOK, resp: page, errs: []int{400, 401, 413, 415, 422}}),
		route(http.MethodGet, c.base+"/{id}", httpx.Serve(idOf(c.what), c.get, http.StatusOK), operation{
			id: "get", tag: c.tag, summary: "Read a " + c.what, status: http.StatusOK, resp: out, errs: []int{401, 404}}),
		route(http.MethodPut, c.base+"/{id}", c.handleUpdate, operation{
			id: "update", tag: c.tag, summary: "Replace a " + c.what, description: c.createNotes,
			body: in, status: http.StatusOK, resp: out, errs: append(writeErrs, 404)}),
		route(http.MethodDelete, c.base+"/{id}", c.handleDelete, operation{
			id: "delete", tag: c.tag, summary: "Delete a " + c.what, status: http.StatusNoContent, errs: []int{401, 404}}),
	}
}

// location is where a created resource is read.
func (c crud[In, Out]) location(out Out) string { return c.base + "/" + c.idOf(out) }

func (c crud[In, Out]) handleUpdate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, err := pathID(p, c.what)
	if err != nil {
		return err
	}
	in, err := decodeBody[In](w, r)
	if err != nil {
		return err
	}
	out, err := c.update(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (c crud[In, Out]) handleDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, err := pathID(p, c.what)
	if err != nil {
		return err
	}
	if err := c.del(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// routes is the service's route table.
func (s *Service) routes() []httpx.Route {
	var rs []httpx.Route
	rs = append(rs, s.domainCRUD().routes()...)
	rs = append(rs, s.configCRUD().routes()...)
	rs = append(rs, s.subCRUD().routes()...)
	rs = append(rs, s.executionRoutes()...)
	rs = append(rs, s.docRoutes()...)
	return rs
}
