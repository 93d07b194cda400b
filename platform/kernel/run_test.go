package kernel

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestRunTable covers the rows of the specification's Run state table that
// the kernel implements (retry of a terminal run creates a new run: that is
// the engine's).
func TestRunTable(t *testing.T) {
	t.Run("cancel a running run", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		task := d.task("fetch")
		eff := d.must(Event{Kind: EventCancelRequested, Reason: "no longer needed"})
		is.Equal(kinds(eff), "cancel_task,cancel_timer,run_completed")
		is.Equal(effectsOf(eff, EffectCancelTask)[0].TaskID, task.ID)
		is.Equal(d.s.Status, StatusCancelled)
		is.True(d.s.ExternalEffectsMayContinue)
		is.Equal(len(d.s.Tasks)+len(d.s.Timers)+len(d.s.Tokens), 0) // scheduling stops
	})
	t.Run("cancel a waiting run", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, signalWF))
		d.start(`{}`)
		is.Equal(d.s.Status, StatusWaiting)
		d.must(Event{Kind: EventCancelRequested, Reason: "stop"})
		is.Equal(d.s.Status, StatusCancelled)
		is.True(!d.s.ExternalEffectsMayContinue)
	})
	t.Run("cancel a suspended run", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		fail(d, "fetch", "BAD", false)
		inc := d.incident(IncidentTaskFailed)
		d.must(Event{Kind: EventCancelRequested, Reason: "stop"})
		is.Equal(d.s.Status, StatusCancelled)
		is.Equal(d.s.Incidents[inc.ID].Status, IncidentResolved)
	})
	t.Run("cancel again: same snapshot, no new event", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		d.must(Event{Kind: EventCancelRequested, Reason: "stop"})
		seq := d.s.Seq
		err := d.try(Event{Kind: EventCancelRequested, Reason: "stop"})
		is.True(errors.Is(err, ErrNoChange))
		is.Equal(ErrorCode(err), CodeRuntimeState)
		is.Equal(d.s.Seq, seq)
	})
	t.Run("cancel needs a reason", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		is.Equal(ErrorCode(d.try(Event{Kind: EventCancelRequested, Reason: " \t"})), CodeValidation)
	})
	t.Run("events after the end", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		task := d.task("fetch")
		d.complete("fetch", `{"count":1}`)
		is.Equal(d.s.Status, StatusSucceeded)
		for _, e := range []Event{
			{Kind: EventCancelRequested, Reason: "late"},
			{Kind: EventTaskCompleted, TaskID: task.ID},
			{Kind: EventContinue},
		} {
			err := d.try(e)
			is.Equal(ErrorCode(err), CodeRuntimeState)
			is.True(!errors.Is(err, ErrNoChange))
		}
	})
}

func TestEventRefusals(t *testing.T) {
	is := is.New(t)
	p := load(t, fetchWF)
	var zero State
	_, _, err := Step(p, zero, Event{Seq: 1, At: t0, Kind: EventTaskCompleted})
	is.Equal(ErrorCode(err), CodeRuntimeState) // not started
	_, _, err = Step(p, zero, Event{Seq: 2, At: t0, Kind: EventStarted, RunID: "r"})
	is.Equal(ErrorCode(err), CodeRuntimeState) // the first event is seq 1
	_, _, err = Step(p, zero, Event{Seq: 1, Kind: EventStarted, RunID: "r"})
	is.Equal(ErrorCode(err), CodeValidation) // no time
	_, _, err = Step(p, zero, Event{Seq: 1, At: t0, Kind: EventStarted})
	is.Equal(ErrorCode(err), CodeValidation) // no run id
	_, _, err = Step(nil, zero, Event{Seq: 1, At: t0, Kind: EventStarted, RunID: "r"})
	is.True(err != nil)

	d := newDriver(t, p)
	d.start(`{}`)
	is.Equal(ErrorCode(d.try(Event{Kind: EventStarted, RunID: "again"})), CodeRuntimeState)
	_, _, err = Step(p, d.s, Event{Seq: d.s.Seq + 2, At: t0, Kind: EventCancelRequested, Reason: "x"})
	is.Equal(ErrorCode(err), CodeRuntimeState) // a gap
	_, _, err = Step(p, d.s, Event{Seq: d.s.Seq, At: t0, Kind: EventCancelRequested, Reason: "x"})
	is.Equal(ErrorCode(err), CodeRuntimeState) // a repeat
	is.Equal(ErrorCode(d.try(Event{Kind: "reboot"})), CodeValidation)
	is.Equal(ErrorCode(d.try(Event{Kind: EventTaskCompleted, TaskID: "unknown"})), CodeRuntimeState)
	is.Equal(ErrorCode(d.try(Event{Kind: EventTaskFailed, TaskID: "unknown"})), CodeRuntimeState)
	is.Equal(ErrorCode(d.try(Event{Kind: EventTimerFired, TimerID: "unknown"})), CodeRuntimeState)
	is.Equal(ErrorCode(d.try(Event{Kind: EventChildCompleted, ChildID: "unknown", ChildStatus: StatusSucceeded})), CodeRuntimeState)
	is.True(errors.Is(d.try(Event{Kind: EventContinue}), ErrNoChange)) // nothing to continue

	other := load(t, signalWF)
	_, _, err = Step(other, d.s, Event{Seq: d.s.Seq + 1, At: t0, Kind: EventCancelRequested, Reason: "x"})
	is.Equal(ErrorCode(err), CodeRuntimeState) // another program's state
}

func TestStartValidatesInput(t *testing.T) {
	is := is.New(t)
	p := load(t, `kind: workflow
id: t/input
input:
  type: object
  required: [n]
  properties:
    n: {type: integer}
steps:
  - id: w
    wait: 1s
`)
	for _, in := range []string{`{}`, `{"n":"x"}`, `[1]`, `{"n":1`, ``} {
		d := newDriver(t, p)
		is.Equal(ErrorCode(d.try(Event{Kind: EventStarted, RunID: "r", Input: json.RawMessage(in)})), CodeValidation)
	}
	d := newDriver(t, p)
	d.start(`{"n": 2.0}`) // integral: an int at an integer position
	is.Equal(string(d.s.Input), `{"n":2}`)
}

func TestTimeNeverGoesBack(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, signalWF))
	d.now = t0.Add(time.Minute)
	d.start(`{}`)
	// An event stamped before the run's last event is processed at that
	// time instead.
	d.now = t0
	d.must(Event{Kind: EventSignalReceived, Signal: "order.approved", Payload: json.RawMessage(`{"by":"x"}`)})
	is.Equal(d.s.Now, t0.Add(time.Minute))
	rec := records(d.last, RecordSignalReceived)
	is.Equal(rec[0].ObservedAt, t0.Add(time.Minute))
}

func TestStatusValues(t *testing.T) {
	is := is.New(t)
	for s, term := range map[Status]bool{StatusRunning: false, StatusWaiting: false, StatusSuspended: false,
		StatusSucceeded: true, StatusFailed: true, StatusCancelled: true, StatusTimedOut: true} {
		is.Equal(s.Terminal(), term)
	}
}

// TestCorruptStates: a state the kernel did not write is refused, never a
// panic.
func TestCorruptStates(t *testing.T) {
	p := load(t, `kind: workflow
id: t/corrupt
steps:
  - id: a
    wait: 1s
  - id: b
    wait: 1s
`)
	d := newDriver(t, p)
	d.start(`{}`)
	good := mustJSON(t, d.s)
	for _, tc := range []struct {
		name  string
		edit  func(m map[string]any)
		code  string
		works bool
	}{
		{"no format", func(m map[string]any) { m["format"] = 0 }, CodeRuntimeState, false},
		{"no run scope", func(m map[string]any) { m["scopes"] = map[string]any{} }, CodeRuntimeState, false},
		{"null maps", func(m map[string]any) { m["generations"], m["human_tasks"], m["vars"] = nil, nil, nil }, "", true},
		{"token in a missing scope", func(m map[string]any) {
			for _, tok := range m["tokens"].(map[string]any) {
				tok.(map[string]any)["scope"] = "gone"
			}
		}, CodeRuntimeState, false},
		{"token at a missing node", func(m map[string]any) {
			for _, tok := range m["tokens"].(map[string]any) {
				tok.(map[string]any)["node"] = "gone"
			}
		}, CodeRuntimeState, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var m map[string]any
			is.NoErr(json.Unmarshal(good, &m))
			tc.edit(m)
			var s State
			is.NoErr(json.Unmarshal(mustJSON(t, m), &s))
			tm, _ := NextDue(s)
			_, _, err := Step(p, s, Event{Seq: s.Seq + 1, At: t0.Add(time.Hour), Kind: EventTimerFired, TimerID: tm.ID})
			if tc.works {
				is.NoErr(err)
				return
			}
			is.Equal(ErrorCode(err), tc.code)
			is.True(errors.Is(err, ErrCorruptState))
		})
	}
}
