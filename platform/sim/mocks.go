package sim

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/agentbridge/bridge/platform/kernel"
)

// Mock is one outcome of a mocked call: exactly one of Output (the call
// succeeds), Error (it fails; Retryable lets the action's retry policy
// retry it) and Outcome "unknown" (task_outcome_unknown).
type Mock struct {
	Output    json.RawMessage   `json:"output,omitempty"`
	Error     *kernel.TaskError `json:"error,omitempty"`
	Retryable bool              `json:"retryable,omitempty"`
	Outcome   string            `json:"outcome,omitempty"`
	// ToolCalls (editor host, agent steps only) are the calls of its
	// tools the simulated agent makes before it answers: each goes through
	// the kernel as in production (agent_tool_called, the tool's action as
	// a task of its own) and is answered by a tool:<reference> mock, else
	// action:<reference>.
	ToolCalls []ToolCallMock `json:"toolCalls,omitempty"`
}

// ToolCallMock is one call of an agent step's tool: the tool (an action
// reference the step lists) and its input.
type ToolCallMock struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
}

// Mocks are the outcomes by mock key. A key's list is used in order, one
// per call; the last repeats.
type Mocks map[string][]Mock

// Mock key prefixes (docs/platform-api.md, "Mock keys").
const (
	KeyAction   = "action:"
	KeyNode     = "node:"
	KeyWorkflow = "workflow:"
	KeyTool     = "tool:"
	KeyAgent    = "agent:"
)

// maxOutcomes bounds the outcomes of one mock key; maxMockToolCalls the
// tool calls of one agent outcome (an attempt of an agent step makes at
// most 256, docs/workflow-language.md, "Agent-step tools").
const (
	maxOutcomes      = 100
	maxMockToolCalls = 256
)

// DecodeMocks reads a mocks object: each value is an outcome or a list of
// 1 to 100 outcomes. at is the JSON Pointer of the object in the request.
func DecodeMocks(raw json.RawMessage, at string) (Mocks, error) {
	out := Mocks{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := decodeStrict(raw, &obj, CodeRequest, at, "mocks must be an object of mock keys"); err != nil {
		return nil, err
	}
	for k, v := range obj {
		path := at + "/" + escape(k)
		v = bytes.TrimSpace(v)
		var list []json.RawMessage
		if len(v) > 0 && v[0] == '[' {
			if err := json.Unmarshal(v, &list); err != nil || len(list) == 0 || len(list) > maxOutcomes {
				return nil, refuse(CodeRequest, path, "a mock is an outcome or a list of 1 to %d outcomes", maxOutcomes)
			}
		} else {
			list = []json.RawMessage{v}
		}
		for i, item := range list {
			p := path
			if len(list) > 1 || (len(v) > 0 && v[0] == '[') {
				p = path + "/" + itoa(i)
			}
			m, err := decodeOutcome(item, p)
			if err != nil {
				return nil, err
			}
			out[k] = append(out[k], m)
		}
	}
	return out, nil
}

func decodeOutcome(raw json.RawMessage, path string) (Mock, error) {
	var m Mock
	if err := decodeStrict(raw, &m, CodeRequest, path, `an outcome is {output}, {error: {code, message}, retryable} or {outcome: "unknown"}`); err != nil {
		return m, err
	}
	n := 0
	if len(m.Output) > 0 {
		n++
	}
	if m.Error != nil {
		n++
		if strings.TrimSpace(m.Error.Code) == "" {
			return m, refuse(CodeRequest, path+"/error/code", "an error outcome needs a code")
		}
	}
	if m.Outcome != "" {
		n++
		if m.Outcome != "unknown" {
			return m, refuse(CodeRequest, path+"/outcome", "outcome must be \"unknown\"")
		}
	}
	if n != 1 {
		return m, refuse(CodeRequest, path, "an outcome has exactly one of output, error and outcome")
	}
	if m.Retryable && m.Error == nil {
		return m, refuse(CodeRequest, path+"/retryable", "retryable belongs to an error outcome")
	}
	for i, c := range m.ToolCalls {
		if strings.TrimSpace(c.Tool) == "" {
			return m, refuse(CodeRequest, path+"/toolCalls/"+itoa(i)+"/tool", "a tool call names its tool")
		}
	}
	if len(m.ToolCalls) > maxMockToolCalls {
		return m, refuse(CodeRequest, path+"/toolCalls", "at most %d tool calls", maxMockToolCalls)
	}
	return m, nil
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// checkMocks validates mock keys against the program (PF-DEBUG-MOCK-KEY),
// outputs against the pinned output schemas of the nodes they answer
// (PF-DEBUG-MOCK-OUTPUT) and refuses secret-marked values
// (PF-SCHEMA-SECRET_VALUE). studio allows the editor host's agent: and
// tool: keys.
func (p *Program) checkMocks(ms Mocks, at string, studio bool) error {
	keys := make([]string, 0, len(ms))
	for k := range ms {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		nodes, err := p.mockNodes(k, studio)
		if err != nil {
			return refuse(CodeMockKey, at+"/"+escape(k), "%v", err)
		}
		for i, m := range ms[k] {
			path := at + "/" + escape(k)
			if len(ms[k]) > 1 {
				path += "/" + itoa(i)
			}
			if err := p.checkToolCalls(k, nodes, m, path, studio); err != nil {
				return err
			}
			if err := p.checkToolSecrets(k, m, path); err != nil {
				return err
			}
			if len(m.Output) == 0 {
				continue
			}
			for _, n := range nodes {
				if err := p.kp.CheckOutput(n, m.Output); err != nil {
					return refuse(CodeMockOutput, path+"/output", "the mock output for node %s does not match the pinned output schema: %v", n, err)
				}
				if loc, ok := secretAt(m.Output, p.secrets.Steps[n]); ok {
					return refuse(CodeSecretValue, path+"/output"+loc, "the mock output holds a value the output schema of node %s marks secret", n)
				}
			}
		}
	}
	return nil
}

// checkToolCalls allows tool calls in an editor host outcome of agent
// steps only, each of a tool the step lists.
func (p *Program) checkToolCalls(key string, nodes []string, m Mock, path string, studio bool) error {
	if len(m.ToolCalls) == 0 {
		return nil
	}
	if !studio {
		return refuse(CodeRequest, path+"/toolCalls", "tool calls are mocked in the editor host only")
	}
	if len(nodes) == 0 {
		return refuse(CodeMockKey, path+"/toolCalls", "the mock %s answers no agent step: only agent steps make tool calls", key)
	}
	for _, n := range nodes {
		if p.nodes[n].Kind != "agent" {
			return refuse(CodeMockKey, path+"/toolCalls", "node %s is a %s step: only agent steps make tool calls", n, p.nodes[n].Kind)
		}
		for i, c := range m.ToolCalls {
			if !p.nodes[n].Tools[c.Tool] {
				return refuse(CodeMockKey, path+"/toolCalls/"+itoa(i)+"/tool", "the agent step %s does not list the tool %s", n, c.Tool)
			}
		}
	}
	return nil
}

// checkToolSecrets refuses secret-marked values of agent tool calls: in a
// mocked tool call's input, and in an output that may answer a tool call
// (tool:<reference> and action:<reference> keys), by the tool's pinned
// schemas.
func (p *Program) checkToolSecrets(key string, m Mock, path string) error {
	for i, c := range m.ToolCalls {
		if loc, ok := secretAt(c.Input, p.secrets.ToolInputs[c.Tool]); ok {
			return refuse(CodeSecretValue, path+"/toolCalls/"+itoa(i)+"/input"+loc, "the tool call's input holds a value the input schema of %s marks secret", c.Tool)
		}
	}
	ref, ok := strings.CutPrefix(key, KeyTool)
	if !ok {
		ref, ok = strings.CutPrefix(key, KeyAction)
	}
	if !ok || len(m.Output) == 0 {
		return nil
	}
	if loc, ok := secretAt(m.Output, p.secrets.ToolOutputs[ref]); ok {
		return refuse(CodeSecretValue, path+"/output"+loc, "the mock output holds a value the output schema of the tool %s marks secret", ref)
	}
	return nil
}

type keyError string

func (e keyError) Error() string { return string(e) }

// mockNodes answers the nodes a mock key answers.
func (p *Program) mockNodes(key string, studio bool) ([]string, error) {
	switch {
	case strings.HasPrefix(key, KeyNode):
		id := strings.TrimPrefix(key, KeyNode)
		if studio {
			// the editor host also takes instance keys (greet[2])
			if node, ok := p.nodeOfKey(id); ok {
				id = node
			}
		}
		n, ok := p.nodes[id]
		if !ok {
			return nil, keyError("no node " + id)
		}
		switch n.Kind {
		case "action", "workflow", "agent":
			return []string{id}, nil
		}
		return nil, keyError("node " + id + " is a " + n.Kind + " step; only action, agent and workflow steps are mocked")
	case strings.HasPrefix(key, KeyAction), strings.HasPrefix(key, KeyWorkflow):
		if _, ok := p.refs[key]; !ok {
			return nil, keyError("the artifact references no " + key)
		}
		kind, ref := "action", strings.TrimPrefix(key, KeyAction)
		if strings.HasPrefix(key, KeyWorkflow) {
			kind, ref = "workflow", strings.TrimPrefix(key, KeyWorkflow)
		}
		var out []string
		for _, id := range p.order {
			if n := p.nodes[id]; n.Kind == kind && n.Ref == ref {
				out = append(out, id)
			}
		}
		return out, nil
	case studio && strings.HasPrefix(key, KeyAgent):
		id := strings.TrimPrefix(key, KeyAgent)
		if n, ok := p.nodes[id]; !ok || n.Kind != "agent" {
			return nil, keyError("no agent step " + id)
		}
		return []string{id}, nil
	case studio && strings.HasPrefix(key, KeyTool):
		if !p.tools[strings.TrimPrefix(key, KeyTool)] {
			return nil, keyError("no agent step lists the tool " + strings.TrimPrefix(key, KeyTool))
		}
		return nil, nil
	}
	return nil, keyError("a mock key is action:<reference>, node:<node id> or workflow:<reference>")
}

// lookupTool answers the mock of an agent tool call's action: the
// editor host's tool:<reference>, else action:<reference>.
func (ms Mocks) lookupTool(calls map[string]int, ref string) (string, Mock, bool) {
	return ms.lookupKeys(calls, KeyTool+ref, KeyAction+ref)
}

// lookup answers the mock key and outcome for a call of node at instance
// (refKey its reference key, action: or workflow:), consuming one use:
// node:<instance key> (editor host), then node:<id>, then agent:<id>
// (editor host), then the reference key.
func (ms Mocks) lookup(calls map[string]int, node, instance, refKey string) (string, Mock, bool) {
	return ms.lookupKeys(calls, KeyNode+instance, KeyNode+node, KeyAgent+node, refKey)
}

// lookupKeys answers the first of keys that has a mock, consuming one use.
func (ms Mocks) lookupKeys(calls map[string]int, keys ...string) (string, Mock, bool) {
	for _, k := range keys {
		list, ok := ms[k]
		if !ok || len(list) == 0 || k == "" {
			continue
		}
		i := calls[k]
		calls[k] = i + 1
		if i >= len(list) {
			i = len(list) - 1
		}
		return k, list[i], true
	}
	return "", Mock{}, false
}
