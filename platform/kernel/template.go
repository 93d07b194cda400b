package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types/ref"
)

// template is a compiled value template of the artifact:
// {"literal": v} | {"expr": "<cel>"} | {"object": {k: t}} | {"list": [t]}.
type template struct {
	lit    any // literal IR; shared, never mutated
	expr   *expr
	keys   []string // object: sorted keys
	fields []*template
	items  []*template
	kind   byte // 'l' literal, 'e' expr, 'o' object, 'a' list
}

// expr is one parsed CEL expression, shared by identical texts.
type expr struct {
	src string
	prg cel.Program
}

// exprCompiler parses each distinct expression text once.
type exprCompiler struct {
	env   *cel.Env
	cache map[string]*expr
}

func (c *exprCompiler) compile(src string) (*expr, error) {
	if e, ok := c.cache[src]; ok {
		return e, nil
	}
	// Parsed, not checked: the kernel declares every variable dyn, and the
	// compiler already proved the types; the lang sum() binding serves both
	// overloads for unchecked evaluation.
	ast, iss := c.env.Parse(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("expression %q: %w", src, iss.Err())
	}
	prg, err := c.env.Program(ast, exprProgramOptions()...)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	e := &expr{src: src, prg: prg}
	c.cache[src] = e
	return e, nil
}

// decodeTemplate compiles a template; JSON null (or absence) gives nil.
func (c *exprCompiler) decodeTemplate(raw json.RawMessage) (*template, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return c.templateOf(v, 0)
}

func (c *exprCompiler) templateOf(v any, depth int) (*template, error) {
	if depth > maxValueDepth {
		return nil, errTooDeep
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("template: want an object with one of literal, expr, object, list")
	}
	for k, body := range m {
		switch k {
		case "literal":
			return &template{kind: 'l', lit: typeNumbers(body)}, nil
		case "expr":
			src, ok := body.(string)
			if !ok {
				return nil, errors.New("template: expr must be a string")
			}
			e, err := c.compile(src)
			if err != nil {
				return nil, err
			}
			return &template{kind: 'e', expr: e}, nil
		case "object":
			obj, ok := body.(map[string]any)
			if !ok {
				return nil, errors.New("template: object must be an object")
			}
			t := &template{kind: 'o'}
			for key := range obj {
				t.keys = append(t.keys, key)
			}
			sort.Strings(t.keys)
			for _, key := range t.keys {
				f, err := c.templateOf(obj[key], depth+1)
				if err != nil {
					return nil, err
				}
				t.fields = append(t.fields, f)
			}
			return t, nil
		case "list":
			list, ok := body.([]any)
			if !ok {
				return nil, errors.New("template: list must be an array")
			}
			t := &template{kind: 'a'}
			for _, e := range list {
				it, err := c.templateOf(e, depth+1)
				if err != nil {
					return nil, err
				}
				t.items = append(t.items, it)
			}
			return t, nil
		}
		return nil, fmt.Errorf("template: unknown form %q", k)
	}
	return nil, errors.New("template: empty")
}

// exprError is an expression that failed at run time; the run fails with
// it. Exceeding the cost limit is told apart because it fails the run with
// another code.
type exprError struct {
	src       string
	err       error
	costLimit bool
}

func (e *exprError) Error() string {
	src := e.src
	if len(src) > 200 {
		src = src[:200] + "…"
	}
	return fmt.Sprintf("expression %q: %v", src, e.err)
}

// evalVal evaluates an expression to a CEL value.
func (e *expr) evalVal(act map[string]any) (ref.Val, error) {
	out, _, err := e.prg.Eval(act)
	if err != nil {
		return nil, &exprError{src: e.src, err: err, costLimit: strings.Contains(err.Error(), "cost limit exceeded")}
	}
	return out, nil
}

// eval evaluates a template into IR.
func (t *template) eval(act map[string]any) (any, error) {
	if t == nil {
		return nil, nil
	}
	switch t.kind {
	case 'l':
		return t.lit, nil
	case 'e':
		v, err := t.expr.evalVal(act)
		if err != nil {
			return nil, err
		}
		out, err := fromCEL(v, 0)
		if err != nil {
			return nil, &exprError{src: t.expr.src, err: err}
		}
		return out, nil
	case 'o':
		out := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			v, err := t.fields[i].eval(act)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case 'a':
		out := make([]any, len(t.items))
		for i, it := range t.items {
			v, err := it.eval(act)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, errors.New("invalid template")
}
