package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"

	"github.com/agentbridge/bridge/platform/lang"
	"golang.org/x/text/message"
)

// schemaSet holds the JSON Schemas a program validates and types values
// with: the workflow's own and the pinned ones of the catalog lock. Like
// the compiler's, it has no URL loader: a $ref reaches the schema itself or
// the lock's shared schemas ("catalog:schemas/<id>"), never the network or
// the file system.
type schemaSet struct {
	c    *jsonschema.Compiler
	docs map[string]any // decoded schema documents by URL
	n    int
}

// schema is one compiled schema resource.
type schema struct {
	set      *schemaSet
	url      string
	doc      any
	compiled *jsonschema.Schema
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not available: schemas are never loaded from outside", url)
}

func newSchemaSet() *schemaSet {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	return &schemaSet{c: c, docs: map[string]any{}}
}

// decodeSchemaJSON decodes a schema document (lang.DecodeJSONSchema); an
// empty one is refused here, where a schema is required.
func decodeSchemaJSON(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("decode schema: %w", io.EOF)
	}
	return lang.DecodeJSONSchema(raw)
}

// addCatalog registers a shared schema of the catalog lock.
func (ss *schemaSet) addCatalog(id string, raw json.RawMessage) error {
	doc, err := decodeSchemaJSON(raw)
	if err != nil {
		return fmt.Errorf("catalog schema %s: %w", id, err)
	}
	url := "catalog:schemas/" + id
	if err := ss.c.AddResource(url, doc); err != nil {
		return fmt.Errorf("catalog schema %s: %w", id, err)
	}
	ss.docs[url] = doc
	return nil
}

// add compiles a schema; nil or "null" raw means "no schema" and returns
// nil (anything is accepted, numbers are doubles).
func (ss *schemaSet) add(raw json.RawMessage, label string) (*schema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	doc, err := decodeSchemaJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	ss.n++
	url := "mem://kernel/schema" + strconv.Itoa(ss.n) + ".json"
	if err := ss.c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	ss.docs[url] = doc
	compiled, err := ss.c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid schema: %s", label, strings.ReplaceAll(err.Error(), url, label))
	}
	return &schema{set: ss, url: url, doc: doc, compiled: compiled}, nil
}

var printer = message.NewPrinter(language.English)

// validate checks an IR value. Messages are sorted so that a failure that
// ends up in a run's error is the same on every replay.
func (s *schema) validate(v any) error {
	if s == nil {
		return nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var msgs []string
	for _, leaf := range lang.ValidationLeaves(ve) {
		msgs = append(msgs, "at '"+lang.JSONPointer(leaf.InstanceLocation)+"': "+lang.ValidationMessage(printer, leaf))
	}
	sort.Strings(msgs)
	msgs = slices.Compact(msgs)
	if len(msgs) > 3 {
		msgs = append(msgs[:3], fmt.Sprintf("and %d more", len(msgs)-3))
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Typing: the kernel follows the compiler's mapping from JSON Schema to CEL
// types (lang.SchemaType, the same walk lang's celType takes), so that a
// value has at run time the type its expressions were checked against.
// Only numbers need it: integer positions hold int64, other positions
// float64.

// view is a position inside a schema document.
type view struct {
	url string
	v   any
}

func (s *schema) root() view {
	if s == nil {
		return view{}
	}
	return view{url: s.url, v: s.doc}
}

// normalize types the numbers of v by the schema. It never mutates v.
func (s *schema) normalize(v any) any {
	if s == nil {
		return normalizeDyn(v)
	}
	return s.set.normalizeAt(v, s.root(), 0)
}

// normalizeDyn types a value that has no schema: every external number is a
// double.
func normalizeDyn(v any) any {
	var ss *schemaSet
	return ss.normalizeAt(v, view{}, 0)
}

func (ss *schemaSet) resolve(v view) view {
	for range 16 {
		m, ok := v.v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		base, frag, _ := strings.Cut(ref, "#")
		url := v.url
		if base != "" {
			url = base
		}
		doc, ok := ss.docs[url]
		if !ok {
			return view{}
		}
		target, ok := lang.LookupPointer(doc, frag)
		if !ok {
			return view{}
		}
		v = view{url: url, v: target}
	}
	return view{}
}

// shape is what the compiler's type mapping makes of a schema position.
type shape int

const (
	shapeDyn shape = iota
	shapeInt
	shapeDouble
	shapeList   // elements typed by items
	shapeStruct // members typed by properties
	shapeMap    // members typed by additionalProperties (or dyn)
	shapeOther  // string, bool, null: nothing to type
)

func (ss *schemaSet) shapeOf(v view, depth int) (shape, view) {
	if ss == nil || v.v == nil || depth > 16 {
		return shapeDyn, view{}
	}
	r := ss.resolve(v)
	m, ok := r.v.(map[string]any)
	if !ok {
		return shapeDyn, view{}
	}
	name, nullable, viaAllOf := lang.SchemaType(m)
	if viaAllOf {
		return ss.shapeOf(view{url: r.url, v: m["allOf"].([]any)[0]}, depth+1)
	}
	switch name {
	case "integer":
		return shapeInt, view{}
	case "number":
		return shapeDouble, view{}
	case "array":
		if nullable {
			return shapeDyn, view{} // a nullable list is dyn for the compiler
		}
		it, ok := m["items"]
		if _, isList := it.([]any); !ok || isList {
			return shapeList, view{}
		}
		return shapeList, view{url: r.url, v: it}
	case "object":
		if nullable {
			return shapeDyn, view{}
		}
		props, _ := m["properties"].(map[string]any)
		if len(props) == 0 {
			if ap, ok := m["additionalProperties"].(map[string]any); ok {
				return shapeMap, view{url: r.url, v: ap}
			}
			return shapeMap, view{}
		}
		if !lang.CELFieldNames(props) {
			return shapeMap, view{}
		}
		return shapeStruct, r
	case "string", "boolean":
		return shapeOther, view{}
	}
	return shapeDyn, view{}
}

func (ss *schemaSet) normalizeAt(v any, at view, depth int) any {
	if depth > maxValueDepth {
		return v
	}
	sh, sub := ss.shapeOf(at, depth)
	switch x := v.(type) {
	case json.Number, int64, float64:
		return typeNumber(x, sh)
	case []any:
		var items view
		if sh == shapeList {
			items = sub
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ss.normalizeAt(e, items, depth+1)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var member view
			switch sh {
			case shapeMap:
				member = sub
			case shapeStruct:
				member = ss.member(sub, k)
			}
			out[k] = ss.normalizeAt(e, member, depth+1)
		}
		return out
	}
	return v
}

// member is the schema of property k of a struct-shaped object schema.
func (ss *schemaSet) member(obj view, k string) view {
	m, _ := obj.v.(map[string]any)
	if props, ok := m["properties"].(map[string]any); ok {
		if p, ok := props[k]; ok {
			return view{url: obj.url, v: p}
		}
	}
	return view{}
}

// typeNumber gives a number the type of its position: int at integer
// positions (when integral), double elsewhere; a value the kernel typed
// itself (int64 or float64) keeps its type at dyn positions.
func typeNumber(n any, sh shape) any {
	switch sh {
	case shapeInt:
		switch x := n.(type) {
		case json.Number:
			if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return i
			}
			f, err := strconv.ParseFloat(string(x), 64)
			if err == nil && f == float64(int64(f)) {
				return int64(f)
			}
			return f
		case float64:
			if x == float64(int64(x)) {
				return int64(x)
			}
		}
		return n
	case shapeDyn, shapeDouble, shapeOther, shapeList, shapeStruct, shapeMap:
		switch x := n.(type) {
		case json.Number:
			f, _ := strconv.ParseFloat(string(x), 64)
			return f
		case int64:
			if sh == shapeDyn {
				return x
			}
			return float64(x)
		}
	}
	return n
}
