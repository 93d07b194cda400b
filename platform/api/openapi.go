package api

import (
	"net/http"
	"strings"

	"github.com/agentbridge/bridge/httpx"
)

// Info heads the OpenAPI document.
type Info = httpx.Info

// Describe documents a route served outside the toolkit (the daemon's
// health probes) so the OpenAPI document lists every platform route.
func (a *API) Describe(rt Route) {
	route := rt
	a.mu.Lock()
	a.described = append(a.described, &route)
	a.mu.Unlock()
}

// DescribedRoutes returns the routes recorded by Describe.
func (a *API) DescribedRoutes() []Route {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Route, len(a.described))
	for i, r := range a.described {
		out[i] = *r
	}
	return out
}

// errorStatuses are the problem statuses every authenticated operation can
// answer (docs/platform-api.md, "Endpoints").
var errorStatuses = []int{401, 403, 404, 409, 412, 413, 422, 500}

// OpenAPI builds the OpenAPI 3.1 document of every registered and described
// route with the shared generator (httpx.OpenAPI): canonical paths, their
// compatibility twins (marked deprecated) and HEAD for every GET.
func (a *API) OpenAPI(info Info) map[string]any {
	g := httpx.NewOpenAPI(httpx.SchemaStyle{})
	problem := g.Schema(Problem{})
	all := append(a.Routes(), a.DescribedRoutes()...)
	for i := range all {
		rt := &all[i]
		for pi, p := range rt.paths() {
			compat := pi > 0
			g.Add(operation(rt, p, problem, compat, false))
			if rt.Method == http.MethodGet {
				g.Add(operation(rt, p, problem, compat, true))
			}
		}
	}
	return g.Build(httpx.Document{
		Info:              info,
		Servers:           []string{"/"},
		JSONSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
		SecuritySchemes: map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
				"description": "An access token (JWT, RS256 by default) of a configured identity provider, linked to an enabled principal."},
			"owner": map[string]any{"type": "http", "scheme": "bearer",
				"description": "The daemon owner token (owner.token in the data directory); accepted by the /admin routes only, as the built-in system principal."},
		},
	})
}

// Problem documents the application/problem+json body that WriteError
// writes (docs/platform-api.md, "Common envelopes").
type Problem struct {
	Status      int          `json:"status" api:"required"`
	Code        string       `json:"code" api:"required" doc:"PF- error code"`
	Message     string       `json:"message" api:"required"`
	RequestID   string       `json:"request_id" api:"required" doc:"the X-Platform-Request-ID of the response"`
	Diagnostics []Diagnostic `json:"diagnostics" api:"required"`
	Result      any          `json:"result,omitempty"`
}

var stringSchema = map[string]any{"type": "string"}

// operation documents rt served at path (its canonical path, or its
// compatibility twin), or the HEAD of it.
func operation(rt *Route, path string, problem map[string]any, compat, head bool) httpx.Operation {
	id := rt.OperationID
	if id == "" {
		id = strings.ToLower(rt.Method) + strings.NewReplacer("/", "_", "{", "", "}", "").Replace(rt.Path)
	}
	op := httpx.Operation{Method: rt.Method, Path: path, Summary: rt.Summary, Deprecated: compat}
	if head {
		id += "Head"
		op.Method = http.MethodHead
		op.Summary = "Headers of: " + rt.Summary
	}
	if compat {
		id += "Compat"
	}
	op.ID = id
	desc := rt.Description
	if rt.Capability != "" {
		desc = strings.TrimSpace("Needs `" + string(rt.Capability) + "` in the scope of the path. " + desc)
		op.Extensions = map[string]any{"x-capability": string(rt.Capability)}
	}
	if compat {
		desc = strings.TrimSpace("Compatibility route of `" + rt.CanonicalPath() + "`: same handler, no redirect. " + desc)
	}
	op.Description = desc
	if rt.Tag != "" {
		op.Tags = []string{rt.Tag}
	}
	switch rt.Access {
	case AccessPublic:
		op.Security = []string{}
	case AccessOwnerOrToken:
		op.SecurityAny = []string{"bearer", "owner"}
	default:
		op.Security = []string{"bearer"}
	}
	for _, name := range pathParams(rt.Path) {
		sch := map[string]any{"type": "string"}
		if name != "adapter" && name != "collection" {
			sch["format"] = "uuid"
		}
		op.Params = append(op.Params, httpx.Param{Name: name, In: "path", Schema: sch})
	}
	queries := rt.Query
	if rt.Page {
		queries = append([]Param{
			{Name: "limit", Type: "integer", Description: "page size, 1 to 100 (default 50)"},
			{Name: "cursor", Type: "string", Description: "next_cursor of the previous page; valid only for the same list and filters"},
		}, queries...)
	}
	for _, q := range queries {
		typ := q.Type
		if typ == "" {
			typ = "string"
		}
		op.Params = append(op.Params, httpx.Param{Name: q.Name, In: "query", Description: q.Description, Schema: map[string]any{"type": typ}})
	}
	if rt.Idempotency != PolicyNone {
		op.Params = append(op.Params, httpx.Param{Name: HeaderIdempotencyKey, In: "header", Required: rt.Idempotency == PolicyRequired,
			Description: "1 to 200 characters; the same key and body return the committed result",
			Schema:      map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKeyLen}})
	}
	if rt.IfMatch != PolicyNone {
		op.Params = append(op.Params, httpx.Param{Name: "If-Match", In: "header", Required: rt.IfMatch == PolicyRequired,
			Description: "the current revision, quoted (\"2\") or bare (2)", Schema: stringSchema})
	}
	if !head {
		op.Request = rt.Request
	}
	headers := map[string]httpx.Header{
		HeaderRequestID:   {Description: "server-generated request id", Schema: stringSchema},
		HeaderWireVersion: {Description: "always " + WireVersion, Schema: stringSchema},
	}
	if rt.ETag {
		headers["ETag"] = httpx.Header{Description: "the revision, quoted", Schema: stringSchema}
	}
	ok := httpx.Response{Status: httpx.Status(rt.successStatus()), Description: "success", Headers: headers}
	if rt.Response != nil && !head {
		ok.Media, ok.Schema = "application/json", rt.Response
	}
	op.Responses = []httpx.Response{ok}
	statuses := errorStatuses
	if rt.Access == AccessPublic {
		statuses = []int{404, 500}
	}
	if rt.Method == http.MethodGet && rt.Path == "/health/ready" {
		statuses = []int{503}
	}
	for _, st := range statuses {
		resp := httpx.Response{Status: httpx.Status(st), Description: http.StatusText(st), Headers: headers}
		if !head {
			resp.Media, resp.Schema = "application/problem+json", problem
		}
		op.Responses = append(op.Responses, resp)
	}
	return op
}

// OperationKeys lists "METHOD path" for every operation of a document built
// by OpenAPI, sorted (for tests that compare it with the router).
func OperationKeys(doc map[string]any) []string { return httpx.OperationKeys(doc) }
