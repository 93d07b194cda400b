package kernel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/platform/platformtest"
)

const referencePath = "../../docs/workflow-language.md"

type fence struct {
	info string
	line int
	body string
}

func readFences(tb testing.TB) []fence {
	tb.Helper()
	fs, err := platformtest.Fences(referencePath)
	if err != nil {
		tb.Fatalf("read reference: %v", err)
	}
	out := make([]fence, len(fs))
	for i, f := range fs {
		out[i] = fence{info: f.Info, line: f.Line, body: f.Body}
	}
	return out
}

// exampleInputs override generated inputs where a generated value would
// not make a meaningful run.
var exampleInputs = map[string]string{
	"examples/wait":   `{"coolDown":"10s"}`,
	"examples/switch": `{"amount":12.5}`,
	"examples/fail":   `{"country":"KP"}`,
}

// exampleEnds are the expected end states other than succeeded.
var exampleEnds = map[string]RunError{
	"examples/fail": {Code: "EMBARGOED_COUNTRY", Message: "cannot ship to KP", Node: "blocked", Instance: "blocked"},
}

// exampleOutputs checks the outputs of examples whose result is known.
var exampleOutputs = map[string]string{
	"examples/signal":   `"x"`,
	"examples/succeed":  `{"source":"cache"}`,
	"acme/fulfil-order": `{"chargeId":"x","status":"shipped"}`,
}

// TestReferenceExamples compiles every workflow example of the language
// reference against its catalog lock, loads it and drives it to the end
// with synthetic events: tasks, children, people and signals answered with
// values generated from their pinned schemas, timers fired in due order.
func TestReferenceExamples(t *testing.T) {
	fences := readFences(t)
	var lock *lang.CatalogLock
	var sources []fence
	for _, f := range fences {
		if f.info == "json catalog" {
			l, err := lang.ParseCatalogLock([]byte(f.body))
			if err != nil {
				t.Fatalf("catalog lock at line %d: %v", f.line, err)
			}
			lock = l
		}
		if f.info == "yaml" {
			sources = append(sources, f)
		}
	}
	if lock == nil {
		t.Fatal("no catalog lock in the reference")
	}
	// The decision table example is the one the lock lists; pin its real
	// digest so that the kernel can match the artifact to the reference.
	var defs [][]byte
	for _, f := range sources {
		if !strings.HasPrefix(f.body, "kind: decisionTable") {
			continue
		}
		r := lang.Compile([]byte(f.body), lang.Options{Catalog: lock})
		if !r.OK {
			t.Fatalf("decision table at line %d does not compile", f.line)
		}
		defs = append(defs, r.Artifact)
		var art struct {
			Output json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(r.Artifact, &art); err != nil {
			t.Fatal(err)
		}
		for i := range lock.Definitions {
			if e := &lock.Definitions[i]; e.Kind == "decisionTable" && strings.Contains(f.body, "id: "+e.ID+"\n") {
				// The reference's lock shows illustrative digests; a
				// platform publishes the real one. Its output schema must
				// be the table's own (Load refuses a mismatch).
				e.Digest = r.Digest
				if string(e.OutputSchema) == "" {
					e.OutputSchema = art.Output
				}
			}
		}
	}
	kindsRun := map[string]bool{}
	workflows := 0
	for _, f := range sources {
		if !strings.HasPrefix(f.body, "kind: workflow") {
			continue
		}
		workflows++
		r := lang.Compile([]byte(f.body), lang.Options{Catalog: lock})
		if !r.OK {
			t.Errorf("example at line %d does not compile: %v", f.line, r.Diagnostics)
			continue
		}
		p, err := Load(r.Artifact, WithCatalog(lock), WithDefinitions(defs...))
		if err != nil {
			t.Errorf("example at line %d: %v", f.line, err)
			continue
		}
		input, ok := exampleInputs[p.ID()]
		if !ok {
			input = string(mustJSON(t, genValue(p.input, 0)))
		}
		d := newDriver(t, p)
		d.start(input)
		autoDrive(t, d, 200)
		if want, ok := exampleEnds[p.ID()]; ok {
			if d.s.Status != StatusFailed || *d.s.Error != want {
				t.Errorf("example %s (line %d) ended %s: %+v, want failed: %+v", p.ID(), f.line, d.s.Status, d.s.Error, want)
			}
		} else if d.s.Status != StatusSucceeded {
			t.Errorf("example %s (line %d) ended %s: %+v", p.ID(), f.line, d.s.Status, d.s.Error)
			continue
		}
		if want, ok := exampleOutputs[p.ID()]; ok && string(d.s.Output) != want {
			t.Errorf("example %s: output %s, want %s", p.ID(), d.s.Output, want)
		}
		for _, rec := range records(d.effects, RecordStepStarted) {
			kindsRun[p.node(rec.NodeID).kind] = true
		}
		if res := Replay(p, d.events, d.s); res.Verdict != Consistent {
			t.Errorf("example %s: replay %s: %s", p.ID(), res.Verdict, res.Detail)
		}
	}
	if workflows < 15 {
		t.Errorf("only %d workflow examples found", workflows)
	}
	for _, k := range []lang.StepKind{lang.StepAction, lang.StepDecision, lang.StepWait, lang.StepSignal, lang.StepHuman,
		lang.StepAgent, lang.StepWorkflow, lang.StepForEach, lang.StepParallel, lang.StepSwitch, lang.StepSet,
		lang.StepFail, lang.StepSucceed} {
		if !kindsRun[string(k)] {
			t.Errorf("no example ran a %s step", k)
		}
	}
}

// autoDrive answers whatever the run waits for until it ends.
func autoDrive(tb testing.TB, d *driver, maxEvents int) {
	tb.Helper()
	for i := 0; i < maxEvents && !d.s.Status.Terminal(); i++ {
		e, ok := nextAutoEvent(d)
		if !ok {
			tb.Fatalf("run %s is stuck in status %s", d.p.ID(), d.s.Status)
		}
		if e.Kind == EventTimerFired {
			if tm := d.s.Timers[e.TimerID]; tm.Due.After(d.now) {
				d.now = tm.Due
			}
		}
		d.must(e)
	}
}

func nextAutoEvent(d *driver) (Event, bool) {
	s, p := &d.s, d.p
	if ids := s.ActiveIncidents(); len(ids) > 0 {
		inc := s.Incidents[ids[0]]
		return Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: inc.Revision, Resolution: ResolveAccept,
			Reason: "auto", ReceiptID: "auto", EvidenceReference: "auto", Output: genJSON(p.node(inc.NodeID).output)}, true
	}
	for _, id := range sortedKeys(s.Tasks) {
		if t := s.Tasks[id]; t.Status == TaskRunning {
			return Event{Kind: EventTaskCompleted, TaskID: id, Output: genJSON(p.node(t.Node).output)}, true
		}
	}
	for _, id := range sortedKeys(s.Humans) {
		h := s.Humans[id]
		return Event{Kind: EventHumanCompleted, TaskID: id, Decision: h.Decisions[0], CompletedBy: "user:auto",
			Data: genJSON(p.node(h.Node).form)}, true
	}
	for _, id := range sortedKeys(s.Children) {
		if c := s.Children[id]; !c.Blocked {
			return Event{Kind: EventChildCompleted, ChildID: id, ChildStatus: StatusSucceeded, Output: genJSON(p.node(c.Node).output)}, true
		}
	}
	for _, id := range sortedKeys(s.Tokens) {
		if tok := s.Tokens[id]; tok.Phase == PhaseWait && tok.Wait == WaitSignal {
			return Event{Kind: EventSignalReceived, Signal: tok.Signal, Payload: genJSON(p.node(tok.Node).payload)}, true
		}
	}
	if t, ok := NextDue(*s); ok {
		return Event{Kind: EventTimerFired, TimerID: t.ID}, true
	}
	if len(s.Ready) > 0 {
		return Event{Kind: EventContinue}, true
	}
	return Event{}, false
}

func genJSON(s *schema) json.RawMessage {
	b, _ := json.Marshal(genValue(s, 0))
	return b
}

// genValue makes a value valid for common schemas: every property, the
// first enum value, minimums respected.
func genValue(s *schema, depth int) any {
	if s == nil {
		return "x"
	}
	return genAt(s.set, s.root(), depth)
}

var patternSamples = map[string]string{`^[A-Z]{3}$`: "EUR", `^tok_[a-z0-9]+$`: "tok_abc"}

func genAt(ss *schemaSet, v view, depth int) any {
	r := ss.resolve(v)
	m, ok := r.v.(map[string]any)
	if !ok || depth > 8 {
		return "x"
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := m["type"].(string)
	if l, ok := m["type"].([]any); ok && len(l) > 0 {
		typ, _ = l[0].(string)
	}
	if typ == "" {
		if _, ok := m["properties"]; ok {
			typ = "object"
		}
	}
	switch typ {
	case "string":
		if p, ok := m["pattern"].(string); ok {
			return patternSamples[p]
		}
		return "x"
	case "integer":
		if min, ok := m["minimum"].(json.Number); ok {
			return min
		}
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "array":
		it, _ := m["items"]
		return []any{genAt(ss, view{url: r.url, v: it}, depth+1), genAt(ss, view{url: r.url, v: it}, depth+1)}
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for k, pv := range props {
			out[k] = genAt(ss, view{url: r.url, v: pv}, depth+1)
		}
		return out
	}
	return "x"
}
