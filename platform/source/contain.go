package source

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/lang"
)

// The static schema containment check (docs/platform-api.md: "Static schema containment
// is checked for every dispatchable event kind at creation"): the value a
// source's mapping gives for an event of a dispatchable kind must fit the
// target schema (the workflow input for kind run, the waiting signal
// steps' payload schema for kind signal) for every event the kind's schema
// allows. What the check can prove: the JSON types of the mapped value and
// its properties, the target's required properties and closed objects.
// Parts of a mapping whose type the expression checker cannot know (dyn)
// are left to the dispatch-time validation, which fails the receipt.

// mappingEnv is the expression environment of mappings: input is dyn
// here (its shape is walked below), as in the kernel's evaluator.
var mappingEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(append(lang.ExprEnvOptions(), cel.Variable("input", cel.DynType))...)
})

// inputFields are the properties of a mapping's input besides event.
var inputFields = []string{"kind", "event_id", "account_id"}

// containmentError is 422 PF-VALIDATION located at /mapping.
func containmentError(code, format string, args ...any) *api.Error {
	msg := fmt.Sprintf(format, args...)
	return &api.Error{Code: api.CodeValidation,
		Message:     "the mapping cannot type-check against the event schema and the target: " + msg,
		Diagnostics: []api.Diagnostic{{Code: code, Path: "/mapping", Message: msg}}}
}

// compileMapping parses and checks a mapping ("" is none).
func compileMapping(mapping string) (*cel.Ast, error) {
	if mapping == "" {
		return nil, nil
	}
	env, err := mappingEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(mapping)
	if iss != nil && iss.Err() != nil {
		return nil, containmentError("mapping_syntax", "the mapping does not compile: %s", strings.TrimSpace(iss.Err().Error()))
	}
	return ast, nil
}

// checkContainment checks the mapping (compiled, nil for none) of events
// of kind with schema event against each target schema.
func checkContainment(ast *cel.Ast, kind string, event json.RawMessage, targets []json.RawMessage, what string, object bool) error {
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		return fmt.Errorf("source: event schema of %s: %w", kind, err)
	}
	result := ev
	if ast != nil {
		na := ast.NativeRep()
		var err error
		if result, err = shapeOf(na, na.Expr(), ev, kind); err != nil {
			return err
		}
	}
	if object && result != nil && !typesAllow([]string{"object"}, typesOf(result)) {
		return containmentError("schema_containment", "event kind %s: %s must be a JSON object; the mapping gives %s", kind, what, strings.Join(typesOf(result), " or "))
	}
	for _, raw := range targets {
		var target any
		if err := json.Unmarshal(raw, &target); err != nil {
			return fmt.Errorf("source: target schema: %w", err)
		}
		if err := contained(result, target, ""); err != "" {
			return containmentError("schema_containment", "event kind %s: %s: %s", kind, what, err)
		}
	}
	return nil
}

// shapeOf is the schema of the values e gives (nil: unknown).
func shapeOf(na *celast.AST, e celast.Expr, ev map[string]any, kind string) (map[string]any, error) {
	switch e.Kind() {
	case celast.SelectKind, celast.IdentKind:
		path, ok := selectPath(e)
		if !ok || len(path) == 0 || path[0] != "input" {
			break
		}
		if len(path) == 1 {
			return nil, nil
		}
		if slices.Contains(inputFields, path[1]) {
			if len(path) > 2 {
				return nil, containmentError("schema_containment", "input.%s is a string", path[1])
			}
			return map[string]any{"type": "string"}, nil
		}
		if path[1] != "event" {
			return nil, containmentError("schema_containment", "the mapping reads input.%s; input has event, kind, event_id and account_id", path[1])
		}
		cur := ev
		for i, name := range path[2:] {
			props, _ := cur["properties"].(map[string]any)
			next, ok := props[name].(map[string]any)
			if !ok {
				if cur["additionalProperties"] == false {
					return nil, containmentError("schema_containment", "the normalized %s event has no property %s", kind, strings.Join(path[2:i+3], "."))
				}
				return nil, nil
			}
			if !slices.Contains(stringsOf(cur["required"]), name) && (e.Kind() != celast.SelectKind || !e.AsSelect().IsTestOnly()) {
				// An optional property may be absent: reading it fails at
				// dispatch (the receipt fails), so its type still counts.
				next = cloneWith(next, "optional", true)
			}
			cur = next
		}
		return cur, nil
	case celast.MapKind:
		props := map[string]any{}
		var required []string
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			if me.Key().Kind() != celast.LiteralKind {
				return map[string]any{"type": "object"}, nil
			}
			k, ok := me.Key().AsLiteral().Value().(string)
			if !ok {
				return map[string]any{"type": "object"}, nil
			}
			v, err := shapeOf(na, me.Value(), ev, kind)
			if err != nil {
				return nil, err
			}
			if v == nil {
				v = map[string]any{}
			}
			props[k] = v
			if !me.IsOptional() {
				required = append(required, k)
			}
		}
		sort.Strings(required)
		return map[string]any{"type": "object", "properties": props, "required": toAny(required)}, nil
	}
	switch t := na.GetType(e.ID()); {
	case t == nil:
	case t.Kind() == types.StringKind:
		return map[string]any{"type": "string"}, nil
	case t.Kind() == types.IntKind || t.Kind() == types.UintKind:
		return map[string]any{"type": "integer"}, nil
	case t.Kind() == types.DoubleKind:
		return map[string]any{"type": "number"}, nil
	case t.Kind() == types.BoolKind:
		return map[string]any{"type": "boolean"}, nil
	case t.Kind() == types.ListKind:
		return map[string]any{"type": "array"}, nil
	case t.Kind() == types.MapKind:
		return map[string]any{"type": "object"}, nil
	case t.Kind() == types.NullTypeKind:
		return map[string]any{"type": "null"}, nil
	}
	return nil, nil
}

// selectPath answers the names of a chain of field selections on an
// identifier (input.event.text: input, event, text).
func selectPath(e celast.Expr) ([]string, bool) {
	var rev []string
	for e.Kind() == celast.SelectKind {
		s := e.AsSelect()
		rev = append(rev, s.FieldName())
		e = s.Operand()
	}
	if e.Kind() != celast.IdentKind {
		return nil, false
	}
	rev = append(rev, e.AsIdent())
	slices.Reverse(rev)
	return rev, true
}

// contained answers "" when every value of schema result fits target, else
// why not (at ptr, a JSON Pointer into the mapped value).
func contained(result map[string]any, target any, ptr string) string {
	tm, ok := target.(map[string]any)
	if !ok || result == nil {
		return "" // true, null (none declared) or unknown: nothing to prove
	}
	at := ptr
	if at == "" {
		at = "the value"
	}
	want, got := typesOf(tm), typesOf(result)
	if len(want) > 0 && len(got) > 0 && !typesAllow(want, got) {
		return fmt.Sprintf("%s is %s where the target wants %s", at, strings.Join(got, " or "), strings.Join(want, " or "))
	}
	if !slices.Contains(got, "object") || (len(want) > 0 && !slices.Contains(want, "object")) {
		return ""
	}
	rprops, _ := result["properties"].(map[string]any)
	tprops, _ := tm["properties"].(map[string]any)
	rreq := stringsOf(result["required"])
	for _, name := range stringsOf(tm["required"]) {
		p, ok := rprops[name].(map[string]any)
		if !ok || !slices.Contains(rreq, name) || p["optional"] == true {
			return fmt.Sprintf("%s/%s is required by the target, but the mapped event does not always have it", ptr, name)
		}
	}
	names := make([]string, 0, len(rprops))
	for name := range rprops {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rp, _ := rprops[name].(map[string]any)
		tp, ok := tprops[name]
		if !ok {
			if tm["additionalProperties"] == false {
				return fmt.Sprintf("%s/%s is not allowed by the target (additionalProperties is false)", ptr, name)
			}
			if ap, ok := tm["additionalProperties"].(map[string]any); ok {
				tp = ap
			} else {
				continue
			}
		}
		if why := contained(rp, tp, ptr+"/"+name); why != "" {
			return why
		}
	}
	return ""
}

// typesOf answers the JSON types a schema allows (none: any).
func typesOf(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		return stringsOf(t)
	}
	return nil
}

// typesAllow reports whether every type of got is one of want (an integer
// is a number).
func typesAllow(want, got []string) bool {
	for _, g := range got {
		if !slices.Contains(want, g) && (g != "integer" || !slices.Contains(want, "number")) {
			return false
		}
	}
	return true
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func cloneWith(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}
