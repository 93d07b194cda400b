package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/agentbridge/bridge/platform/lang"
)

// This file serves executors outside the kernel: they evaluate the
// configuration of a task's binding and shape task outputs the way the
// kernel will accept them, with the kernel's own expression evaluator and
// schemas.

// configEnv is the expression environment of binding configurations: the
// variables input and connection, declared dyn (the compiler proved the
// types against the action's input schema).
var configEnv = sync.OnceValues(func() (*cel.Env, error) {
	opts := append(lang.ExprEnvOptions(),
		cel.Variable("input", cel.DynType),
		cel.Variable("connection", cel.DynType))
	return cel.NewEnv(opts...)
})

// EvalBindingConfig evaluates the config template of an adapter or
// connector binding (TaskSpec.Binding) for one task: its expressions see
// input (the task input, TaskSpec.Input) and connection (the bound
// connection's settings, JSON values). It answers the configuration as
// typed canonical JSON, or "null" when the binding has no config. An
// expression that fails (a missing field, the cost limit) is an error
// naming the expression.
func EvalBindingConfig(binding, input json.RawMessage, connection map[string]any) (json.RawMessage, error) {
	var b struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(binding, &b); err != nil {
		return nil, fmt.Errorf("binding: %w", err)
	}
	env, err := configEnv()
	if err != nil {
		return nil, fmt.Errorf("expression environment: %w", err)
	}
	c := &exprCompiler{env: env, cache: map[string]*expr{}}
	t, err := c.decodeTemplate(b.Config)
	if err != nil {
		return nil, fmt.Errorf("binding config: %w", err)
	}
	if t == nil {
		return nullJSON, nil
	}
	conn, err := fromGo(connection, 0)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	if connection == nil {
		conn = map[string]any{}
	}
	in := decodeCEL(input)
	if len(input) == 0 {
		in = toCEL(map[string]any{})
	}
	v, err := t.eval(map[string]any{"input": in, "connection": toCEL(conn)})
	if err != nil {
		return nil, err
	}
	return encodeValue(v)
}

// OutputProperties describes the pinned output schema of the action step
// node: whether the step has one, and the names of the top-level
// properties it declares (sorted; after following $ref). An unknown node
// has none.
func (p *Program) OutputProperties(node string) (names []string, declared bool) {
	return p.outputProperties(p.taskOutput(node, ""))
}

// SpecOutputProperties is OutputProperties for the task t: a tool call's
// task has its tool's output schema.
func (p *Program) SpecOutputProperties(t *TaskSpec) (names []string, declared bool) {
	return p.outputProperties(p.taskOutput(t.NodeID, specTool(t)))
}

func specTool(t *TaskSpec) string {
	if t.ToolCall != nil {
		return t.Ref
	}
	return ""
}

// taskOutput answers the pinned output schema of node's task, or of its
// tool's when tool is set (nil: none, or no such node).
func (p *Program) taskOutput(node, tool string) *schema {
	n := p.node(node)
	if n == nil {
		return nil
	}
	if tool != "" {
		if t := n.tools[tool]; t != nil {
			return t.output
		}
		return nil
	}
	return n.output
}

func (p *Program) outputProperties(s *schema) (names []string, declared bool) {
	if s == nil {
		return nil, false
	}
	r := s.set.resolve(s.root())
	m, _ := r.v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, true
}

// CheckTaskOutput answers the refusal task_completed with output would get
// for a task of the action step node: nil when the kernel accepts it, else
// an *Error with CodeValidation (the output is not JSON, is over
// MaxValueBytes or does not match the pinned output schema).
func (p *Program) CheckTaskOutput(node string, output json.RawMessage) error {
	return p.checkOutput(node, "", output)
}

// CheckSpecOutput is CheckTaskOutput for the task t (a tool call's task
// has its tool's output schema).
func (p *Program) CheckSpecOutput(t *TaskSpec, output json.RawMessage) error {
	return p.checkOutput(t.NodeID, specTool(t), output)
}

func (p *Program) checkOutput(node, tool string, output json.RawMessage) error {
	n := p.node(node)
	if n == nil {
		return refuse(CodeValidation, "no step %q", node)
	}
	if tool != "" && n.tools[tool] == nil {
		return refuse(CodeValidation, "step %q has no tool %q", node, tool)
	}
	m := &machine{p: p}
	_, err := m.externalOutput(output, p.taskOutput(node, tool), CodeValidation)
	var ke *Error
	if err != nil && !errors.As(err, &ke) {
		return refuseWrap(CodeValidation, err, "output")
	}
	return err
}

// CoerceStringInput converts the string values of a run input object whose
// top-level property the input schema declares with a type other than
// string (number, integer, boolean, array, object, null) by parsing them
// as JSON: "3" → 3, "true" → true, "[1,2]" → [1,2]. Values that do not
// parse, properties the schema types as string (or not at all) and
// everything else are left as they are; the start event's validation then
// decides. It is for callers that can only send strings (the bridge's
// workflow-runs inputs).
func (p *Program) CoerceStringInput(input json.RawMessage) (json.RawMessage, error) {
	if p.input == nil {
		return input, nil
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, fmt.Errorf("input must be a JSON object: %w", err)
	}
	r := p.input.set.resolve(p.input.root())
	m, _ := r.v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	changed := false
	for name, raw := range in {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			continue // not a string
		}
		prop, _ := props[name].(map[string]any)
		if prop == nil || !typedOtherThanString(prop["type"]) {
			continue
		}
		if !json.Valid([]byte(s)) {
			continue
		}
		in[name], changed = json.RawMessage(s), true
	}
	if !changed {
		return input, nil
	}
	return json.Marshal(in)
}

// typedOtherThanString reports whether a schema "type" value names types
// and string is not among them.
func typedOtherThanString(t any) bool {
	switch x := t.(type) {
	case string:
		return x != "string"
	case []any:
		for _, e := range x {
			if e == "string" {
				return false
			}
		}
		return len(x) > 0
	}
	return false
}
