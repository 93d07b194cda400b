package kernel

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// richWF uses most step kinds at once, so that its states exercise every
// part of State.
const richWF = `kind: workflow
id: t/rich
timeout: 30d
input:
  type: object
  properties:
    items: {type: array, items: {type: object, properties: {id: {type: string}, w: {type: number}}}}
vars:
  total: {type: number, default: 0}
  seen: {type: integer, default: 0}
steps:
  - id: prep
    parallel:
      - name: kid
        steps:
          - id: sub
            workflow: t/child@1
            with: {n: 4}
      - name: ask
        steps:
          - id: ok
            human:
              title: Go?
              assignees: group:ops
              decisions: [go, stop]
            deadline: 1d
  - id: lines
    forEach: =input.items
    as: it
    concurrency: 2
    steps:
      - id: fee
        decision: t/fee@1
        with: {weight: =it.w}
      - id: get
        action: t/fetch@1
        with: {id: =it.id}
      - id: add
        set:
          total: =vars.total + steps.fee.output
          seen: =vars.seen + steps.get.output.count
    collect: =steps.fee.output
  - id: pause
    wait: 5m
  - id: sig
    signal: done
    schema: {type: object, properties: {n: {type: integer}}}
    deadline: 1h
  - id: pay
    action: t/charge@1
result:
  total: =vars.total
  seen: =vars.seen
  fees: =steps.lines.output
  n: =steps.sig.output.n + steps.sub.output.total
`

// richScript drives richWF through children, people, loops, retries, an
// incident, a buffered signal and a wait; snapshot is called after every
// accepted event.
func richScript(d *driver, snapshot func()) {
	d.tb.Helper()
	step := func(e Event) {
		d.tb.Helper()
		d.must(e)
		if snapshot != nil {
			snapshot()
		}
	}
	step(Event{Kind: EventStarted, RunID: "run-1", Input: json.RawMessage(`{"items":[{"id":"a","w":12},{"id":"b","w":1},{"id":"c","w":30}]}`)})
	var child *Child
	for _, c := range d.s.Children {
		child = c
	}
	d.now = d.now.Add(time.Minute)
	step(Event{Kind: EventSignalReceived, Signal: "done", Payload: json.RawMessage(`{"n":5}`)}) // buffered
	step(Event{Kind: EventChildCompleted, ChildID: child.ID, ChildStatus: StatusSucceeded, Output: json.RawMessage(`{"total":8}`)})
	step(Event{Kind: EventHumanCompleted, TaskID: d.human("ok").ID, Decision: "go", CompletedBy: "user:ann"})
	// Two iterations run; fail one once (backoff), complete the other.
	var ids []string
	for _, id := range sortedKeys(d.s.Tasks) {
		ids = append(ids, id)
	}
	step(Event{Kind: EventTaskFailed, TaskID: ids[0], Error: &TaskError{Code: "BUSY"}, Retryable: true})
	step(Event{Kind: EventTaskCompleted, TaskID: ids[1], Output: json.RawMessage(`{"count":2}`)})
	t, _ := NextDue(d.s)
	d.now = t.Due
	step(Event{Kind: EventTimerFired, TimerID: t.ID})
	for i := 0; len(d.s.Tasks) > 0 && i < 20; i++ {
		id := sortedKeys(d.s.Tasks)[0]
		step(Event{Kind: EventTaskCompleted, TaskID: id, Output: json.RawMessage(`{"count":1}`)})
	}
	t, _ = NextDue(d.s) // the 5m wait
	d.now = t.Due
	step(Event{Kind: EventTimerFired, TimerID: t.ID})
	// The buffered signal was consumed; pay is issued; its outcome is lost.
	step(Event{Kind: EventTaskOutcomeUnknown, TaskID: d.task("pay").ID})
	inc := d.incident(IncidentTaskAmbiguous)
	step(Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: 1, Resolution: ResolveAccept, Reason: "checked",
		ReceiptID: "r1", EvidenceReference: "psp#1", Output: json.RawMessage(`{"chargeId":"c1"}`)})
}

func TestRichScenario(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, richWF))
	richScript(d, nil)
	is.Equal(d.s.Status, StatusSucceeded)
	is.Equal(string(d.s.Output), `{"fees":[20.0,5.0,20.0],"n":13,"seen":4,"total":45.0}`)
}

// TestStateJSONRoundTrip: after every event, the state marshals, unmarshals
// and marshals to the same bytes, and stepping on from the decoded state
// gives exactly what stepping on from the original gives.
func TestStateJSONRoundTrip(t *testing.T) {
	is := is.New(t)
	p := load(t, richWF)
	d := newDriver(t, p)
	var states []State
	richScript(d, func() { states = append(states, d.s) })
	is.True(len(states) > 10)
	for i, s := range states {
		b1 := mustJSON(t, s)
		var back State
		is.NoErr(json.Unmarshal(b1, &back))
		b2 := mustJSON(t, back)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("state %d does not round-trip:\n%s\n%s", i, b1, b2)
		}
		if i+1 >= len(d.events) {
			continue
		}
		next := d.events[i+1]
		s1, e1, err1 := Step(p, s, next)
		s2, e2, err2 := Step(p, back, next)
		is.NoErr(err1)
		is.NoErr(err2)
		is.Equal(string(mustJSON(t, s1)), string(mustJSON(t, s2)))
		is.Equal(string(mustJSON(t, e1)), string(mustJSON(t, e2)))
	}
}

// TestDeterminism: the same program and events give the same state bytes
// and effects, also with a program loaded anew.
func TestDeterminism(t *testing.T) {
	is := is.New(t)
	a := newDriver(t, load(t, richWF))
	richScript(a, nil)
	for range 3 {
		b := newDriver(t, load(t, richWF))
		s := State{}
		for i, e := range a.events {
			var eff []Effect
			var err error
			s, eff, err = Step(b.p, s, e)
			is.NoErr(err)
			_ = i
			b.effects = append(b.effects, eff...)
		}
		is.Equal(string(mustJSON(t, s)), string(mustJSON(t, a.s)))
		is.Equal(string(mustJSON(t, b.effects)), string(mustJSON(t, a.effects)))
	}
}

// TestProgramConcurrentUse steps one program from many goroutines (run
// with -race).
func TestProgramConcurrentUse(t *testing.T) {
	p := load(t, richWF)
	ref := newDriver(t, p)
	richScript(ref, nil)
	want := string(mustJSON(t, ref.s))
	inParallel(t, 8, func() string {
		var s State
		for _, e := range ref.events {
			var err error
			if s, _, err = Step(p, s, e); err != nil {
				return err.Error()
			}
		}
		if got, _ := json.Marshal(s); string(got) != want {
			return "different state"
		}
		return ""
	})
}

// inParallel runs fn in n goroutines at once and reports the problems
// they return ("" for none).
func inParallel(t *testing.T, n int, fn func() string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e := fn(); e != "" {
				errs <- e
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCELMapIterationIsSorted(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/maps
input: {type: object, properties: {m: {type: object, additionalProperties: {type: integer}}}}
steps:
  - id: s
    succeed:
      result:
        keys: =input.m.map(k, k)
        vals: =input.m.map(k, input.m[k])
        n: =size(input.m)
        has: '="b" in input.m'
`)
	for range 20 {
		d := newDriver(t, p)
		d.start(`{"m":{"d":4,"b":2,"a":1,"c":3,"e":5,"f":6,"g":7,"h":8}}`)
		is.Equal(string(d.s.Output), `{"has":true,"keys":["a","b","c","d","e","f","g","h"],"n":8,"vals":[1,2,3,4,5,6,7,8]}`)
	}
}

// TestEffectsShareNoMemory: the engine may keep or change effect payloads
// without touching the state.
func TestEffectsShareNoMemory(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, `kind: workflow
id: t/isolation
input: {type: object, properties: {id: {type: string}}}
steps:
  - id: fetch
    action: t/fetch@1
    with: {id: =input.id}
`))
	eff := d.start(`{"id":"abc"}`)
	before := string(mustJSON(t, d.s))
	spec := effectsOf(eff, EffectStartTask)[0].Task
	for i := range spec.Input {
		spec.Input[i] = 'X'
	}
	for i := range spec.Binding {
		spec.Binding[i] = 'X'
	}
	effectsOf(eff, EffectStartTimer)[0].Timer.Due = time.Time{}
	is.Equal(string(mustJSON(t, d.s)), before)
	// The program is untouched too: a new run issues the same binding.
	d2 := newDriver(t, d.p)
	spec2 := effectsOf(d2.start(`{"id":"abc"}`), EffectStartTask)[0].Task
	is.True(bytes.HasPrefix(spec2.Binding, []byte(`{"adapter":"http"`)))
}
