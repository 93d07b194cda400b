package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// schemaSet builds JSON Schemas (OpenAPI 3.1 dialect) for Go types and
// collects named struct schemas as components. Struct tags used: json
// (names, omitempty), api:"required", doc:"description", enum:"a,b",
// format:"uuid".
type schemaSet struct {
	components map[string]any
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
)

func newSchemaSet() *schemaSet { return &schemaSet{components: map[string]any{}} }

// of returns the schema of v's type (nil: none).
func (s *schemaSet) of(v any) map[string]any {
	if v == nil {
		return nil
	}
	return s.schema(reflect.TypeOf(v))
}

// schemaName makes a component name of a type name ("Page[...Tenant]"
// becomes "PageTenant").
func schemaName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		inner := name[i+1 : len(name)-1]
		if j := strings.LastIndexAny(inner, "./"); j >= 0 {
			inner = inner[j+1:]
		}
		name = name[:i] + inner
	}
	return name
}

func (s *schemaSet) schema(t reflect.Type) map[string]any {
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawJSONType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := s.schema(t.Elem())
		if ref, ok := inner["$ref"]; ok {
			return map[string]any{"oneOf": []any{map[string]any{"$ref": ref}, map[string]any{"type": "null"}}}
		}
		out := map[string]any{}
		for k, v := range inner {
			out[k] = v
		}
		if typ, ok := out["type"].(string); ok {
			out["type"] = []any{typ, "null"}
		}
		return out
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": s.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := schemaName(t)
		ref := map[string]any{"$ref": "#/components/schemas/" + name}
		if _, done := s.components[name]; done {
			return ref
		}
		s.components[name] = map[string]any{} // placeholder for recursion
		props := map[string]any{}
		var required []string
		s.fields(t, props, &required)
		obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			obj["required"] = required
		}
		s.components[name] = obj
		return ref
	}
	return map[string]any{}
}

func (s *schemaSet) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			s.fields(sf.Type, props, required)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fs := s.schema(sf.Type)
		if _, isRef := fs["$ref"]; isRef && (sf.Tag.Get("doc") != "") {
			fs = map[string]any{"allOf": []any{fs}}
		}
		if d := sf.Tag.Get("doc"); d != "" {
			fs["description"] = d
		}
		if e := sf.Tag.Get("enum"); e != "" {
			var vals []any
			for _, v := range strings.Split(e, ",") {
				vals = append(vals, v)
			}
			fs["enum"] = vals
		}
		if f := sf.Tag.Get("format"); f != "" {
			fs["format"] = f
		}
		props[name] = fs
		if hasTagOption(sf.Tag.Get("api"), "required") {
			*required = append(*required, name)
		}
	}
}
