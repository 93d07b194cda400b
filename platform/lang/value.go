package lang

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/types"
	"gopkg.in/yaml.v3"
)

// Values compile to templates the kernel evaluates:
//
//	{"literal": <json>}            a constant
//	{"expr": "<cel>"}              one checked CEL expression
//	{"object": {"k": <template>}}  a mapping with expressions inside
//	{"list": [<template>...]}      a sequence with expressions inside
//
// Fully literal subtrees collapse into one literal, so kernels evaluate
// exactly the expressions the compiler checked and nothing else.

// literalJSON converts a literal subtree, unescaping "==" strings.
func literalJSON(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if isString(n) && strings.HasPrefix(n.Value, "==") {
			return n.Value[1:], nil
		}
		return scalarValue(n)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := literalJSON(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := literalJSON(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	}
	return nil, fmt.Errorf("unsupported YAML node")
}

// valueSpec says what a value must be.
type valueSpec struct {
	schema sview  // target JSON Schema, may be unknown
	label  string // name for derived CEL types, e.g. "acme/send-email@2.input"
	what   string // for messages, e.g. "the input of step charge"
}

// compileValue compiles a value against a target schema: literal parts are
// validated with JSON Schema, expression parts are type-checked against the
// CEL type derived from the schema, and literal secrets are refused.
func (c *compiler) compileValue(v *Value, ctx exprCtx, spec valueSpec) any {
	if v == nil {
		return nil
	}
	return c.valueNode(v.YAML, v.Path, ctx, spec, 0)
}

func (c *compiler) valueNode(n *yaml.Node, path string, ctx exprCtx, spec valueSpec, depth int) any {
	if isExpr(n) {
		var want *types.Type
		if spec.schema.known() {
			want = c.ss.celType(spec.schema, spec.label)
		}
		c.addExpr(ctx, n, path, c.wantType(want, spec.what))
		return map[string]any{"expr": exprText(n)}
	}
	if depth > MaxNestingDepth || !hasExpr(n) {
		val, err := literalJSON(n)
		if err != nil {
			c.diags.errorf(CodeType, c.src.rangeOf(n), path, "%v", err)
			return map[string]any{"literal": nil}
		}
		c.checkLiteral(n, path, spec, val)
		return map[string]any{"literal": val}
	}
	switch n.Kind {
	case yaml.MappingNode:
		c.checkShape(n, path, spec, "object")
		obj := map[string]any{}
		present := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			present[k.Value] = true
			prop, closed := c.ss.property(spec.schema, k.Value)
			if closed && spec.schema.known() {
				c.diags.errorf(CodeSchemaMismatch, c.src.rangeOf(k), joinPath(path, k.Value), "%s has no field %q", spec.what, k.Value)
			}
			obj[k.Value] = c.valueNode(val, joinPath(path, k.Value), ctx,
				valueSpec{schema: prop, label: spec.label + "." + k.Value, what: spec.what + "." + k.Value}, depth+1)
		}
		var missing []string
		for _, r := range c.ss.required(spec.schema) {
			if !present[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			c.diags.errorf(CodeSchemaMismatch, c.src.rangeOf(n), path, "%s is missing required field %s", spec.what, strings.Join(missing, ", "))
		}
		return map[string]any{"object": obj}
	case yaml.SequenceNode:
		c.checkShape(n, path, spec, "array")
		items := c.ss.items(spec.schema)
		list := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			list = append(list, c.valueNode(e, joinPath(path, strconv.Itoa(i)), ctx,
				valueSpec{schema: items, label: spec.label + "[]", what: fmt.Sprintf("%s[%d]", spec.what, i)}, depth+1))
		}
		return map[string]any{"list": list}
	}
	return map[string]any{"literal": nil}
}

// checkShape reports a mapping or sequence where the schema wants another
// JSON type.
func (c *compiler) checkShape(n *yaml.Node, path string, spec valueSpec, jsonType string) {
	r := c.ss.resolve(spec.schema)
	m := r.obj()
	if m == nil {
		return
	}
	var allowed []string
	switch t := m["type"].(type) {
	case string:
		allowed = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				allowed = append(allowed, s)
			}
		}
	default:
		return
	}
	if !contains(allowed, jsonType) {
		c.diags.errorf(CodeSchemaMismatch, c.src.rangeOf(n), path, "%s must be %s, not %s", spec.what, strings.Join(allowed, " or "), jsonType)
	}
}

// checkLiteral validates a literal against the target schema and refuses
// literal values for secret fields.
func (c *compiler) checkLiteral(n *yaml.Node, path string, spec valueSpec, val any) {
	if !spec.schema.known() {
		return
	}
	if paths := c.ss.secretPaths(spec.schema, val, "", 0); len(paths) > 0 {
		for _, p := range paths {
			segs := splitPointer(strings.TrimPrefix(p, "/"))
			if p == "/" {
				segs = nil
			}
			at := nodeAt(n, segs)
			c.diags.errorf(CodeSecretLiteral, c.src.rangeOf(at), path+JSONPointer(segs),
				"%s is a secret or write-only field: its value must come from an expression (such as =input.%s), never from a literal in the source", spec.what+dotted(segs), lastSeg(spec.what, segs))
		}
		return
	}
	problems := c.ss.validateLiteral(spec.schema, val)
	sort.SliceStable(problems, func(i, j int) bool { return JSONPointer(problems[i].at) < JSONPointer(problems[j].at) })
	for _, p := range problems {
		at := nodeAt(n, p.at)
		c.diags.errorf(CodeSchemaMismatch, c.src.rangeOf(at), path+JSONPointer(p.at), "%s: %s", spec.what+dotted(p.at), p.msg)
	}
}

// dotted renders path segments as ".a.b" (or "[2]" for indices) for messages.
func dotted(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		if _, err := strconv.Atoi(s); err == nil {
			b.WriteString("[" + s + "]")
		} else {
			b.WriteString("." + s)
		}
	}
	return b.String()
}

func lastSeg(what string, segs []string) string {
	if len(segs) > 0 {
		return segs[len(segs)-1]
	}
	if i := strings.LastIndexAny(what, ". "); i >= 0 {
		return what[i+1:]
	}
	return "secret"
}

// literal kinds for fields with a fixed type.
type fieldKind int

const (
	fieldBool fieldKind = iota
	fieldString
	fieldList
	fieldStringOrStringList
	fieldDuration
	fieldAny
)

// compileField compiles a value-or-expression field with a fixed type.
func (c *compiler) compileField(v *Value, ctx exprCtx, kind fieldKind, what string) any {
	if v == nil {
		return nil
	}
	n := v.YAML
	if isExpr(n) {
		c.addExpr(ctx, n, v.Path, fieldCheck(kind, what))
		return map[string]any{"expr": exprText(n)}
	}
	switch kind {
	case fieldBool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			c.diags.errorf(CodeType, c.src.rangeOf(n), v.Path, "%s must be a boolean or an expression (=...)", what)
		}
	case fieldString:
		if !isString(n) {
			c.diags.errorf(CodeType, c.src.rangeOf(n), v.Path, "%s must be a string or an expression (=...)", what)
		}
	case fieldList:
		if n.Kind != yaml.SequenceNode {
			c.diags.errorf(CodeType, c.src.rangeOf(n), v.Path, "%s must be a list or an expression (=...)", what)
		}
	case fieldStringOrStringList:
		if n.Kind == yaml.SequenceNode {
			return c.valueNode(n, v.Path, ctx, valueSpec{schema: c.builtinSchema(`{"type":"array","items":{"type":"string"}}`), label: "strings", what: what}, 0)
		}
		if !isString(n) {
			c.diags.errorf(CodeType, c.src.rangeOf(n), v.Path, "%s must be a string, a list of strings or an expression", what)
		}
	case fieldDuration:
		if !isString(n) {
			c.diags.errorf(CodeDuration, c.src.rangeOf(n), v.Path, "%s must be a duration such as 30s or an expression", what)
			return nil
		}
		ms, err := ParseDuration(n.Value)
		if err != nil {
			c.diags.errorf(CodeDuration, c.src.rangeOf(n), v.Path, "%s: %v", what, err)
			return nil
		}
		return map[string]any{"literal": ms}
	}
	if hasExpr(n) {
		return c.valueNode(n, v.Path, ctx, valueSpec{}, 0)
	}
	val, err := literalJSON(n)
	if err != nil {
		c.diags.errorf(CodeType, c.src.rangeOf(n), v.Path, "%v", err)
	}
	return map[string]any{"literal": val}
}

func fieldCheck(kind fieldKind, what string) func(*types.Type) string {
	accept := func(t *types.Type, kinds ...types.Kind) bool {
		k := t.Kind()
		if k == types.DynKind || k == types.AnyKind || k == types.ErrorKind {
			return true
		}
		for _, want := range kinds {
			if k == want {
				return true
			}
		}
		return false
	}
	return func(t *types.Type) string {
		switch kind {
		case fieldBool:
			if !accept(t, types.BoolKind) {
				return fmt.Sprintf("%s must be a bool expression, but the expression is %s", what, typeString(t))
			}
		case fieldString:
			if !accept(t, types.StringKind) {
				return fmt.Sprintf("%s must be a string expression, but the expression is %s (convert with string(...))", what, typeString(t))
			}
		case fieldList:
			if !accept(t, types.ListKind) {
				return fmt.Sprintf("%s must be a list, but the expression is %s", what, typeString(t))
			}
		case fieldStringOrStringList:
			if t.Kind() == types.ListKind {
				if ek := param(t, 0).Kind(); ek != types.StringKind && ek != types.DynKind {
					return fmt.Sprintf("%s must be a string or a list of strings, but the expression is %s", what, typeString(t))
				}
				return ""
			}
			if !accept(t, types.StringKind) {
				return fmt.Sprintf("%s must be a string or a list of strings, but the expression is %s", what, typeString(t))
			}
		case fieldDuration:
			if !accept(t, types.DurationKind, types.StringKind) {
				return fmt.Sprintf("%s must be a duration (e.g. duration('5m')) or a duration string, but the expression is %s", what, typeString(t))
			}
		}
		return ""
	}
}
