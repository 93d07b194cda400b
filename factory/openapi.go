package factory

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

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

// schemaStyle is how this document has always described types (loose
// objects, pointers as their values, durations as Go strings).
var schemaStyle = httpx.SchemaStyle{Loose: true, Types: map[reflect.Type]map[string]any{
	reflect.TypeFor[Duration]():        {"type": "string", "description": "a Go duration, e.g. 10m0s"},
	reflect.TypeFor[[]byte]():          {"description": "any JSON value"},
	reflect.TypeFor[json.RawMessage](): {"description": "any JSON value"},
}}

// openAPI builds the OpenAPI 3.1 document of routes with the toolkit's
// generator (httpx.OpenAPI).
func openAPI(routes []route) map[string]any {
	g := httpx.NewOpenAPI(schemaStyle)
	for _, rt := range routes {
		if rt.public {
			continue
		}
		op := rt.op
		path := httpx.OpenAPIPath(rt.path)
		o := httpx.Operation{Method: rt.method, Path: path, ID: op.id, Summary: op.summary, Description: op.description,
			Tags: []string{"factory"}, Security: []string{"ownerToken"}, Request: op.body}
		if rt.read {
			o.Security, o.SecurityAny = nil, []string{"ownerToken", "platformToken"}
		}
		if strings.Contains(path, "{id}") {
			o.Params = append(o.Params, httpx.Param{Name: "id", In: "path", Schema: map[string]any{"type": "string", "format": "uuid"}})
		}
		for _, q := range op.query {
			o.Params = append(o.Params, httpx.Param{Name: q.name, In: "query", Description: q.doc, Schema: map[string]any{"type": "string"}})
		}
		ok := httpx.Response{Status: httpx.Status(op.status), Description: http.StatusText(op.status)}
		switch {
		case op.resp != nil:
			ok.Media, ok.Schema = "application/json", op.resp
		case op.raw != "":
			ok.Media, ok.Schema = op.raw, map[string]any{"type": "string", "format": "binary"}
		}
		o.Responses = []httpx.Response{ok}
		for _, code := range op.errs {
			o.Responses = append(o.Responses, httpx.Response{Status: httpx.Status(code), Description: errorText[code],
				Media: "application/problem+json", Schema: httpx.Problem{}})
		}
		g.Add(o)
	}
	return g.Build(httpx.Document{
		Info: httpx.Info{Title: "Agent Bridge software factory", Version: "1.0.0",
			Description: "Build, maintenance and test runs of a coding agent against a local git repository (spec 3, Factory run inspection). See docs/factory-api.md."},
		SecuritySchemes: map[string]any{
			"ownerToken": map[string]any{"type": "http", "scheme": "bearer", "description": "the daemon's owner.token"},
			"platformToken": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
				"description": "a platform access token (docs/platform-api.md); reads only the runs of projects where the principal's current grants hold run.read (docs/factory-api.md, Access)"},
		},
	})
}
