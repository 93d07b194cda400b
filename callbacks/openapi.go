package callbacks

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
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

var pathParam = regexp.MustCompile(`:([a-zA-Z]+)`)

// openAPIPath turns an httprouter path into an OpenAPI one (:id -> {id}).
func openAPIPath(p string) string { return pathParam.ReplaceAllString(p, "{$1}") }

// openAPI builds the OpenAPI 3.1 document of routes.
func openAPI(routes []route) map[string]any {
	g := &schemaGen{defs: map[string]any{}}
	problem := g.of(reflect.TypeOf(httpx.Problem{}))
	g.of(reflect.TypeOf(FieldError{}))
	paths := map[string]any{}
	tags := map[string]bool{}
	for _, rt := range routes {
		if rt.public {
			continue
		}
		op := rt.op
		tags[op.tag] = true
		o := map[string]any{
			"operationId": op.tag + "." + op.id,
			"summary":     op.summary,
			"tags":        []any{op.tag},
			"security":    []any{map[string]any{"ownerToken": []any{}}},
		}
		if op.description != "" {
			o["description"] = op.description
		}
		var params []any
		if strings.Contains(rt.path, ":id") {
			params = append(params, map[string]any{"name": "id", "in": "path", "required": true,
				"schema": map[string]any{"type": "string", "format": "uuid"}})
		}
		for _, q := range op.query {
			sch := map[string]any{"type": "string"}
			if q.integer {
				sch = map[string]any{"type": "integer"}
			}
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": sch})
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.body != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": g.of(reflect.TypeOf(op.body))}}}
		}
		responses := map[string]any{}
		ok := map[string]any{"description": http.StatusText(op.status)}
		if op.resp != nil {
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.of(reflect.TypeOf(op.resp))}}
		}
		responses[strconv.Itoa(op.status)] = ok
		for _, code := range op.errs {
			responses[strconv.Itoa(code)] = map[string]any{
				"description": errorText[code],
				"content":     map[string]any{"application/problem+json": map[string]any{"schema": problem}},
			}
		}
		o["responses"] = responses
		path := openAPIPath(rt.path)
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[strings.ToLower(rt.method)] = o
	}
	var tagList []any
	names := make([]string, 0, len(tags))
	for t := range tags {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		tagList = append(tagList, map[string]any{"name": t})
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Agent Bridge callback service",
			"version": "1.0.0",
			"description": "Outbound callbacks: authorized domains, callback configurations, event subscriptions and the " +
				"executions that record every delivery attempt. Every operation needs the daemon's owner token " +
				"(`Authorization: Bearer <contents of owner.token in the data directory>`). Errors are application/problem+json " +
				"with a CB- code. See callbacks/README.md for the signature scheme and the execution states.",
		},
		"tags":    tagList,
		"paths":   paths,
		"servers": []any{map[string]any{"url": "/"}},
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				"ownerToken": map[string]any{"type": "http", "scheme": "bearer",
					"description": "The daemon's owner token, from owner.token in the data directory"},
			},
		},
	}
}

// docRoutes serve the OpenAPI document and its offline UI (swagger.go).
func (s *Service) docRoutes() []route {
	return append([]route{{method: http.MethodGet, path: pathAPIDocs, public: true, h: s.handleAPIDocs}}, uiRoutes()...)
}

func (s *Service) handleAPIDocs(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	s.docOnce.Do(func() {
		s.doc, _ = json.MarshalIndent(openAPI(s.routes()), "", "  ")
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(s.doc)
	return nil
}
