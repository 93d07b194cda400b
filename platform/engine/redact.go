package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/platform/kernel"
)

// redacted replaces secret values wherever run values are shown or
// published: run views, history, human tasks and outbox events.
const redacted = "[redacted]"

// secrets says where a program's run values hold secrets (kernel.Secrets),
// with the unions that history events need: a task, child or incident
// outcome names its task or incident, not its node or tool, so any node's
// or agent tool's secret output positions are redacted in it.
type secrets struct {
	kernel.Secrets
	anyStep, anyForm []string
	// none: the program holds no secret anywhere (the common case), so
	// events need not be decoded.
	none bool
}

func newSecrets(p *kernel.Program) secrets { return secretsOf(p.Secrets()) }

func secretsOf(ks kernel.Secrets) secrets {
	s := secrets{Secrets: ks}
	s.anyStep = mergeUnion(union(s.Steps), union(s.ToolOutputs))
	s.anyForm = union(s.Forms)
	s.none = len(s.Input)+len(s.Output)+len(s.Vars)+len(s.anyStep)+len(s.anyForm)+len(s.Signals)+len(s.ToolInputs) == 0
	return s
}

// union answers the sorted, distinct pointers of every entry of m.
func union(m map[string][]string) []string {
	var out []string
	for _, ptrs := range m {
		out = append(out, ptrs...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// mergeUnion answers the sorted, distinct pointers of a and b.
func mergeUnion(a, b []string) []string {
	out := append(a, b...)
	sort.Strings(out)
	return slices.Compact(out)
}

// toolCall answers an agent tool call's input and output with the values
// the tool's pinned schemas mark secret redacted: what a record of the
// call (the job's audit) may keep. It is the redaction history applies to
// the call's events.
func (s secrets) toolCall(tool string, input, output json.RawMessage) (json.RawMessage, json.RawMessage) {
	return redact(input, s.ToolInputs[tool]), redact(output, s.ToolOutputs[tool])
}

// vars answers a run's variables with secret values redacted.
func (s secrets) vars(vars map[string]json.RawMessage) map[string]json.RawMessage {
	if len(s.Vars) == 0 {
		return vars
	}
	out := make(map[string]json.RawMessage, len(vars))
	for name, v := range vars {
		out[name] = redact(v, s.Vars[name])
	}
	return out
}

// event answers a stored kernel event with the secret values it carries
// redacted: a run input, a task, child or reconciled output, a signal
// payload, human task data or an agent tool call's input.
func (s secrets) event(payload json.RawMessage) (json.RawMessage, error) {
	if s.none {
		return payload, nil
	}
	var e kernel.Event
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, fmt.Errorf("engine: stored event: %w", err)
	}
	var field *json.RawMessage
	var ptrs []string
	switch e.Kind {
	case kernel.EventStarted:
		field, ptrs = &e.Input, s.Input
	case kernel.EventTaskCompleted, kernel.EventChildCompleted, kernel.EventIncidentResolved:
		field, ptrs = &e.Output, s.anyStep
	case kernel.EventSignalReceived:
		field, ptrs = &e.Payload, s.Signals[e.Signal]
	case kernel.EventHumanCompleted:
		field, ptrs = &e.Data, s.anyForm
	case kernel.EventAgentToolCalled:
		field, ptrs = &e.Input, s.ToolInputs[e.Tool]
	}
	if field == nil || len(*field) == 0 || len(ptrs) == 0 {
		return payload, nil
	}
	*field = redact(*field, ptrs)
	out, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("engine: encode event: %w", err)
	}
	return out, nil
}

// redact replaces the values at pointers ("*" matches any element, ""
// the whole value) in raw. Numbers keep their text.
func redact(raw json.RawMessage, pointers []string) json.RawMessage {
	if len(raw) == 0 || len(pointers) == 0 {
		return raw
	}
	whole := json.RawMessage(strconv.Quote(redacted))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return whole
	}
	for _, ptr := range pointers {
		if ptr == "" {
			return whole
		}
		segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
		for i := range segs {
			segs[i] = strings.ReplaceAll(strings.ReplaceAll(segs[i], "~1", "/"), "~0", "~")
		}
		v = redactAt(v, segs)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return whole
	}
	return b
}

func redactAt(v any, segs []string) any {
	if len(segs) == 0 {
		return redacted
	}
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if segs[0] == "*" || segs[0] == k {
				x[k] = redactAt(child, segs[1:])
			}
		}
	case []any:
		for i, child := range x {
			if segs[0] == "*" || segs[0] == strconv.Itoa(i) {
				x[i] = redactAt(child, segs[1:])
			}
		}
	}
	return v
}
