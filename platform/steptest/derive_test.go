package steptest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const testArtifact = `{"format":"agentbridge.workflow/v1","kind":"workflow","id":"acme/t","version":2,"entry":"a","timeoutMs":9000000,
"input":{"type":"object","required":["x"]},"secrets":{"input":["/x"],"output":[]},"result":{"expr":"steps.b.output"},
"nodes":[{"id":"a","kind":"action","sideEffect":"unsafe","next":"b","with":{"object":{"x":{"expr":"input.x"}}}},
{"id":"b","kind":"human","next":null,"onTimeout":{"next":"a"}},
{"id":"c","kind":"switch","next":null},
{"id":"d","kind":"agent","agent":{"tools":["search","acme/read@1","acme/put@1"]}}],
"references":{"action:acme/read@1":{"sideEffect":"read_only"},"action:acme/put@1":{"sideEffect":"idempotent"}}}`

func TestOneStep(t *testing.T) {
	a, err := decodeArtifact([]byte(testArtifact))
	if err != nil {
		t.Fatal(err)
	}
	if a.workflowID != "acme/t" || a.version != 2 || a.draftEffect() != "unsafe" {
		t.Fatalf("%+v %s", a, a.draftEffect())
	}
	b, effect, err := a.oneStep("a", "action", nil, 5*time.Second)
	if err != nil || effect != "unsafe" {
		t.Fatal(err, effect)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	nodes := out["nodes"].([]any)
	node := nodes[0].(map[string]any)
	if len(nodes) != 1 || out["entry"] != "a" || out["timeoutMs"].(float64) != 5000 || node["next"] != nil {
		t.Fatalf("%s", b)
	}
	if w, _ := json.Marshal(node["with"]); string(w) != `{"expr":"input"}` {
		t.Fatalf("with %s", w)
	}
	if in, _ := json.Marshal(out["input"]); string(in) != `{"type":"object"}` {
		t.Fatalf("input %s", in)
	}
	// The human step keeps its own fields but loses its transitions.
	b, effect, err = a.oneStep("b", "human", nil, time.Second)
	if err != nil || effect != "none" {
		t.Fatal(err, effect)
	}
	if json.Unmarshal(b, &out) != nil || out["nodes"].([]any)[0].(map[string]any)["onTimeout"] != nil {
		t.Fatalf("%s", b)
	}
	// An agent's class is the strongest of read_only and its real tools'
	// (a tool the references do not describe is unsafe).
	for real, want := range map[string]string{"": "read_only", "acme/read@1": "read_only", "acme/put@1": "idempotent",
		"acme/read@1,acme/put@1": "idempotent", "search": "unsafe", "acme/put@1,search": "unsafe"} {
		var tools []string
		if real != "" {
			tools = strings.Split(real, ",")
		}
		if _, effect, _ := a.oneStep("d", "agent", tools, time.Second); effect != want {
			t.Fatalf("real tools %q: %s, want %s", real, effect, want)
		}
	}
	for step, kind := range map[string]string{"c": "switch", "zz": "action", "a": "human"} {
		if _, _, err := a.oneStep(step, kind, nil, time.Second); err == nil {
			t.Fatalf("%s %s accepted", step, kind)
		}
	}
}

func TestConfirmAndStatus(t *testing.T) {
	for _, c := range []struct {
		effect, ack string
		ok          bool
	}{{"none", "", true}, {"read_only", "", true}, {"idempotent", "", false}, {"idempotent", "idempotent", true},
		{"unsafe", "idempotent", false}, {"idempotency_key", "unsafe", false}, {"unsafe", "unsafe", true}} {
		if err := confirm(c.effect, c.ack); (err == nil) != c.ok {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	for run, want := range map[string]string{"running": "running", "waiting": "waiting", "suspended": "waiting", "succeeded": "succeeded",
		"failed": "failed", "cancelled": "cancelled", "timed_out": "timed_out"} {
		if got := statusOf(run, false); got != want {
			t.Fatalf("%s: %s", run, got)
		}
	}
	if statusOf("running", true) != "waiting" {
		t.Fatal("a paused run waits")
	}
	p := Policy{TestCalls: CallsReadOnly}
	if p.permit("read_only") != nil || p.permit("none") != nil || p.permit("idempotent") == nil {
		t.Fatal("read_only policy")
	}
	if (Policy{TestCalls: CallsDisabled}).permit("none") == nil || (Policy{TestCalls: CallsAll}).permit("unsafe") != nil {
		t.Fatal("policy")
	}
}
