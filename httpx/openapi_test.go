package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
)

type docItem struct {
	ID      string          `json:"id" api:"required" format:"uuid"`
	Name    string          `json:"name,omitempty" doc:"shown" schema:"minLength=1,maxLength=5"`
	Kind    string          `json:"kind" enum:"a,b"`
	When    *time.Time      `json:"when"`
	Raw     json.RawMessage `json:"raw"`
	Parent  *docItem        `json:"parent"`
	Tags    []string        `json:"tags" schema:"itemMaxLength=3"`
	skipped int
}

type docPage[T any] struct {
	Items []T `json:"items"`
}

func TestSchemasStyles(t *testing.T) {
	// Platform style: api:"required", $ref in oneOf, doc wraps a $ref.
	s := NewSchemas(SchemaStyle{})
	ref := s.Of(docPage[docItem]{})
	if ref["$ref"] != "#/components/schemas/docPageDocItem" && ref["$ref"] != "#/components/schemas/docPagedocItem" {
		t.Fatalf("ref %v", ref)
	}
	item := s.Components()["docItem"].(map[string]any)
	props := item["properties"].(map[string]any)
	if !reflect.DeepEqual(item["required"], []string{"id"}) {
		t.Errorf("required %v", item["required"])
	}
	if props["id"].(map[string]any)["format"] != "uuid" || len(props["kind"].(map[string]any)["enum"].([]any)) != 2 {
		t.Errorf("tags %v %v", props["id"], props["kind"])
	}
	if _, ok := props["parent"].(map[string]any)["oneOf"]; !ok {
		t.Errorf("nullable ref %v", props["parent"])
	}
	if !reflect.DeepEqual(props["when"], map[string]any{"type": []any{"string", "null"}, "format": "date-time"}) {
		t.Errorf("nullable time %v", props["when"])
	}
	if name := props["name"].(map[string]any); name["minLength"] != 1 || name["maxLength"] != 5 || name["description"] != "shown" {
		t.Errorf("name %v", name)
	}
	if _, ok := props["skipped"]; ok {
		t.Error("unexported field documented")
	}
	if item["additionalProperties"] != false {
		t.Error("open object")
	}

	// Callbacks style: required unless omitempty, anyOf, named raw JSON.
	c := NewSchemas(SchemaStyle{RequiredUnlessOmitempty: true, NullableAnyOf: true, DocBesideRef: true,
		RawJSON: map[string]any{"description": "any JSON value"}, Name: ArgPageName})
	if ref := c.Of(docPage[docItem]{}); ref["$ref"] != "#/components/schemas/docItemPage" {
		t.Fatalf("ref %v", ref)
	}
	item = c.Components()["docItem"].(map[string]any)
	props = item["properties"].(map[string]any)
	if len(item["required"].([]string)) != 6 {
		t.Errorf("required %v", item["required"])
	}
	if _, ok := props["parent"].(map[string]any)["anyOf"]; !ok {
		t.Errorf("nullable ref %v", props["parent"])
	}
	if props["raw"].(map[string]any)["description"] != "any JSON value" {
		t.Errorf("raw %v", props["raw"])
	}
}

func TestOpenAPIFromRouteTable(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		WriteJSON(w, 200, map[string]string{"id": p.ByName("id")})
		return nil
	}
	routes := []Route{
		{Method: "GET", Path: "/things/{id}", Handler: ok, Doc: Operation{ID: "get", Summary: "Read", Tags: []string{"things"},
			Security: []string{"owner"}, Params: []Param{{Name: "id", In: "path", Schema: ""}, {Name: "q", In: "query", Description: "filter", Schema: ""}},
			Responses: []Response{{Status: "200", Description: "OK", Media: "application/json", Schema: docItem{}}}}},
		{Method: "POST", Path: "/things", Handler: func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			return Errorf(ENOTFOUND, "nope")
		}, Doc: Operation{Summary: "Create", Security: []string{}, Request: docItem{}, Tags: []string{"a-things"}}},
		{Method: "GET", Path: "/hidden", Handler: ok, Undocumented: true, Public: true},
	}
	g := NewOpenAPI(SchemaStyle{})
	g.AddRoutes(routes)
	doc := g.Build(Document{Info: Info{Title: "T", Version: "1"}, Servers: []string{"/"}, ListTags: true})
	if keys := OperationKeys(doc); strings.Join(keys, ",") != "GET /things/{id},POST /things" {
		t.Fatalf("keys %v", keys)
	}
	get := doc["paths"].(map[string]any)["/things/{id}"].(map[string]any)["get"].(map[string]any)
	params := get["parameters"].([]any)
	if params[0].(map[string]any)["required"] != true || params[1].(map[string]any)["required"] != nil {
		t.Errorf("params %v", params)
	}
	if sec := get["security"].([]any); len(sec) != 1 {
		t.Errorf("security %v", sec)
	}
	post := doc["paths"].(map[string]any)["/things"].(map[string]any)["post"].(map[string]any)
	if sec := post["security"].([]any); len(sec) != 0 {
		t.Errorf("public security %v", sec)
	}
	if _, ok := post["operationId"]; ok {
		t.Error("empty operationId written")
	}
	if tags := doc["tags"].([]any); len(tags) != 2 || tags[0].(map[string]any)["name"] != "a-things" {
		t.Errorf("tags %v", tags)
	}

	// The same table is served: guard on protected routes, errors encoded.
	guarded := 0
	s := &Surface{Encode: ProblemEncoder(&testTable, nil, "test"), Guard: func(w http.ResponseWriter, r *http.Request) error {
		guarded++
		if r.Header.Get("Authorization") == "" {
			return Errorf(EUNAUTHORIZED, "no")
		}
		return nil
	}}
	router := httprouter.New()
	s.Register(router, routes)
	for _, c := range []struct {
		method, path, auth string
		status             int
	}{
		{"GET", "/things/7", "x", 200},
		{"GET", "/things/7", "", 500}, // EUNAUTHORIZED is not in testTable
		{"POST", "/things", "x", 404},
		{"GET", "/hidden", "", 200},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		router.ServeHTTP(w, req)
		if w.Code != c.status {
			t.Errorf("%s %s: %d %s", c.method, c.path, w.Code, w.Body)
		}
	}
	if guarded != 3 {
		t.Errorf("guard ran %d times", guarded)
	}
	w := httptest.NewRecorder()
	ServeDocument(func() map[string]any { return doc })(w, httptest.NewRequest("GET", "/doc", nil))
	if !json.Valid(w.Body.Bytes()) || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("document %q", w.Body.String()[:40])
	}
}

func TestPaths(t *testing.T) {
	if RouterPath("/a/{id}/b/{x}") != "/a/:id/b/:x" || OpenAPIPath("/a/:id/*rest") != "/a/{id}/{rest}" {
		t.Error("path conversion")
	}
	if got := PathParams("/a/{id}/b/{x}"); !reflect.DeepEqual(got, []string{"id", "x"}) {
		t.Errorf("params %v", got)
	}
}

type looseDur int64

type looseItem struct {
	ID    *string  `json:"id" format:"uuid"`
	Every looseDur `json:"every"`
}

func TestSchemasLoose(t *testing.T) {
	s := NewSchemas(SchemaStyle{Loose: true, Types: map[reflect.Type]map[string]any{
		reflect.TypeFor[looseDur](): {"type": "string", "description": "a duration"}}})
	s.Of(looseItem{})
	want := map[string]any{"type": "object", "properties": map[string]any{
		"id":    map[string]any{"type": "string"},
		"every": map[string]any{"type": "string", "description": "a duration"}}}
	if got := s.Components()["looseItem"]; !reflect.DeepEqual(got, want) {
		t.Errorf("loose object %v", got)
	}
	doc := NewOpenAPI(SchemaStyle{}).Build(Document{Info: Info{Title: "t"}})
	if _, ok := doc["servers"]; ok {
		t.Error("servers written without servers")
	}
}
