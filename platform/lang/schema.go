package lang

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/types"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"
)

// schemaSet compiles the JSON Schemas of one compilation. Schemas live in an
// in-memory jsonschema compiler with no URL loader: a $ref can reach the
// document itself and the catalog lock's shared schemas, never the network
// or the file system, so compilation stays a pure function of its inputs.
type schemaSet struct {
	c       *jsonschema.Compiler
	byURL   map[string]*schemaDoc
	n       int
	reg     *typeRegistry
	src     *source
	diags   *diagList
	printer *message.Printer
	typed   map[string]*types.Type // memoised CEL types by doc URL + pointer
}

// schemaDoc is one schema resource.
type schemaDoc struct {
	url      string
	label    string
	json     any
	node     *Schema // set when the schema is written in the source
	valid    bool
	compiled *jsonschema.Schema
}

// sview is a position inside a schema document.
type sview struct {
	doc *schemaDoc
	ptr string
	v   any
}

func (v sview) known() bool { return v.doc != nil && v.v != nil }

func (v sview) obj() map[string]any {
	m, _ := v.v.(map[string]any)
	return m
}

func newSchemaSet(reg *typeRegistry, src *source, diags *diagList) *schemaSet {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	return &schemaSet{
		c:       c,
		byURL:   map[string]*schemaDoc{},
		reg:     reg,
		src:     src,
		diags:   diags,
		printer: message.NewPrinter(language.English),
		typed:   map[string]*types.Type{},
	}
}

// catalogSchemaURL is how source schemas $ref a catalog lock schema.
func catalogSchemaURL(id string) string { return "catalog:schemas/" + id }

// addCatalogSchema registers a shared schema of the catalog lock.
func (ss *schemaSet) addCatalogSchema(id string, raw json.RawMessage) error {
	doc, err := DecodeJSONSchema(raw)
	if err != nil {
		return err
	}
	url := catalogSchemaURL(id)
	if err := ss.c.AddResource(url, doc); err != nil {
		return fmt.Errorf("catalog schema %s: %w", id, err)
	}
	sd := &schemaDoc{url: url, label: id, json: doc}
	ss.byURL[url] = sd
	sch, err := ss.c.Compile(url)
	if err != nil {
		return fmt.Errorf("catalog schema %s: %s", id, ss.cleanMessage(err.Error(), sd))
	}
	sd.valid, sd.compiled = true, sch
	return nil
}

func (ss *schemaSet) nextURL() string {
	ss.n++
	return "mem://lang/schema" + strconv.Itoa(ss.n) + ".json"
}

// fromJSON adds a schema that comes from the catalog lock (already JSON).
func (ss *schemaSet) fromJSON(raw json.RawMessage, label string) (*schemaDoc, error) {
	doc, err := DecodeJSONSchema(raw)
	if err != nil || doc == nil {
		return nil, err
	}
	sd := &schemaDoc{url: ss.nextURL(), label: label, json: doc}
	if err := ss.c.AddResource(sd.url, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", label, err)
	}
	ss.byURL[sd.url] = sd
	sch, err := ss.c.Compile(sd.url)
	if err != nil {
		return sd, fmt.Errorf("schema %s is invalid: %s", label, ss.cleanMessage(err.Error(), sd))
	}
	sd.valid, sd.compiled = true, sch
	return sd, nil
}

// fromSource compiles a schema written in the document, reporting problems
// at their source positions. It returns nil when s is nil.
func (ss *schemaSet) fromSource(s *Schema, label string) *schemaDoc {
	if s == nil {
		return nil
	}
	doc, err := toJSON(s.YAML)
	if err != nil {
		ss.diags.errorf(CodeSchema, ss.src.rangeOf(s.YAML), s.Path, "invalid JSON Schema: %v", err)
		return nil
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		ss.diags.errorf(CodeSchema, ss.src.rangeOf(s.YAML), s.Path, "a JSON Schema must be a mapping (or true/false)")
		return nil
	}
	s.JSON = doc
	sd := &schemaDoc{url: ss.nextURL(), label: label, json: doc, node: s}
	s.doc = sd
	ss.byURL[sd.url] = sd
	if err := ss.c.AddResource(sd.url, doc); err != nil {
		ss.diags.errorf(CodeSchema, ss.src.rangeOf(s.YAML), s.Path, "invalid JSON Schema: %s", ss.cleanMessage(err.Error(), sd))
		return sd
	}
	sch, err := ss.c.Compile(sd.url)
	if err != nil {
		ss.reportSchemaError(err, sd)
	} else {
		sd.valid, sd.compiled = true, sch
	}
	ss.checkSchemaSecrets(sd)
	return sd
}

// cleanMessage replaces internal resource URLs with the schema's label.
func (ss *schemaSet) cleanMessage(msg string, sd *schemaDoc) string {
	msg = strings.ReplaceAll(msg, "'"+sd.url+"'", sd.label)
	msg = strings.ReplaceAll(msg, sd.url, sd.label)
	return strings.ReplaceAll(msg, "mem://lang/", "")
}

func (ss *schemaSet) reportSchemaError(err error, sd *schemaDoc) {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			// One diagnostic per location: alternatives of the metaschema
			// (anyOf) otherwise produce several messages for one mistake.
			var order []string
			msgs := map[string][]string{}
			locs := map[string][]string{}
			for _, leaf := range ValidationLeaves(ve) {
				p := JSONPointer(leaf.InstanceLocation)
				if _, ok := msgs[p]; !ok {
					order = append(order, p)
					locs[p] = leaf.InstanceLocation
				}
				msgs[p] = append(msgs[p], ss.message(leaf))
			}
			for _, p := range order {
				n := nodeAt(sd.node.YAML, locs[p])
				ss.diags.errorf(CodeSchema, ss.src.rangeOf(n), sd.node.Path+p, "invalid JSON Schema: %s", strings.Join(msgs[p], "; or "))
			}
			return
		}
	}
	ss.diags.errorf(CodeSchema, ss.src.rangeOf(sd.node.YAML), sd.node.Path, "invalid JSON Schema: %s", ss.cleanMessage(err.Error(), sd))
}

// message renders a validation error (ValidationMessage).
func (ss *schemaSet) message(ve *jsonschema.ValidationError) string {
	return ValidationMessage(ss.printer, ve)
}

// nodeAt walks a YAML tree along JSON Pointer segments and returns the
// deepest node reached (a mapping's key for a missing member is not known,
// so the mapping itself is returned).
func nodeAt(n *yaml.Node, segs []string) *yaml.Node {
	for _, seg := range segs {
		switch n.Kind {
		case yaml.MappingNode:
			v := mappingValue(n, seg)
			if v == nil {
				return n
			}
			n = v
		case yaml.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n
			}
			n = n.Content[i]
		default:
			return n
		}
	}
	return n
}

// root returns the view of a whole document.
func (sd *schemaDoc) root() sview {
	if sd == nil {
		return sview{}
	}
	return sview{doc: sd, ptr: "", v: sd.json}
}

// resolve follows $ref chains, local ("#/$defs/x") or to catalog schemas.
func (ss *schemaSet) resolve(v sview) sview {
	for i := 0; i < 16; i++ {
		m := v.obj()
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		base, frag, _ := strings.Cut(ref, "#")
		doc := v.doc
		if base != "" {
			doc = ss.byURL[base]
			if doc == nil {
				return sview{}
			}
		}
		target, ok := lookupPointer(doc.json, frag)
		if !ok {
			return sview{}
		}
		v = sview{doc: doc, ptr: frag, v: target}
	}
	return sview{} // too deep: treat as unknown
}

// LookupPointer resolves a JSON Pointer (RFC 6901) in a decoded JSON
// document. The kernel uses it to resolve the same schema references the
// compiler does.
func LookupPointer(doc any, ptr string) (any, bool) { return lookupPointer(doc, ptr) }

func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (v sview) child(keys ...string) sview {
	cur := v.v
	ptr := v.ptr
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return sview{}
		}
		next, ok := m[k]
		if !ok {
			return sview{}
		}
		cur = next
		ptr = joinPath(ptr, k)
	}
	return sview{doc: v.doc, ptr: ptr, v: cur}
}

// isSecret reports whether a schema marks its value as secret or write-only.
func (ss *schemaSet) isSecret(v sview) bool {
	for _, m := range []map[string]any{v.obj(), ss.resolve(v).obj()} {
		if m["x-secret"] == true || m["writeOnly"] == true {
			return true
		}
	}
	return false
}

// property returns the schema of member name of an object schema. closed
// reports that the schema forbids the member.
func (ss *schemaSet) property(v sview, name string) (prop sview, closed bool) {
	r := ss.resolve(v)
	m := r.obj()
	if m == nil {
		return sview{}, r.v == false
	}
	if p := r.child("properties", name); p.v != nil {
		return p, false
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		return sview{}, !ap
	case map[string]any:
		return r.child("additionalProperties"), false
	}
	return sview{}, false
}

// required lists the required members of an object schema.
func (ss *schemaSet) required(v sview) []string {
	var out []string
	if l, ok := ss.resolve(v).obj()["required"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// items returns the schema of the elements of an array schema.
func (ss *schemaSet) items(v sview) sview {
	r := ss.resolve(v)
	if it := r.child("items"); it.v != nil {
		if _, isList := it.v.([]any); !isList {
			return it
		}
	}
	return sview{}
}

// validateLiteral checks a literal value against the schema at v with the
// full JSON Schema semantics. It returns the failing leaves' instance
// locations and messages.
func (ss *schemaSet) validateLiteral(v sview, value any) []literalProblem {
	r := ss.resolve(v)
	if !r.known() || !r.doc.valid || !safePointer(r.ptr) {
		return nil
	}
	sch := r.doc.compiled
	if r.ptr != "" {
		var err error
		sch, err = ss.c.Compile(r.doc.url + "#" + r.ptr)
		if err != nil {
			return nil
		}
	}
	err := sch.Validate(value)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return nil
	}
	var out []literalProblem
	for _, leaf := range ValidationLeaves(ve) {
		out = append(out, literalProblem{at: leaf.InstanceLocation, msg: ss.message(leaf)})
	}
	return out
}

type literalProblem struct {
	at  []string
	msg string
}

var safePointerRE = regexp.MustCompile(`^[A-Za-z0-9_/$-]*$`)

func safePointer(p string) bool { return safePointerRE.MatchString(p) }

// builtinSchema returns a compiled schema the language itself defines (for
// fixed-type fields), memoised per compilation.
func (c *compiler) builtinSchema(raw string) sview {
	if sd, ok := c.builtins[raw]; ok {
		return sd.root()
	}
	sd, err := c.ss.fromJSON([]byte(raw), "builtin")
	if err != nil {
		// The language's own schemas are constants; failing here is a bug.
		c.diags.errorf(CodeInternal, Range{}, "", "built-in schema: %v", err)
		return sview{}
	}
	c.builtins[raw] = sd
	return sd.root()
}
