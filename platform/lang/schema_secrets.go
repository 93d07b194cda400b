package lang

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// schemaKeywords lists keywords whose value is a schema, a map of schemas or
// a list of schemas: the places a secret marking can hide.
var (
	schemaValued = []string{"additionalProperties", "items", "contains", "not", "if", "then", "else",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	schemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

var secretNameRE = regexp.MustCompile(`(?i)(password|passwd|secret|token|api[_-]?key|private[_-]?key|credential)`)

// checkSchemaSecrets reports literal values a schema supplies for secret
// fields (default, const, enum, examples) and properties whose names suggest
// a secret but are not marked.
func (ss *schemaSet) checkSchemaSecrets(sd *schemaDoc) {
	var walk func(v sview, depth int)
	walk = func(v sview, depth int) {
		m := v.obj()
		if m == nil || depth > MaxNestingDepth {
			return
		}
		secret := ss.isSecret(v)
		for _, kw := range []string{"default", "const", "enum", "examples"} {
			val, ok := m[kw]
			if !ok {
				continue
			}
			vals := []any{val}
			if kw == "enum" || kw == "examples" {
				if l, isList := val.([]any); isList {
					vals = l
				}
			}
			for _, x := range vals {
				if secret && x != nil {
					ss.reportSchemaSecret(sd, v.ptr, kw, "a secret or write-only field must not have a literal %s; supply it at run time", kw)
					break
				}
				if !secret {
					if paths := ss.secretPaths(v, x, "", 0); len(paths) > 0 {
						ss.reportSchemaSecret(sd, v.ptr, kw, "%s supplies a literal value for the secret field %s", kw, paths[0])
						break
					}
				}
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				p := v.child("properties", k)
				if secretNameRE.MatchString(k) && !ss.isSecret(p) {
					n := nodeAt(sd.node.YAML, splitPointer(p.ptr))
					keyNode := keyNodeFor(sd.node.YAML, splitPointer(p.ptr))
					if keyNode != nil {
						n = keyNode
					}
					ss.diags.warnf(CodeSecretUnmarked, ss.src.rangeOf(n), sd.node.Path+p.ptr,
						"property %q looks like a secret; mark it with x-secret: true (or writeOnly: true) so that its values are never written in sources, logs or test data", k)
				}
			}
		}
		for _, kw := range schemaValued {
			if _, ok := m[kw].(map[string]any); ok {
				walk(v.child(kw), depth+1)
			}
		}
		for _, kw := range schemaMaps {
			if mm, ok := m[kw].(map[string]any); ok {
				keys := make([]string, 0, len(mm))
				for k := range mm {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					walk(v.child(kw, k), depth+1)
				}
			}
		}
		for _, kw := range schemaLists {
			if l, ok := m[kw].([]any); ok {
				for i := range l {
					walk(sview{doc: v.doc, ptr: joinPath(joinPath(v.ptr, kw), strconv.Itoa(i)), v: l[i]}, depth+1)
				}
			}
		}
	}
	walk(sd.root(), 0)
}

func (ss *schemaSet) reportSchemaSecret(sd *schemaDoc, ptr, kw, format string, args ...any) {
	segs := append(splitPointer(ptr), kw)
	n := keyNodeFor(sd.node.YAML, segs)
	if n == nil {
		n = nodeAt(sd.node.YAML, segs)
	}
	ss.diags.errorf(CodeSecretLiteral, ss.src.rangeOf(n), sd.node.Path+ptr+"/"+kw, format, args...)
}

func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// keyNodeFor returns the key node of the last segment when it names a
// mapping member.
func keyNodeFor(n *yaml.Node, segs []string) *yaml.Node {
	if len(segs) == 0 {
		return nil
	}
	parent := nodeAt(n, segs[:len(segs)-1])
	if parent.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(parent.Content); i += 2 {
		if parent.Content[i].Value == segs[len(segs)-1] {
			return parent.Content[i]
		}
	}
	return nil
}

// secretPaths lists the JSON Pointers inside value that hold a non-null
// value for a secret-marked part of the schema.
func (ss *schemaSet) secretPaths(v sview, value any, at string, depth int) []string {
	if value == nil || depth > MaxNestingDepth || !v.known() {
		return nil
	}
	if ss.isSecret(v) {
		if at == "" {
			return []string{"/"}
		}
		return []string{at}
	}
	var out []string
	switch val := value.(type) {
	case map[string]any:
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, _ := ss.property(v, k)
			out = append(out, ss.secretPaths(p, val[k], joinPath(at, k), depth+1)...)
		}
	case []any:
		it := ss.items(v)
		for i, x := range val {
			out = append(out, ss.secretPaths(it, x, joinPath(at, strconv.Itoa(i)), depth+1)...)
		}
	}
	return out
}

// secretPointers lists the JSON Pointers (with "*" for any array element or
// map member) of the secret fields of a schema, for the artifact: kernels use
// them to redact values. Each schema location is analysed once (recursive
// references contribute nothing), and the list is capped at
// maxSecretPointers entries.
func (ss *schemaSet) secretPointers(v sview) []string {
	memo := map[string][]string{}
	var rel func(v sview, depth int) []string
	rel = func(v sview, depth int) []string {
		if !v.known() || depth > 16 {
			return nil
		}
		if ss.isSecret(v) {
			return []string{""}
		}
		r := ss.resolve(v)
		if !r.known() {
			return nil
		}
		key := r.doc.url + "#" + r.ptr
		if out, ok := memo[key]; ok {
			return out
		}
		memo[key] = nil // a recursive reference adds nothing new
		var out []string
		add := func(prefix string, sub []string) {
			for _, p := range sub {
				if len(out) < maxSecretPointers {
					out = append(out, prefix+p)
				}
			}
		}
		m := r.obj()
		if props, ok := m["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				add(joinPath("", k), rel(r.child("properties", k), depth+1))
			}
		}
		if _, ok := m["additionalProperties"].(map[string]any); ok {
			add("/*", rel(r.child("additionalProperties"), depth+1))
		}
		if it := ss.items(r); it.known() {
			add("/*", rel(it, depth+1))
		}
		memo[key] = out
		return out
	}
	out := rel(v, 0)
	for i, p := range out {
		if p == "" {
			out[i] = "/"
		}
	}
	return out
}

// maxSecretPointers caps the secret pointers listed for one schema.
const maxSecretPointers = 1000
