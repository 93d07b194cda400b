package httpx

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// SchemaStyle holds the conventions in which a surface's document has
// always described its types; the derivation itself is shared. The zero
// value is the platform's style (docs/platform-api.md).
type SchemaStyle struct {
	// RequiredUnlessOmitempty makes every field without ",omitempty"
	// required (callbacks, ingest); otherwise a field is required when
	// tagged api:"required" (platform).
	RequiredUnlessOmitempty bool
	// NullableAnyOf documents a pointer to anything but a plain typed
	// schema as {"anyOf": [inner, null]} (callbacks); otherwise a pointer
	// to a named struct is {"oneOf": [{"$ref"}, null]} and other inner
	// schemas are kept as they are (platform).
	NullableAnyOf bool
	// DocBesideRef writes a field's doc tag next to a $ref (OpenAPI 3.1
	// allows it); otherwise the $ref is wrapped in allOf first.
	DocBesideRef bool
	// RawJSON is the schema of json.RawMessage ({} when nil).
	RawJSON map[string]any
	// Name names the component of a struct type (default TypeName: a
	// generic instantiation "Page[pkg.Item]" becomes "PageItem").
	Name func(t reflect.Type) string
	// Loose is the factory's style: a pointer is documented as its value,
	// an object lists its properties only (neither closed nor with required
	// fields), and the refining tags are not read.
	Loose bool
	// Types are the schemas of particular types, used as given (a duration
	// type, a byte slice holding JSON).
	Types map[reflect.Type]map[string]any
}

// TypeName is the default component name: the type's name, a generic
// instantiation's argument appended ("Page[...Tenant]" is "PageTenant").
func TypeName(t reflect.Type) string {
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

// ArgPageName names a generic instantiation after its argument plus
// "Page" ("PaginationResponse[pkg.Configuration]" is "ConfigurationPage").
func ArgPageName(t reflect.Type) string {
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 {
		arg := strings.TrimSuffix(name[i+1:], "]")
		if j := strings.LastIndexByte(arg, '.'); j >= 0 {
			arg = arg[j+1:]
		}
		return arg + "Page"
	}
	return name
}

// Schemas derives JSON Schemas (OpenAPI 3.1 dialect) from Go types and
// collects named structs as components. Struct tags refine them:
//
//	json:"name,omitempty"           names (and, by style, what is required)
//	api:"required"                  required (platform style)
//	doc:"text"                      description
//	enum:"a,b" format:"uuid"        enum and format
//	schema:"enum=A|B,minLength=1"   enum, format, minLength, maxLength,
//	                                minimum, maximum, minItems, maxItems,
//	                                itemMinLength, itemMaxLength
//
// Every object is closed (additionalProperties false): the decoders refuse
// unknown fields.
type Schemas struct {
	style      SchemaStyle
	components map[string]any
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
)

// NewSchemas returns an empty set in style.
func NewSchemas(style SchemaStyle) *Schemas {
	if style.Name == nil {
		style.Name = TypeName
	}
	return &Schemas{style: style, components: map[string]any{}}
}

// Of returns the schema of v's type (v may be a reflect.Type); nil for nil.
func (s *Schemas) Of(v any) map[string]any {
	if v == nil {
		return nil
	}
	return s.schema(typeOf(v))
}

// Components returns the named schemas derived so far.
func (s *Schemas) Components() map[string]any { return s.components }

func (s *Schemas) schema(t reflect.Type) map[string]any {
	if sch, ok := s.style.Types[t]; ok {
		return cloneSchema(sch)
	}
	if s.style.Loose && t.Kind() == reflect.Pointer {
		return s.schema(t.Elem())
	}
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawJSONType:
		if s.style.RawJSON != nil {
			return cloneSchema(s.style.RawJSON)
		}
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.nullable(s.schema(t.Elem()))
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
		name := s.style.Name(t)
		ref := map[string]any{"$ref": "#/components/schemas/" + name}
		if _, done := s.components[name]; done {
			return ref
		}
		s.components[name] = map[string]any{} // placeholder against recursion
		props := map[string]any{}
		var required []string
		s.fields(t, props, &required)
		if s.style.Loose {
			s.components[name] = map[string]any{"type": "object", "properties": props}
			return ref
		}
		obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			obj["required"] = required
		}
		s.components[name] = obj
		return ref
	}
	return map[string]any{}
}

func (s *Schemas) nullable(inner map[string]any) map[string]any {
	if typ, ok := inner["type"].(string); ok {
		out := cloneSchema(inner)
		out["type"] = []any{typ, "null"}
		return out
	}
	if s.style.NullableAnyOf {
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	}
	if ref, ok := inner["$ref"]; ok {
		return map[string]any{"oneOf": []any{map[string]any{"$ref": ref}, map[string]any{"type": "null"}}}
	}
	return cloneSchema(inner)
}

func (s *Schemas) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
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
		fs := cloneSchema(s.schema(sf.Type))
		if s.style.Loose {
			props[name] = fs
			continue
		}
		if d := sf.Tag.Get("doc"); d != "" {
			if _, isRef := fs["$ref"]; isRef && !s.style.DocBesideRef {
				fs = map[string]any{"allOf": []any{fs}}
			}
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
		applySchemaTag(fs, sf.Tag.Get("schema"))
		props[name] = fs
		if s.style.RequiredUnlessOmitempty {
			if !strings.Contains(opts, "omitempty") {
				*required = append(*required, name)
			}
		} else if hasOption(sf.Tag.Get("api"), "required") {
			*required = append(*required, name)
		}
	}
}

// applySchemaTag applies a schema:"k=v,..." tag to a field's schema (to
// the non-null alternative of a nullable one).
func applySchemaTag(ps map[string]any, spec string) {
	if spec == "" {
		return
	}
	target := ps
	if anyOf, ok := ps["anyOf"].([]any); ok && len(anyOf) > 0 {
		target, _ = anyOf[0].(map[string]any)
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

func hasOption(tag, opt string) bool {
	for _, o := range strings.Split(tag, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// cloneSchema copies a schema deeply enough that a field's tags never
// change a shared one.
func cloneSchema(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch inner := v.(type) {
		case map[string]any:
			v = cloneSchema(inner)
		case []any:
			cp := make([]any, len(inner))
			for i, e := range inner {
				if em, ok := e.(map[string]any); ok {
					e = cloneSchema(em)
				}
				cp[i] = e
			}
			v = cp
		}
		out[k] = v
	}
	return out
}
