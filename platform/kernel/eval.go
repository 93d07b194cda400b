package kernel

import (
	"fmt"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/agentbridge/bridge/platform/lang"
)

// valueCache keeps the CEL values built for one Step. The decoded stored
// values themselves live in the state's memo (memo.go) and last across
// Steps.
type valueCache struct {
	vars  ref.Val
	run   ref.Val
	items map[string]ref.Val // loop item by scope key
}

func (c *valueCache) invalidateVars() { c.vars = nil }

// decodeCEL decodes a typed raw value for CEL; a corrupt value (never
// written by the kernel) evaluates to an error value.
func decodeCEL(raw []byte) ref.Val {
	if len(raw) == 0 {
		return types.NullValue
	}
	v, err := decodeTyped(raw)
	if err != nil {
		return types.NewErr("corrupt state value: %v", err)
	}
	return toCEL(v)
}

// activation builds the variables an expression sees in a scope: input,
// steps (the outputs of the scope and its enclosing scopes), vars, now,
// run, and the loop variables of every enclosing forEach.
func (m *machine) activation(scope string) map[string]any {
	c := &m.cache
	st := m.st
	memo := m.memo()
	if c.vars == nil {
		vals := make(map[string]ref.Val, len(st.Vars))
		for k, raw := range st.Vars {
			vals[k] = memo.varVal(k, raw)
		}
		c.vars = newObject(vals)
	}
	if c.run == nil {
		c.run = newObject(map[string]ref.Val{
			"id":              types.String(st.RunID),
			"workflowId":      types.String(m.p.id),
			"workflowVersion": types.Int(m.p.version),
			"startedAt":       types.Timestamp{Time: st.StartedAt},
		})
	}
	act := map[string]any{
		"input": memo.inputVal(st.Input),
		"vars":  c.vars,
		"now":   types.Timestamp{Time: m.now},
		"run":   c.run,
		"steps": m.stepsVal(scope),
	}
	for key := scope; key != ""; {
		sc := st.Scopes[key]
		if sc == nil {
			break
		}
		if ln := m.p.node(sc.Loop); ln != nil {
			act[ln.as] = m.itemVal(key, sc)
			act[ln.index] = types.Int(sc.Index)
		}
		key = sc.Parent
	}
	return act
}

// stepsVal is the steps variable of a scope: the outputs of the scope and
// its enclosing scopes, looked up when an expression reads them
// (stepsObject), so building an activation does not grow with the number
// of completed steps.
func (m *machine) stepsVal(scope string) ref.Val {
	return &stepsObject{m: m, scope: scope}
}

func (m *machine) itemVal(key string, sc *Scope) ref.Val {
	c := &m.cache
	if v, ok := c.items[key]; ok {
		return v
	}
	var v ref.Val = types.NullValue
	if t := m.st.Tokens[sc.Container]; t != nil && t.Loop != nil && sc.Index < len(t.Loop.Items) {
		v = decodeCEL(t.Loop.Items[sc.Index])
	}
	if c.items == nil {
		c.items = map[string]ref.Val{}
	}
	c.items[key] = v
	return v
}

// evalString evaluates a template that must give a string (nil: "").
func evalString(t *template, act map[string]any, what string) (string, error) {
	v, err := t.eval(act)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	return "", fmt.Errorf("%s must be a string, not %s", what, lang.JSONTypeName(v))
}
