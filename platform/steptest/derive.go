package steptest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/lang"
)

// Side effect classes of a step or draft, weakest first: none (no
// action), then the action classes of docs/workflow-language.md.
const SideEffectNone = "none"

var effectRank = map[string]int{SideEffectNone: 0, lang.SideEffectReadOnly: 1, lang.SideEffectIdempotent: 2,
	lang.SideEffectIdempotencyKey: 3, lang.SideEffectUnsafe: 4}

// sideEffecting reports whether a class has effects a test must
// acknowledge: anything beyond read_only.
func sideEffecting(effect string) bool {
	return effectRank[effect] > effectRank[lang.SideEffectReadOnly]
}

// stronger answers the stronger of two classes.
func stronger(a, b string) string {
	if effectRank[b] > effectRank[a] {
		return b
	}
	return a
}

// testableKinds are the step kinds a step test runs alone; the flow kinds
// (switch, forEach, parallel, fail, succeed) only make sense in their
// graph.
var testableKinds = map[string]bool{string(lang.StepAction): true, string(lang.StepAgent): true, string(lang.StepDecision): true,
	string(lang.StepHuman): true, string(lang.StepWorkflow): true, string(lang.StepSet): true, string(lang.StepWait): true,
	string(lang.StepSignal): true}

// callKinds take their input from `with`: a step test replaces it by the
// request's input, so the step is called with exactly that value.
var callKinds = map[string]bool{string(lang.StepAction): true, string(lang.StepAgent): true, string(lang.StepDecision): true,
	string(lang.StepWorkflow): true}

// nodeEffect is the side effect class of one artifact node: an action's
// class; an agent's the strongest of read_only (the agent itself) and its
// tools that run for real (real); a called workflow's unsafe (its own
// steps are not inspected here); none else.
func (a artifact) nodeEffect(n map[string]any, real []string) string {
	switch n["kind"] {
	case string(lang.StepAction):
		if se, _ := n["sideEffect"].(string); effectRank[se] > 0 {
			return se
		}
		return lang.SideEffectUnsafe
	case string(lang.StepAgent):
		effect := lang.SideEffectReadOnly
		for _, ref := range real {
			effect = stronger(effect, a.toolEffect(ref))
		}
		return effect
	case string(lang.StepWorkflow):
		return lang.SideEffectUnsafe
	}
	return SideEffectNone
}

// toolEffect is the side effect class of an agent tool (an action
// reference) as the artifact's reference table records it; unsafe when
// it records none.
func (a artifact) toolEffect(ref string) string {
	refs, _ := a.raw["references"].(map[string]any)
	entry, _ := refs[lang.KindAction+":"+ref].(map[string]any)
	if se, _ := entry["sideEffect"].(string); effectRank[se] > 0 {
		return se
	}
	return lang.SideEffectUnsafe
}

// agentTools lists the tools an agent node declares.
func agentTools(n map[string]any) []string {
	var out []string
	if ag, ok := n["agent"].(map[string]any); ok {
		list, _ := ag["tools"].([]any)
		for _, t := range list {
			if s, ok := t.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// artifact is a decoded workflow artifact.
type artifact struct {
	raw        map[string]any
	nodes      []map[string]any
	workflowID string
	version    int
}

func decodeArtifact(b []byte) (artifact, error) {
	var a artifact
	if err := json.Unmarshal(b, &a.raw); err != nil {
		return a, fmt.Errorf("steptest: decode artifact: %w", err)
	}
	if k, _ := a.raw["kind"].(string); k != lang.KindWorkflow {
		return a, at422(CodeDraft, "/draft_id", "the draft is a %s, not a workflow", k)
	}
	list, _ := a.raw["nodes"].([]any)
	for _, n := range list {
		if m, ok := n.(map[string]any); ok {
			a.nodes = append(a.nodes, m)
		}
	}
	a.workflowID, _ = a.raw["id"].(string)
	v, _ := a.raw["version"].(float64)
	a.version = int(v)
	return a, nil
}

// draftEffect is the strongest side effect class of a draft's steps; the
// agents of a test activation's runs call their tools for real.
func (a artifact) draftEffect() string {
	effect := SideEffectNone
	for _, n := range a.nodes {
		effect = stronger(effect, a.nodeEffect(n, agentTools(n)))
	}
	return effect
}

// oneStep is the artifact that runs step alone: the step is the only
// node and the entry, without its transitions; a calling step takes the
// run input as its input; the run input is any object, the output is the
// step outputs, and the run times out after limit (the step test's time
// limit, enforced by the kernel's run timeout). real are the tools an
// agent step runs for real.
func (a artifact) oneStep(stepID, kind string, real []string, limit time.Duration) ([]byte, string, error) {
	var node map[string]any
	for _, n := range a.nodes {
		if n["id"] == stepID {
			node = n
		}
	}
	if node == nil {
		return nil, "", at422(CodeStep, "/step_id", "the draft has no step %q", stepID)
	}
	got, _ := node["kind"].(string)
	if !testableKinds[got] {
		return nil, "", at422(CodeStep, "/step_id", "step %q is a %s step; step tests run action, agent, decision, human, workflow, set, wait and signal steps", stepID, got)
	}
	if got != kind {
		return nil, "", at422(CodeKind, "/kind", "step %q is a %s step, not %s", stepID, got, kind)
	}
	one := make(map[string]any, len(node))
	for k, v := range node {
		one[k] = v
	}
	for _, k := range []string{"parent", "branch", "next", "onTimeout"} {
		delete(one, k)
	}
	if callKinds[got] {
		one["with"] = map[string]any{"expr": "input"}
	}
	out := make(map[string]any, len(a.raw))
	for k, v := range a.raw {
		out[k] = v
	}
	out["nodes"] = []any{one}
	out["entry"] = stepID
	out["input"] = map[string]any{"type": "object"}
	out["output"] = nil
	out["result"] = map[string]any{"expr": "steps"}
	out["secrets"] = map[string]any{"input": []any{}, "output": []any{}}
	out["timeoutMs"] = limit.Milliseconds()
	b, err := json.Marshal(out)
	if err != nil {
		return nil, "", fmt.Errorf("steptest: encode artifact: %w", err)
	}
	return b, a.nodeEffect(node, real), nil
}

// withTimeout is the artifact b with the run timeout limit (a test
// activation's runs end when it expires at the latest).
func withTimeout(a artifact, limit time.Duration) ([]byte, error) {
	out := make(map[string]any, len(a.raw))
	for k, v := range a.raw {
		out[k] = v
	}
	if cur, ok := out["timeoutMs"].(float64); !ok || int64(cur) > limit.Milliseconds() {
		out["timeoutMs"] = limit.Milliseconds()
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("steptest: encode artifact: %w", err)
	}
	return b, nil
}

// confirm answers 409 PF-STEPTEST-CONFIRM unless a side-effecting class
// is acknowledged exactly.
func confirm(effect, acknowledged string) error {
	if !sideEffecting(effect) || acknowledged == effect {
		return nil
	}
	e := refused(CodeConfirm, "this has side effect %s: it calls a real connection; send acknowledged_side_effect: %q to run it", effect, effect)
	e.Diagnostics = []api.Diagnostic{{Code: "side_effect", Path: "/acknowledged_side_effect", Message: "want " + effect}}
	return e
}
