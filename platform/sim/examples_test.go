package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/platform/platformtest"
)

// The property test of docs/platform-api.md ("Debug sessions"): for the
// workflow examples of the language reference and random mock outcomes, a
// debug session driven to its end with random next, continue and
// breakpoint commands reaches the same final variables, step outputs,
// output and status as a run driven straight through the kernel the way
// the engine drives one (every Step reduces all it can; issued work is
// answered first in first out; the same signals, decisions and times).

const referencePath = "../../docs/workflow-language.md"

type example struct {
	line     int
	p        *Program
	artifact map[string]any
	lock     *lang.CatalogLock
}

func readExamples(t *testing.T) []example {
	t.Helper()
	fences, err := platformtest.Fences(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	var lock *lang.CatalogLock
	for _, f := range fences {
		if f.Info == "json catalog" {
			if lock, err = lang.ParseCatalogLock([]byte(f.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if lock == nil {
		t.Fatal("no catalog lock in the reference")
	}
	// Decision tables: the reference's lock shows illustrative digests; pin
	// the real ones (as platform/kernel's example test does).
	var defs [][]byte
	for _, f := range fences {
		if f.Info != "yaml" || !strings.HasPrefix(f.Body, "kind: decisionTable") {
			continue
		}
		r := lang.Compile([]byte(f.Body), lang.Options{Catalog: lock})
		if !r.OK {
			continue
		}
		defs = append(defs, r.Artifact)
		var art struct {
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(r.Artifact, &art)
		for i := range lock.Definitions {
			if e := &lock.Definitions[i]; e.Kind == "decisionTable" && strings.Contains(f.Body, "id: "+e.ID+"\n") {
				e.Digest = r.Digest
				if len(e.OutputSchema) == 0 {
					e.OutputSchema = art.Output
				}
			}
		}
	}
	var out []example
	for _, f := range fences {
		if f.Info != "yaml" || !strings.HasPrefix(f.Body, "kind: workflow") {
			continue
		}
		r := lang.Compile([]byte(f.Body), lang.Options{Catalog: lock})
		if !r.OK {
			continue
		}
		p, err := LoadProgram(r.Artifact, lock, defs)
		if err != nil {
			continue
		}
		var art map[string]any
		_ = json.Unmarshal(r.Artifact, &art)
		out = append(out, example{line: f.Line, p: p, artifact: art, lock: lock})
	}
	return out
}

// exampleInputs override generated inputs where a generated value would
// not make a meaningful run (as in platform/kernel's example test).
var exampleInputs = map[string]string{
	"examples/wait":   `{"coolDown":"10s"}`,
	"examples/switch": `{"amount":12.5}`,
	"examples/fail":   `{"country":"KP"}`,
}

func (ex example) node(id string) map[string]any {
	for _, n := range ex.artifact["nodes"].([]any) {
		if m := n.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

// outputSchema is the pinned output schema of an action, agent or
// workflow node.
func (ex example) outputSchema(id string) any {
	n := ex.node(id)
	if n["kind"] == "agent" {
		if a, ok := n["agent"].(map[string]any); ok && a["output"] != nil {
			return a["output"]
		}
		return map[string]any{"type": "string"}
	}
	ref, _ := n["ref"].(string)
	for _, e := range ex.lock.Definitions {
		if fmt.Sprintf("%s@%d", e.ID, e.Version) == ref && len(e.OutputSchema) > 0 {
			var v any
			_ = json.Unmarshal(e.OutputSchema, &v)
			return v
		}
	}
	return nil
}

func genJSON(s any) json.RawMessage { return platformtest.ValueJSON(s) }

// randomMocks gives every action, agent and workflow node 1 to 3 random
// outcomes (mostly successes; retryable and non-retryable failures and
// unknown outcomes too).
func randomMocks(ex example, rng *rand.Rand) (Mocks, bool) {
	ms := Mocks{}
	for _, id := range ex.p.order {
		switch ex.p.nodes[id].Kind {
		case "action", "agent", "workflow":
		default:
			continue
		}
		out := genJSON(ex.outputSchema(id))
		if ex.p.kp.CheckOutput(id, out) != nil {
			return nil, false
		}
		n := 1 + rng.IntN(3)
		for i := range n {
			m := Mock{Output: out}
			if i < n-1 || rng.IntN(6) == 0 {
				switch rng.IntN(8) {
				case 0:
					m = Mock{Error: &kernel.TaskError{Code: "BROKEN", Message: "mocked"}}
				case 1:
					m = Mock{Outcome: "unknown"}
				case 2, 3, 4:
					m = Mock{Error: &kernel.TaskError{Code: "BUSY", Message: "mocked"}, Retryable: true}
				}
			}
			ms[KeyNode+id] = append(ms[KeyNode+id], m)
		}
	}
	return ms, true
}

// environment is what the user supplies to a waiting run, the same for
// both drivers: a decision for the first open human task, else a signal
// for the first waiting signal step, else time up to the next due timer.
type environment struct {
	kind     string // human, signal, time
	node     string
	signal   string
	decision string
	data     json.RawMessage
	seconds  int64
	humanID  string
}

func (ex example) environment(st kernel.State, now time.Time) (environment, bool) {
	for _, id := range sortedIDs(st.Humans) {
		h := st.Humans[id]
		var form any
		if hn, ok := ex.node(h.Node)["human"].(map[string]any); ok {
			form = hn["form"]
		}
		return environment{kind: "human", node: h.Node, humanID: h.ID, decision: h.Decisions[0], data: genJSON(form)}, true
	}
	for _, id := range sortedIDs(st.Tokens) {
		if tok := st.Tokens[id]; tok.Signal != "" && tok.Phase == kernel.PhaseWait {
			return environment{kind: "signal", signal: tok.Signal, data: genJSON(ex.node(tok.Node)["schema"])}, true
		}
	}
	if t, ok := kernel.NextDue(st); ok {
		d := t.Due.Sub(now)
		sec := int64((d + time.Second - 1) / time.Second)
		return environment{kind: "time", seconds: sec}, true
	}
	return environment{}, false
}

// reference drives a run the way the engine does.
func reference(t *testing.T, ex example, input json.RawMessage, ms Mocks) kernel.State {
	p := ex.p.kp
	now := t0
	var pending []Call
	calls := map[string]int{}
	st, effs, err := kernel.Step(p, kernel.State{}, kernel.Event{Seq: 1, At: now, Kind: kernel.EventStarted, RunID: "00000000-0000-4000-8000-00000000aaaa", Input: input})
	if err != nil {
		t.Fatalf("line %d: start: %v", ex.line, err)
	}
	follow := func(effs []kernel.Effect) {
		for _, e := range effs {
			switch e.Kind {
			case kernel.EffectStartTask:
				pending = append(pending, Call{TaskID: e.Task.TaskID})
			case kernel.EffectStartChild:
				pending = append(pending, Call{ChildID: e.Child.ID})
			case kernel.EffectCancelTask, kernel.EffectCancelChild:
				c := Call{TaskID: e.TaskID}
				if e.Child != nil {
					c = Call{ChildID: e.Child.ID}
				}
				out := pending[:0]
				for _, x := range pending {
					if x != c {
						out = append(out, x)
					}
				}
				pending = out
			}
		}
	}
	follow(effs)
	step := func(ev kernel.Event) error {
		ev.Seq, ev.At = st.Seq+1, now
		next, effs, err := kernel.Step(p, st, ev)
		if err != nil {
			return err
		}
		st = next
		follow(effs)
		return nil
	}
	for i := 0; i < 5000 && !st.Status.Terminal(); i++ {
		if due := kernel.DueOrder(st, now); len(due) > 0 {
			if err := step(kernel.Event{Kind: kernel.EventTimerFired, TimerID: due[0].ID}); err != nil {
				t.Fatalf("line %d: timer: %v", ex.line, err)
			}
			continue
		}
		suspended := len(st.ActiveIncidents()) > 0
		if suspended && len(pending) == 0 {
			break
		}
		if !suspended && len(st.Ready) > 0 {
			if err := step(kernel.Event{Kind: kernel.EventContinue}); err != nil {
				t.Fatalf("line %d: continue: %v", ex.line, err)
			}
			continue
		}
		if len(pending) > 0 {
			c := pending[0]
			pending = pending[1:]
			var ev kernel.Event
			if c.ChildID != "" {
				ch := st.Children[c.ChildID]
				if ch == nil {
					continue
				}
				_, m, _ := ms.lookup(calls, ch.Node, ch.Instance, KeyWorkflow+ch.Ref)
				ev = kernel.Event{Kind: kernel.EventChildCompleted, ChildID: ch.ID, ChildStatus: kernel.StatusSucceeded, Output: m.Output}
				if m.Error != nil {
					ev.ChildStatus, ev.Output, ev.Error = kernel.StatusFailed, nil, m.Error
				} else if m.Outcome != "" {
					ev.ChildStatus, ev.Output = kernel.StatusCancelled, nil
				}
			} else {
				tk := st.Tasks[c.TaskID]
				if tk == nil || tk.Status != kernel.TaskRunning {
					continue
				}
				_, m, _ := ms.lookup(calls, tk.Node, tk.Instance, KeyAction+tk.Ref)
				ev = kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: tk.ID, Output: m.Output}
				if m.Error != nil {
					ev = kernel.Event{Kind: kernel.EventTaskFailed, TaskID: tk.ID, Error: m.Error, Retryable: m.Retryable}
				} else if m.Outcome != "" {
					ev = kernel.Event{Kind: kernel.EventTaskOutcomeUnknown, TaskID: tk.ID}
				}
			}
			if err := step(ev); err != nil {
				t.Fatalf("line %d: answer: %v", ex.line, err)
			}
			continue
		}
		if tm, ok := kernel.NextDue(st); ok && tm.Kind == kernel.TimerRetryBackoff {
			now = tm.Due
			continue
		}
		env, ok := ex.environment(st, now)
		if !ok {
			break
		}
		var err error
		switch env.kind {
		case "human":
			err = step(kernel.Event{Kind: kernel.EventHumanCompleted, TaskID: env.humanID, Decision: env.decision, Data: env.data, CompletedBy: "me"})
		case "signal":
			err = step(kernel.Event{Kind: kernel.EventSignalReceived, Signal: env.signal, Payload: env.data})
		case "time":
			now = now.Add(time.Duration(env.seconds) * time.Second)
		}
		if err != nil {
			t.Fatalf("line %d: %s: %v", ex.line, env.kind, err)
		}
	}
	return st
}

// debug drives a session with random commands.
func debug(t *testing.T, ex example, input json.RawMessage, ms Mocks, rng *rand.Rand) *Session {
	s := &Session{ID: "00000000-0000-4000-8000-00000000aaaa", Creator: "me", Mocks: ms, Input: input, Start: t0}
	if err := Begin(ex.p, s); err != nil {
		t.Fatalf("line %d: begin: %v", ex.line, err)
	}
	lim := DefaultLimits()
	apply := func(c Command) {
		if err := Apply(ex.p, s, c, lim); err != nil {
			t.Fatalf("line %d: %+v: %v", ex.line, c, err)
		}
	}
	for i := 0; i < 5000 && !s.Status.Ended() && s.Status != StatusSuspended; i++ {
		if s.Status == StatusWaiting && len(s.State.Ready) == 0 && len(s.Pending) == 0 && len(kernel.DueOrder(s.State, s.Now)) == 0 {
			env, ok := ex.environment(s.State, s.Now)
			if !ok {
				break
			}
			switch env.kind {
			case "human":
				c := &HumanCommand{Name: env.node}
				c.Payload.Decision, c.Payload.Data = env.decision, env.data
				apply(Command{HumanDecision: c})
			case "signal":
				apply(Command{Signal: &SignalCommand{Name: env.signal, Payload: env.data}})
			case "time":
				apply(Command{AdvanceTime: &AdvanceCommand{Seconds: &env.seconds}})
			}
		}
		switch rng.IntN(5) {
		case 0:
			var bps []string
			for _, id := range ex.p.order {
				if rng.IntN(3) == 0 {
					bps = append(bps, id)
				}
			}
			apply(Command{Breakpoints: &BreakpointsCommand{NodeIDs: bps}})
		case 1, 2:
			apply(Command{Next: &struct{}{}})
		default:
			apply(Command{Continue: &struct{}{}})
		}
	}
	return s
}

func TestSessionsMatchRuns(t *testing.T) {
	examples := readExamples(t)
	if len(examples) < 15 {
		t.Fatalf("only %d workflow examples load", len(examples))
	}
	rng := rand.New(rand.NewPCG(16, 2026))
	runs, ends := 0, map[string]int{}
	for _, ex := range examples {
		input := json.RawMessage(exampleInputs[ex.p.kp.ID()])
		if len(input) == 0 && ex.artifact["input"] != nil {
			input = genJSON(ex.artifact["input"])
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if _, secret := secretAt(input, ex.p.secrets.Input); secret {
			continue // a session refuses secret input values
		}
		for range 12 {
			ms, ok := randomMocks(ex, rng)
			if !ok {
				break
			}
			ref := reference(t, ex, input, ms)
			s := debug(t, ex, input, ms, rng)
			runs++
			ends[string(s.Status)]++
			if string(s.Status) != string(ref.Status) {
				t.Fatalf("%s (line %d): session %s, run %s (%v / %+v)", ex.p.kp.ID(), ex.line, s.Status, ref.Status, s.Diagnostics, ref.Error)
			}
			got, want := finals(s.State), finals(ref)
			if got != want {
				t.Fatalf("%s (line %d): session\n%s\nrun\n%s", ex.p.kp.ID(), ex.line, got, want)
			}
		}
	}
	keys := make([]string, 0, len(ends))
	for k := range ends {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("%d sessions over %d examples; ends %v", runs, len(examples), ends)
	if runs < 100 || ends["succeeded"] == 0 || ends["suspended"] == 0 {
		t.Fatalf("too few or too uniform runs: %d %v", runs, ends)
	}
}

// finals is what must agree: status, variables, every scope's step
// outputs, output and error.
func finals(st kernel.State) string {
	b, _ := json.Marshal(struct {
		Status kernel.Status
		Vars   map[string]json.RawMessage
		Scopes map[string]*kernel.Scope
		Output json.RawMessage
		Error  *kernel.RunError
	}{st.Status, st.Vars, st.Scopes, st.Output, st.Error})
	return string(b)
}
