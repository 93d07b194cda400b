package httpx

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// This file is the one OpenAPI 3.1 generator of every surface (platform,
// callbacks, ingest, bridge). A surface turns its route table into
// Operations (what each route is, in OpenAPI terms) and gets the document
// from them; the body schemas are derived from the Go types the handlers
// decode and encode (schema.go), so the document cannot drift from what is
// served.

// Operation documents one method of one path.
type Operation struct {
	Method string // GET, POST, ... (HEAD too)
	// Path is the OpenAPI path template: "/api/v1/things/{id}".
	Path        string
	ID          string // operationId; "" leaves it out
	Summary     string
	Description string
	Tags        []string
	Deprecated  bool
	// Security lists the accepted schemes; nil leaves the member out, an
	// empty non-nil list documents a public operation ("security": []).
	Security []string
	// SecurityAny lists alternative schemes, each on its own ("owner or
	// bearer"); used instead of Security when set.
	SecurityAny []string
	Params      []Param
	// Request is the request body: a Go value whose type is documented
	// (nil: no body) or a literal schema (map[string]any).
	Request any
	// RequestMedia is the request body's media type (application/json).
	RequestMedia string
	Responses    []Response
	// Extensions are "x-..." members (x-capability, x-access).
	Extensions map[string]any
}

// Param documents a path, query or header parameter.
type Param struct {
	Name string
	In   string // "path", "query" or "header"
	// Description is left out when "".
	Description string
	// Required is always written for path and header parameters, and for
	// the others when true or when ShowRequired is set.
	Required     bool
	ShowRequired bool
	// Schema is a Go value whose type is documented or a literal schema.
	Schema any
}

// Response documents one status ("200", "404", "default").
type Response struct {
	Status      string
	Description string
	// Headers are response headers by name; nil leaves the member out.
	Headers map[string]Header
	// Media is the body's media type ("application/json",
	// "application/problem+json"); "" documents no body.
	Media string
	// Schema is a Go value whose type is documented or a literal schema;
	// nil with a Media documents a body of that type without a schema.
	Schema any
}

// Header documents a response header.
type Header struct {
	Description string
	Schema      any
}

// Status is the response key of an HTTP status ("201").
func Status(code int) string { return strconv.Itoa(code) }

// Info heads a document.
type Info struct {
	Title       string
	Version     string
	Description string
}

// Document is the frame of an OpenAPI document: everything but the paths
// and the derived schemas.
type Document struct {
	Info Info
	// Servers are the server URLs ("/"); none leaves the member out.
	Servers []string
	// JSONSchemaDialect is written when set.
	JSONSchemaDialect string
	// ListTags writes the top-level tags: the operations' tags, sorted.
	ListTags bool
	// SecuritySchemes are components/securitySchemes, by name.
	SecuritySchemes map[string]any
	// Schemas are literal components/schemas added to the derived ones.
	Schemas map[string]any
}

// OwnerTokenScheme is the security scheme "ownerToken" of the services
// listener's documents whose routes need the daemon's owner token.
func OwnerTokenScheme() map[string]any {
	return map[string]any{"ownerToken": map[string]any{"type": "http", "scheme": "bearer",
		"description": "The daemon's owner token, from owner.token in the data directory"}}
}

// OpenAPI builds one document: schemas are derived as operations are added.
// It is not safe for concurrent use; build a document once and keep it.
type OpenAPI struct {
	schemas *Schemas
	paths   map[string]any
	tags    map[string]bool
}

// NewOpenAPI starts a document whose schemas follow style.
func NewOpenAPI(style SchemaStyle) *OpenAPI {
	return &OpenAPI{schemas: NewSchemas(style), paths: map[string]any{}, tags: map[string]bool{}}
}

// Schema returns the schema of v (a Go value or a literal schema),
// registering named struct types as components.
func (o *OpenAPI) Schema(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return o.schemas.Of(v)
}

// Add documents op; a later operation with the same method and path
// replaces an earlier one.
func (o *OpenAPI) Add(op Operation) {
	item, _ := o.paths[op.Path].(map[string]any)
	if item == nil {
		item = map[string]any{}
		o.paths[op.Path] = item
	}
	for _, t := range op.Tags {
		o.tags[t] = true
	}
	item[strings.ToLower(op.Method)] = o.operation(op)
}

func (o *OpenAPI) operation(op Operation) map[string]any {
	out := map[string]any{"summary": op.Summary}
	if op.ID != "" {
		out["operationId"] = op.ID
	}
	if op.Description != "" {
		out["description"] = op.Description
	}
	if len(op.Tags) > 0 {
		tags := make([]any, len(op.Tags))
		for i, t := range op.Tags {
			tags[i] = t
		}
		out["tags"] = tags
	}
	if op.Deprecated {
		out["deprecated"] = true
	}
	switch {
	case op.SecurityAny != nil:
		sec := make([]any, len(op.SecurityAny))
		for i, s := range op.SecurityAny {
			sec[i] = map[string]any{s: []any{}}
		}
		out["security"] = sec
	case op.Security != nil:
		sec := []any{}
		if len(op.Security) > 0 {
			req := map[string]any{}
			for _, s := range op.Security {
				req[s] = []any{}
			}
			sec = append(sec, req)
		}
		out["security"] = sec
	}
	for k, v := range op.Extensions {
		out[k] = v
	}
	if len(op.Params) > 0 {
		params := make([]any, len(op.Params))
		for i, p := range op.Params {
			params[i] = o.param(p)
		}
		out["parameters"] = params
	}
	if op.Request != nil {
		media := op.RequestMedia
		if media == "" {
			media = "application/json"
		}
		out["requestBody"] = map[string]any{"required": true, "content": map[string]any{media: map[string]any{"schema": o.Schema(op.Request)}}}
	}
	responses := map[string]any{}
	for _, r := range op.Responses {
		resp := map[string]any{"description": r.Description}
		if r.Headers != nil {
			hdrs := map[string]any{}
			for name, h := range r.Headers {
				hdr := map[string]any{"schema": o.Schema(h.Schema)}
				if h.Description != "" {
					hdr["description"] = h.Description
				}
				hdrs[name] = hdr
			}
			resp["headers"] = hdrs
		}
		if r.Media != "" {
			media := map[string]any{}
			if r.Schema != nil {
				media["schema"] = o.Schema(r.Schema)
			}
			resp["content"] = map[string]any{r.Media: media}
		}
		responses[r.Status] = resp
	}
	out["responses"] = responses
	return out
}

func (o *OpenAPI) param(p Param) map[string]any {
	out := map[string]any{"name": p.Name, "in": p.In, "schema": o.Schema(p.Schema)}
	if p.Required || p.ShowRequired || p.In == "path" || p.In == "header" {
		out["required"] = p.Required || p.In == "path"
	}
	if p.Description != "" {
		out["description"] = p.Description
	}
	return out
}

// Build returns the document of the operations added so far.
func (o *OpenAPI) Build(d Document) map[string]any {
	schemas := map[string]any{}
	for k, v := range o.schemas.Components() {
		schemas[k] = v
	}
	for k, v := range d.Schemas {
		schemas[k] = v
	}
	components := map[string]any{"schemas": schemas}
	if d.SecuritySchemes != nil {
		components["securitySchemes"] = d.SecuritySchemes
	}
	doc := map[string]any{
		"openapi":    "3.1.0",
		"info":       map[string]any{"title": d.Info.Title, "version": d.Info.Version, "description": d.Info.Description},
		"paths":      o.paths,
		"components": components,
	}
	if len(d.Servers) > 0 {
		servers := make([]any, len(d.Servers))
		for i, s := range d.Servers {
			servers[i] = map[string]any{"url": s}
		}
		doc["servers"] = servers
	}
	if d.JSONSchemaDialect != "" {
		doc["jsonSchemaDialect"] = d.JSONSchemaDialect
	}
	if d.ListTags {
		names := make([]string, 0, len(o.tags))
		for t := range o.tags {
			names = append(names, t)
		}
		sort.Strings(names)
		var tags []any
		for _, t := range names {
			tags = append(tags, map[string]any{"name": t})
		}
		doc["tags"] = tags
	}
	return doc
}

// OperationKeys lists "METHOD path" for every operation of a document,
// sorted (for tests that compare a document with a router).
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

// OpenAPIPath turns an httprouter path into an OpenAPI one: ":id" and
// "*rest" segments become "{id}" and "{rest}".
func OpenAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// RouterPath turns an OpenAPI path into an httprouter one ("{id}" becomes
// ":id").
func RouterPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = ":" + s[1:len(s)-1]
		}
	}
	return strings.Join(segs, "/")
}

// PathParams lists the parameter names of an OpenAPI path template.
func PathParams(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			out = append(out, s[1:len(s)-1])
		}
	}
	return out
}

// MarshalDocument encodes a document as indented JSON, as every surface
// serves it.
func MarshalDocument(doc map[string]any) ([]byte, error) {
	return json.MarshalIndent(doc, "", "  ")
}

// typeOf is reflect.TypeOf that sees through a reflect.Type given as a value.
func typeOf(v any) reflect.Type {
	if t, ok := v.(reflect.Type); ok {
		return t
	}
	return reflect.TypeOf(v)
}
