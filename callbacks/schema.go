package callbacks

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// schemaGen derives JSON Schemas (OpenAPI 3.1 dialect) from the Go types
// the handlers decode and encode, so the document describes exactly what
// is served. Struct tags refine them:
//
//	doc:"text"                          description
//	schema:"enum=A|B,minLength=1,..."   enum, minLength, maxLength, minimum,
//	                                    maximum, minItems, maxItems, format,
//	                                    itemMinLength, itemMaxLength
//
// Every object is closed (additionalProperties false): the decoder refuses
// unknown fields, and a test validates real responses against the schemas.
type schemaGen struct {
	defs map[string]any
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
)

// schemaName names a type in components/schemas.
func schemaName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		// PaginationResponse[pkg/path.Configuration] -> ConfigurationPage
		arg := strings.TrimSuffix(name[i+1:], "]")
		if j := strings.LastIndexByte(arg, '.'); j >= 0 {
			arg = arg[j+1:]
		}
		return arg + "Page"
	}
	return name
}

// of returns the schema of t, registering named structs as components.
func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{"description": "any JSON value"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := g.of(t.Elem())
		if ty, ok := inner["type"].(string); ok {
			out := clone(inner)
			out["type"] = []any{ty, "null"}
			return out
		}
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := schemaName(t)
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // placeholder against recursion
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []any
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		ps := clone(g.of(f.Type))
		applyTags(ps, f)
		props[name] = ps
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		obj["required"] = required
	}
	return obj
}

func applyTags(ps map[string]any, f reflect.StructField) {
	if d := f.Tag.Get("doc"); d != "" {
		ps["description"] = d // OpenAPI 3.1 allows it next to $ref too
	}
	spec := f.Tag.Get("schema")
	if spec == "" {
		return
	}
	target := ps
	if anyOf, ok := ps["anyOf"].([]any); ok && len(anyOf) > 0 {
		target = anyOf[0].(map[string]any)
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "enum":
			var vals []any
			for _, e := range strings.Split(v, "|") {
				vals = append(vals, e)
			}
			if types, ok := target["type"].([]any); ok && len(types) == 2 && types[1] == "null" {
				vals = append(vals, nil) // a nullable field may be null
			}
			if items, ok := target["items"].(map[string]any); ok && target["type"] == "array" {
				items["enum"] = vals
			} else {
				target["enum"] = vals
			}
		case "format":
			target["format"] = v
		case "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems":
			n, _ := strconv.Atoi(v)
			target[k] = n
		case "itemMinLength", "itemMaxLength":
			n, _ := strconv.Atoi(v)
			if items, ok := target["items"].(map[string]any); ok {
				items[strings.Replace(strings.TrimPrefix(k, "item"), "M", "m", 1)] = n
			}
		}
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if inner, ok := v.(map[string]any); ok {
			v = clone(inner)
		}
		out[k] = v
	}
	return out
}
