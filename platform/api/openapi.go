package api

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Info heads the OpenAPI document.
type Info struct {
	Title       string
	Version     string
	Description string
}

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
// route: canonical paths, their compatibility twins (marked deprecated) and
// HEAD for every GET.
func (a *API) OpenAPI(info Info) map[string]any {
	s := newSchemaSet()
	problem := s.of(Problem{})
	paths := map[string]any{}
	all := append(a.Routes(), a.DescribedRoutes()...)
	for i := range all {
		rt := &all[i]
		for pi, p := range rt.paths() {
			compat := pi > 0
			item, _ := paths[p].(map[string]any)
			if item == nil {
				item = map[string]any{}
				paths[p] = item
			}
			item[strings.ToLower(rt.Method)] = operation(s, rt, problem, compat, false)
			if rt.Method == http.MethodGet {
				item["head"] = operation(s, rt, problem, compat, true)
			}
		}
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title": info.Title, "version": info.Version, "description": info.Description,
		},
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"servers":           []any{map[string]any{"url": "/"}},
		"paths":             paths,
		"components": map[string]any{
			"schemas": s.components,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "An access token (JWT, RS256 by default) of a configured identity provider, linked to an enabled principal."},
				"owner": map[string]any{"type": "http", "scheme": "bearer",
					"description": "The daemon owner token (owner.token in the data directory); accepted by the /admin routes only, as the built-in system principal."},
			},
		},
	}
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

func operation(s *schemaSet, rt *Route, problem map[string]any, compat, head bool) map[string]any {
	id := rt.OperationID
	if id == "" {
		id = strings.ToLower(rt.Method) + strings.NewReplacer("/", "_", "{", "", "}", "").Replace(rt.Path)
	}
	if head {
		id += "Head"
	}
	if compat {
		id += "Compat"
	}
	op := map[string]any{"operationId": id, "summary": rt.Summary}
	if head {
		op["summary"] = "Headers of: " + rt.Summary
	}
	desc := rt.Description
	if rt.Capability != "" {
		desc = strings.TrimSpace("Needs `" + string(rt.Capability) + "` in the scope of the path. " + desc)
		op["x-capability"] = string(rt.Capability)
	}
	if compat {
		desc = strings.TrimSpace("Compatibility route of `" + rt.CanonicalPath() + "`: same handler, no redirect. " + desc)
		op["deprecated"] = true
	}
	if desc != "" {
		op["description"] = desc
	}
	if rt.Tag != "" {
		op["tags"] = []any{rt.Tag}
	}
	switch rt.Access {
	case AccessPublic:
		op["security"] = []any{}
	case AccessOwnerOrToken:
		op["security"] = []any{map[string]any{"bearer": []any{}}, map[string]any{"owner": []any{}}}
	default:
		op["security"] = []any{map[string]any{"bearer": []any{}}}
	}
	var params []any
	for _, name := range pathParams(rt.Path) {
		sch := map[string]any{"type": "string"}
		if name != "adapter" && name != "collection" {
			sch["format"] = "uuid"
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": sch})
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
		params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": map[string]any{"type": typ}})
	}
	if rt.Idempotency != PolicyNone {
		params = append(params, map[string]any{"name": HeaderIdempotencyKey, "in": "header", "required": rt.Idempotency == PolicyRequired,
			"description": "1 to 200 characters; the same key and body return the committed result",
			"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKeyLen}})
	}
	if rt.IfMatch != PolicyNone {
		params = append(params, map[string]any{"name": "If-Match", "in": "header", "required": rt.IfMatch == PolicyRequired,
			"description": "the current revision, quoted (\"2\") or bare (2)",
			"schema":      map[string]any{"type": "string"}})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if rt.Request != nil && !head {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": s.of(rt.Request)}}}
	}
	headers := map[string]any{
		HeaderRequestID:   map[string]any{"description": "server-generated request id", "schema": map[string]any{"type": "string"}},
		HeaderWireVersion: map[string]any{"description": "always " + WireVersion, "schema": map[string]any{"type": "string"}},
	}
	if rt.ETag {
		headers["ETag"] = map[string]any{"description": "the revision, quoted", "schema": map[string]any{"type": "string"}}
	}
	ok := map[string]any{"description": "success", "headers": headers}
	if rt.Response != nil && !head {
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": s.of(rt.Response)}}
	}
	responses := map[string]any{strconv.Itoa(rt.successStatus()): ok}
	statuses := errorStatuses
	if rt.Access == AccessPublic {
		statuses = []int{404, 500}
	}
	if rt.Method == http.MethodGet && rt.Path == "/health/ready" {
		statuses = []int{503}
	}
	for _, st := range statuses {
		body := map[string]any{"description": http.StatusText(st), "headers": headers}
		if !head {
			body["content"] = map[string]any{"application/problem+json": map[string]any{"schema": problem}}
		}
		responses[strconv.Itoa(st)] = body
	}
	op["responses"] = responses
	return op
}

// OperationKeys lists "METHOD path" for every operation of a document built
// by OpenAPI, sorted (for tests that compare it with the router).
func OperationKeys(doc map[string]any) []string {
	var out []string
	paths, _ := doc["paths"].(map[string]any)
	for p, item := range paths {
		ops, _ := item.(map[string]any)
		for m := range ops {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}
