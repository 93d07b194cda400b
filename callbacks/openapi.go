package callbacks

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// operation documents one route.
type operation struct {
	id, tag, summary, description string
	body                          any // request body type (zero value), nil for none
	status                        int // success status
	resp                          any // response body type, nil for none
	errs                          []int
	query                         []param
}

type param struct {
	name, doc string
	integer   bool
}

var pageParams = []param{
	{name: "page", doc: "0-based page number (default 0, at most 100000)", integer: true},
	{name: "size", doc: "items per page (1 to 500, default 20)", integer: true},
	{name: "cursor", doc: "nextCursor of the previous page (instead of page)"},
}

var errorText = map[int]string{
	400: "Malformed request: bad JSON, unknown field, wrong type, bad query parameter or cursor",
	401: "Missing or wrong owner token",
	404: "No such resource",
	409: "Conflict: duplicate, domain not authorized (CB-DOMAIN-NOT-AUTHORIZED), or a state that does not allow it",
	413: "Body larger than 64 KiB",
	415: "Body is not JSON",
	422: "A value outside its bounds; diagnostics lists each field",
}

// schemaStyle is how this document has always described types: a field
// is required unless omitempty, nullable values are anyOf, and a page is
// named after its items (ConfigurationPage).
var schemaStyle = httpx.SchemaStyle{
	RequiredUnlessOmitempty: true,
	NullableAnyOf:           true,
	DocBesideRef:            true,
	RawJSON:                 map[string]any{"description": "any JSON value"},
	Name:                    httpx.ArgPageName,
}

// document turns op, served at path, into the OpenAPI operation: every
// route needs the owner token and answers errors as problem+json.
func (op operation) document(path string) httpx.Operation {
	o := httpx.Operation{ID: op.tag + "." + op.id, Summary: op.summary, Description: op.description,
		Tags: []string{op.tag}, Security: []string{"ownerToken"}, Request: op.body}
	if strings.Contains(path, "{id}") {
		o.Params = append(o.Params, httpx.Param{Name: "id", In: "path", Schema: map[string]any{"type": "string", "format": "uuid"}})
	}
	for _, q := range op.query {
		sch := map[string]any{"type": "string"}
		if q.integer {
			sch = map[string]any{"type": "integer"}
		}
		o.Params = append(o.Params, httpx.Param{Name: q.name, In: "query", Description: q.doc, Schema: sch})
	}
	ok := httpx.Response{Status: httpx.Status(op.status), Description: http.StatusText(op.status)}
	if op.resp != nil {
		ok.Media, ok.Schema = "application/json", op.resp
	}
	o.Responses = []httpx.Response{ok}
	for _, code := range op.errs {
		o.Responses = append(o.Responses, httpx.Response{Status: httpx.Status(code), Description: errorText[code],
			Media: "application/problem+json", Schema: httpx.Problem{}})
	}
	return o
}

// route is one entry of the route table, documented by op.
func route(method, path string, h httpx.HandlerFunc, op operation) httpx.Route {
	return httpx.Route{Method: method, Path: path, Handler: h, Doc: op.document(path)}
}

// openAPI builds the OpenAPI 3.1 document of the route table with the
// toolkit's generator.
func openAPI(routes []httpx.Route) map[string]any {
	g := httpx.NewOpenAPI(schemaStyle)
	g.Schema(httpx.Problem{})
	g.Schema(FieldError{})
	g.AddRoutes(routes)
	return g.Build(httpx.Document{
		Info: httpx.Info{
			Title:   "Agent Bridge callback service",
			Version: "1.0.0",
			Description: "Outbound callbacks: authorized domains, callback configurations, event subscriptions and the " +
				"executions that record every delivery attempt. Every operation needs the daemon's owner token " +
				"(`Authorization: Bearer <contents of owner.token in the data directory>`). Errors are application/problem+json " +
				"with a CB- code. See callbacks/README.md for the signature scheme and the execution states.",
		},
		Servers:         []string{"/"},
		ListTags:        true,
		SecuritySchemes: httpx.OwnerTokenScheme(),
	})
}

// docRoutes serve the OpenAPI document and its offline UI (swagger.go).
func (s *Service) docRoutes() []httpx.Route {
	doc := httpx.ServeDocument(func() map[string]any { return openAPI(s.routes()) })
	serve := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		doc(w, r)
		return nil
	}
	return append([]httpx.Route{{Method: http.MethodGet, Path: pathAPIDocs, Public: true, Undocumented: true, Handler: serve}}, uiRoutes()...)
}
