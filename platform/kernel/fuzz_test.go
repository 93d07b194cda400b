package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

var fuzzWorkflows = []struct {
	src, input string
}{
	{richWF, `{"items":[{"id":"a","w":12},{"id":"b","w":1},{"id":"c","w":30}]}`},
	{barrierWF, `{}`},
	{orderWF, `{}`},
	{humanWF, `{"order":"o","who":"user:x"}`},
	{signalWF, `{}`},
	{childWF, `{}`},
	{`kind: workflow
id: t/fuzz-loop
input: {type: object, properties: {n: {type: integer}}}
vars:
  seen: {type: integer, default: 0}
steps:
  - id: each
    forEach: =lists.range(input.n)
    concurrency: 3
    steps:
      - id: get
        action: t/fetch@1
        deadline: 20s
      - id: pay
        action: t/charge@1
      - id: count
        set: {seen: =vars.seen + 1}
    collect: =steps.get.output
  - id: s
    signal: go
    deadline: 1m
result: {seen: =vars.seen}
`, `{"n":4}`},
}

// chooser turns fuzz bytes into choices; when they run out it keeps
// choosing from a PRNG seeded by them, so every input drives a whole run.
type chooser struct {
	data []byte
	rng  *rand.Rand
}

func newChooser(data []byte) *chooser {
	var seed uint64
	for i, b := range data {
		seed ^= uint64(b) << (8 * (i % 8))
	}
	return &chooser{data: data, rng: rand.New(rand.NewPCG(seed, uint64(len(data))))}
}

func (c *chooser) intn(n int) int {
	if n <= 1 {
		return 0
	}
	if len(c.data) > 0 {
		b := c.data[0]
		c.data = c.data[1:]
		return int(b) % n
	}
	return c.rng.IntN(n)
}

// candidates lists events for the current state: mostly valid ones, some
// that must be refused.
func candidates(d *driver, c *chooser) []Event {
	s, p := &d.s, d.p
	var out []Event
	for _, id := range sortedKeys(s.Tasks) {
		t := s.Tasks[id]
		n := p.node(t.Node)
		out = append(out,
			Event{Kind: EventTaskCompleted, TaskID: id, Output: genJSON(n.output)},
			Event{Kind: EventTaskCompleted, TaskID: id, Output: json.RawMessage(`"wrong"`)},
			Event{Kind: EventTaskFailed, TaskID: id, Error: &TaskError{Code: "BUSY"}, Retryable: true},
			Event{Kind: EventTaskFailed, TaskID: id, Error: &TaskError{Code: "BAD"}},
			Event{Kind: EventTaskOutcomeUnknown, TaskID: id},
		)
	}
	for _, id := range sortedKeys(s.Humans) {
		h := s.Humans[id]
		out = append(out,
			Event{Kind: EventHumanCompleted, TaskID: id, Decision: h.Decisions[c.intn(len(h.Decisions))], Data: genJSON(p.node(h.Node).form)},
			Event{Kind: EventHumanCompleted, TaskID: id, Decision: "nope"},
		)
	}
	for _, id := range sortedKeys(s.Children) {
		ch := s.Children[id]
		out = append(out,
			Event{Kind: EventChildCompleted, ChildID: id, ChildStatus: StatusSucceeded, Output: genJSON(p.node(ch.Node).output)},
			Event{Kind: EventChildCompleted, ChildID: id, ChildStatus: StatusFailed, Error: &TaskError{Code: "CHILD_BROKE"}},
		)
	}
	for _, name := range p.Signals() {
		out = append(out, Event{Kind: EventSignalReceived, Signal: name, Payload: genJSON(p.signals[name][0].payload)})
	}
	out = append(out, Event{Kind: EventSignalReceived, Signal: "unknown.signal"})
	for _, id := range sortedKeys(s.Incidents) {
		inc := s.Incidents[id]
		n := p.node(inc.NodeID)
		for _, k := range []ResolutionKind{ResolveRetrySafe, ResolveAccept, ResolveTerminate} {
			e := Event{Kind: EventIncidentResolved, IncidentID: id, Revision: inc.Revision, Resolution: k, Reason: "fuzz", ReceiptID: "r"}
			if k == ResolveAccept {
				e.Output, e.EvidenceReference = genJSON(n.output), "ev"
			}
			out = append(out, e)
		}
		out = append(out, Event{Kind: EventIncidentResolved, IncidentID: id, Revision: inc.Revision + 1, Resolution: ResolveTerminate, Reason: "x", ReceiptID: "r"})
	}
	if t, ok := NextDue(*s); ok {
		out = append(out, Event{Kind: EventTimerFired, TimerID: t.ID, At: maxTime(d.now, t.Due)})
		out = append(out, Event{Kind: EventTimerFired, TimerID: t.ID, At: t.Due.Add(-time.Millisecond)})
	}
	out = append(out, Event{Kind: EventContinue})
	if c.intn(10) == 0 { // rare, so that most runs get deep
		out = append(out, Event{Kind: EventCancelRequested, Reason: "fuzz"})
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkInvariants verifies what must hold of every state Step returns.
func checkInvariants(d *driver) error {
	s := &d.s
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		return err
	}
	if b2, _ := json.Marshal(back); string(b2) != string(b) {
		return errors.New("state does not round-trip through JSON")
	}
	if s.Seq != int64(len(d.events)) {
		return fmt.Errorf("seq %d after %d events", s.Seq, len(d.events))
	}
	active := len(s.ActiveIncidents())
	if s.Status.Terminal() {
		if len(s.Tokens)+len(s.Tasks)+len(s.Timers)+len(s.Humans)+len(s.Children)+len(s.Ready)+active > 0 {
			return fmt.Errorf("terminal run %s still has work", s.Status)
		}
		return nil
	}
	if (s.Status == StatusSuspended) != (active > 0) {
		return fmt.Errorf("status %s with %d active incidents", s.Status, active)
	}
	queued := map[string]int{}
	for _, id := range s.Ready {
		queued[id]++
		t := s.Tokens[id]
		if t == nil || !t.Queued || queued[id] > 1 {
			return fmt.Errorf("ready token %s missing, unmarked or listed twice", id)
		}
	}
	for id, t := range s.Tokens {
		if t.Queued && queued[id] == 0 {
			return fmt.Errorf("token %s marked queued but not ready", id)
		}
		if t.Container != "" && s.Tokens[t.Container] == nil {
			return fmt.Errorf("token %s has no container %s", id, t.Container)
		}
		if s.Scopes[t.Scope] == nil {
			return fmt.Errorf("token %s has no scope %q", id, t.Scope)
		}
	}
	for id, t := range s.Tasks {
		tok := s.Tokens[t.Token]
		if tok == nil || tok.TaskID != id {
			return fmt.Errorf("task %s is not its token's", id)
		}
	}
	for id, t := range s.Timers {
		if t.Kind != TimerRunDeadline && s.Tokens[t.Token] == nil {
			return fmt.Errorf("timer %s (%s) has no token", id, t.Kind)
		}
	}
	for id, h := range s.Humans {
		if tok := s.Tokens[h.Token]; tok == nil || tok.HumanID != id {
			return fmt.Errorf("human task %s is not its token's", id)
		}
	}
	for _, id := range s.ActiveIncidents() {
		inc := s.Incidents[id]
		if inc.TaskID != "" && (s.Tasks[inc.TaskID] == nil || s.Tasks[inc.TaskID].Status != TaskIncident) {
			return fmt.Errorf("active incident %s has no blocked task", id)
		}
		if inc.ChildID != "" && (s.Children[inc.ChildID] == nil || !s.Children[inc.ChildID].Blocked) {
			return fmt.Errorf("active incident %s has no blocked child", id)
		}
	}
	return nil
}

// fuzzPrograms caches loaded programs: a Program is immutable and shared.
var fuzzPrograms sync.Map

// runRandom drives one workflow with choices from data and checks every
// step; it returns an error instead of failing so that the fuzz target and
// the property test share it.
func runRandom(tb testing.TB, data []byte) error {
	c := newChooser(data)
	i := c.intn(len(fuzzWorkflows))
	w := fuzzWorkflows[i]
	p, ok := fuzzPrograms.Load(i)
	if !ok {
		p, _ = fuzzPrograms.LoadOrStore(i, load(tb, w.src))
	}
	d := newDriver(tb, p.(*Program))
	d.start(w.input)
	for i := 0; i < 120 && !d.s.Status.Terminal(); i++ {
		cands := candidates(d, c)
		e := cands[c.intn(len(cands))]
		if c.intn(4) == 0 {
			d.now = d.now.Add(time.Duration(c.intn(90)) * time.Second)
		}
		if e.At.IsZero() {
			e.At = d.now
		} else if e.At.After(d.now) {
			d.now = e.At
		}
		err := d.try(e)
		var ke *Error
		if err != nil && !errors.As(err, &ke) {
			return fmt.Errorf("event %s: untyped error %v", e.Kind, err)
		}
		if err := checkInvariants(d); err != nil {
			return fmt.Errorf("after %d events (%s): %w", len(d.events), e.Kind, err)
		}
	}
	if r := Replay(d.p, d.events, d.s); r.Verdict != Consistent {
		return fmt.Errorf("replay: %s: %s", r.Verdict, r.Detail)
	}
	return nil
}

func FuzzStep(f *testing.F) {
	for i := range 16 {
		f.Add([]byte{byte(i % len(fuzzWorkflows)), byte(i * 7), byte(i * 13)})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := runRandom(t, data); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRandomEventSequences runs the fuzz target's property over a fixed
// set of generated inputs, so `go test` checks it every time.
func TestRandomEventSequences(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		data := make([]byte, 8+rng.IntN(24))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		data[0] = byte(i % len(fuzzWorkflows))
		if err := runRandom(t, data); err != nil {
			t.Fatalf("input %x: %v", data, err)
		}
	}
}
