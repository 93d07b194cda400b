package factory

import (
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// operation documents one route.
type operation struct {
	id, summary, description string
	body                     any    // request body type (zero value), nil for none
	status                   int    // success status
	resp                     any    // JSON response type, nil for none
	raw                      string // media type of a non-JSON response
	errs                     []int
	query                    []param
}

type param struct{ name, doc string }

var errorText = map[int]string{
	400: "Malformed request: bad JSON, unknown field, wrong type, bad query parameter or cursor (FA-BAD-REQUEST)",
	401: "Missing or wrong owner token, or a platform token that is forged, expired or not linked to a principal (FA-UNAUTHORIZED)",
	403: "A platform principal on a route that changes runs, or a disabled principal (FA-FORBIDDEN)",
	404: "No such run, or no such artifact (FA-NOT-FOUND)",
	409: "The run's state does not allow it (FA-CONFLICT), or its diff exceeds 1 MB (FA-DIFF-TOO-LARGE)",
	413: "Body larger than 64 KiB (FA-TOO-LARGE)",
	415: "Body is not JSON (FA-UNSUPPORTED-MEDIA-TYPE)",
	422: "A value outside its bounds; diagnostics names the field (FA-VALIDATION)",
}

func (s *Service) handleDoc(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	s.docOnce.Do(func() { s.doc = openAPI(s.routes()) })
	httpx.WriteJSON(w, http.StatusOK, s.doc)
	return nil
}

var pathParam = regexp.MustCompile(`:([a-zA-Z]+)`)

// openAPI builds the OpenAPI 3.1 document of routes.
func openAPI(routes []route) map[string]any {
	g := &schemas{defs: map[string]any{}}
	problem := g.of(reflect.TypeOf(httpx.Problem{}))
	paths := map[string]any{}
	for _, rt := range routes {
		if rt.public {
			continue
		}
		op := rt.op
		o := map[string]any{
			"operationId": op.id, "summary": op.summary, "tags": []any{"factory"},
			"security": []any{map[string]any{"ownerToken": []any{}}},
		}
		if rt.read {
			o["security"] = []any{map[string]any{"ownerToken": []any{}}, map[string]any{"platformToken": []any{}}}
		}
		if op.description != "" {
			o["description"] = op.description
		}
		var params []any
		if strings.Contains(rt.path, ":id") {
			params = append(params, map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}})
		}
		for _, q := range op.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.body != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": g.of(reflect.TypeOf(op.body))}}}
		}
		ok := map[string]any{"description": http.StatusText(op.status)}
		switch {
		case op.resp != nil:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.of(reflect.TypeOf(op.resp))}}
		case op.raw != "":
			ok["content"] = map[string]any{op.raw: map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
		}
		responses := map[string]any{strconv.Itoa(op.status): ok}
		for _, code := range op.errs {
			responses[strconv.Itoa(code)] = map[string]any{"description": errorText[code], "content": map[string]any{"application/problem+json": map[string]any{"schema": problem}}}
		}
		o["responses"] = responses
		p := pathParam.ReplaceAllString(rt.path, "{$1}")
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		item[strings.ToLower(rt.method)] = o
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Agent Bridge software factory", "version": "1.0.0",
			"description": "Build, maintenance and test runs of a coding agent against a local git repository (spec 3, Factory run inspection). See docs/factory-api.md."},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				"ownerToken": map[string]any{"type": "http", "scheme": "bearer", "description": "the daemon's owner.token"},
				"platformToken": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "a platform access token (docs/platform-api.md); reads only the runs of projects where the principal's current grants hold run.read (docs/factory-api.md, Access)"},
			},
		},
	}
}

// schemas derives JSON Schemas from Go types through their json tags.
type schemas struct{ defs map[string]any }

var timeType = reflect.TypeOf(time.Time{})

func (g *schemas) of(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == reflect.TypeOf(Duration(0)):
		return map[string]any{"type": "string", "description": "a Go duration, e.g. 10m0s"}
	case t == reflect.TypeOf([]byte(nil)) || t.Name() == "RawMessage":
		return map[string]any{"description": "any JSON value"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		ref := map[string]any{"$ref": "#/components/schemas/" + t.Name()}
		if _, ok := g.defs[t.Name()]; ok {
			return ref
		}
		g.defs[t.Name()] = map[string]any{} // breaks recursion
		props := map[string]any{}
		g.fields(t, props)
		g.defs[t.Name()] = map[string]any{"type": "object", "properties": props}
		return ref
	}
	return map[string]any{}
}

func (g *schemas) fields(t reflect.Type, props map[string]any) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			g.fields(f.Type, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.of(f.Type)
	}
}
