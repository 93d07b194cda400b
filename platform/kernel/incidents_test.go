package kernel

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// exhaust drives t/fetch@1 of fetchWF-like workflows to
// PF-TASK-RETRIES-EXHAUSTED.
func exhaust(d *driver, node string) *Incident {
	d.tb.Helper()
	for range 20 { // bounded: a kernel bug must fail the test, not hang it
		task := d.task(node)
		fail(d, node, "UNAVAILABLE", true)
		if task.Attempt == task.MaxAttempts {
			return d.incident(IncidentRetriesExhausted)
		}
		d.fireNext()
	}
	d.tb.Fatalf("retries never exhausted")
	return nil
}

// TestIncidentTable covers every row of the specification's Incident state
// table, and the refusals of each resolution.
func TestIncidentTable(t *testing.T) {
	t.Run("retry_safe on a safe class: one attempt beyond the budget with the original key", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		opKey := d.task("fetch").OperationKey
		inc := exhaust(d, "fetch")
		is.NoErr(d.resolve(inc, ResolveRetrySafe, "", ""))
		eff := d.last
		res := effectsOf(eff, EffectResolveIncident)
		is.Equal(len(res), 1)
		is.Equal(res[0].Incident.Status, IncidentResolved)
		is.Equal(res[0].Incident.Revision, 2)
		is.Equal(res[0].Incident.Resolution.Kind, ResolveRetrySafe)
		starts := effectsOf(eff, EffectStartTask)
		is.Equal(len(starts), 1)
		is.Equal(starts[0].Task.Attempt, 4) // beyond maxAttempts 3
		is.Equal(starts[0].Task.OperationKey, opKey)
		is.Equal(d.s.Status, StatusRunning)
		is.Equal(len(records(eff, RecordRunResumed)), 1)

		// The budget is not reset: the extra attempt failing exhausts again.
		fail(d, "fetch", "UNAVAILABLE", true)
		again := d.incident(IncidentRetriesExhausted)
		is.True(again.ID != inc.ID)
		is.Equal(again.Attempt, 4)
		// A second retry_safe allows one more; success completes the step.
		is.NoErr(d.resolve(again, ResolveRetrySafe, "", ""))
		d.complete("fetch", `{"count":9}`)
		is.Equal(string(d.s.Output), `{"n":9}`)
		// Resolved incidents stay in the state as history.
		is.Equal(d.s.Incidents[inc.ID].Status, IncidentResolved)
	})

	t.Run("retry_safe on a failed safe action", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		fail(d, "fetch", "BAD_REQUEST", false)
		inc := d.incident(IncidentTaskFailed)
		is.NoErr(d.resolve(inc, ResolveRetrySafe, "", ""))
		is.Equal(d.task("fetch").Attempt, 2)
	})

	t.Run("retry_safe refusals", func(t *testing.T) {
		is := is.New(t)
		unsafe := newDriver(t, load(t, `kind: workflow
id: t/unsafe
steps:
  - id: charge
    action: t/charge@1
`))
		unsafe.start(`{}`)
		fail(unsafe, "charge", "DECLINED", false)
		inc := unsafe.incident(IncidentTaskFailed)
		is.Equal(ErrorCode(unsafe.resolve(inc, ResolveRetrySafe, "", "")), CodeReconciliationRequired)

		safe := newDriver(t, load(t, fetchWF))
		safe.start(`{}`)
		inc = exhaust(safe, "fetch")
		is.Equal(ErrorCode(safe.resolve(inc, ResolveRetrySafe, `{"count":1}`, "")), CodeRuntimeOutput)
		stale := *inc
		stale.Revision = 7
		is.Equal(ErrorCode(safe.resolve(&stale, ResolveRetrySafe, "", "")), CodeIncidentRevision)
		is.Equal(ErrorCode(safe.resolve(&Incident{ID: "nope", Revision: 1}, ResolveRetrySafe, "", "")), CodeRuntimeState)
		// Reason and receipt are required.
		err := safe.try(Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: 1, Resolution: ResolveRetrySafe, ReceiptID: "r"})
		is.Equal(ErrorCode(err), CodeValidation)
		err = safe.try(Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: 1, Resolution: ResolveRetrySafe, Reason: "x"})
		is.Equal(ErrorCode(err), CodeValidation)
		err = safe.try(Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: 1, Resolution: ResolveRetrySafe, Reason: strings.Repeat("é", 2001), ReceiptID: "r"})
		is.Equal(ErrorCode(err), CodeValidation)
		err = safe.try(Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: 1, Resolution: "reboot", Reason: "x", ReceiptID: "r"})
		is.Equal(ErrorCode(err), CodeValidation)
		// Resolved once, the incident refuses another decision.
		is.NoErr(safe.resolve(inc, ResolveRetrySafe, "", ""))
		resolved := *safe.s.Incidents[inc.ID]
		is.Equal(ErrorCode(safe.resolve(&resolved, ResolveTerminate, "", "")), CodeRuntimeState)
		is.Equal(ErrorCode(safe.resolve(inc, ResolveTerminate, "", "")), CodeIncidentRevision)
	})

	t.Run("retry_safe after the action's deadline", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/deadline
steps:
  - id: fetch
    action: t/fetch@1
    deadline: 1m
`))
		d.start(`{}`)
		inc := exhaust(d, "fetch") // at 3s
		d.now = t0.Add(time.Minute - time.Millisecond)
		is.NoErr(d.resolve(inc, ResolveRetrySafe, "", ""))
		// The deadline holds: the re-armed timer has the original due time.
		tm, _ := NextDue(d.s)
		is.Equal(tm.Kind, TimerStepDeadline)
		is.Equal(tm.Due, t0.Add(time.Minute))
		fail(d, "fetch", "UNAVAILABLE", true)
		again := d.incident(IncidentRetriesExhausted)
		d.now = t0.Add(time.Minute) // exactly at the deadline is too late
		is.Equal(ErrorCode(d.resolve(again, ResolveRetrySafe, "", "")), CodeRuntimeDeadline)
		is.NoErr(d.resolve(again, ResolveTerminate, "", ""))
		is.Equal(d.s.Status, StatusCancelled)
	})

	t.Run("an ambiguous outcome is never retried", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/ambiguous
steps:
  - id: charge
    action: t/charge@1
`))
		d.start(`{}`)
		d.must(Event{Kind: EventTaskOutcomeUnknown, TaskID: d.task("charge").ID})
		inc := d.incident(IncidentTaskAmbiguous)
		is.True(!inc.Retryable())
		// Even were the action's class safe to repeat (as stored by
		// another version), PF-TASK-AMBIGUOUS allows only a reconciled
		// result or terminate.
		inc.SideEffect, inc.RetrySafe = "idempotent", true
		is.True(!inc.Retryable())
		is.Equal(ErrorCode(d.resolve(inc, ResolveRetrySafe, "", "")), CodeReconciliationRequired)
		is.Equal(d.s.Status, StatusSuspended)
		is.NoErr(d.resolve(inc, ResolveTerminate, "", ""))
		is.Equal(d.s.Status, StatusCancelled)
	})

	t.Run("accept_reconciled_result", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/reconcile
steps:
  - id: charge
    action: t/charge@1
result: {id: =steps.charge.output.chargeId}
`))
		d.start(`{}`)
		d.must(Event{Kind: EventTaskOutcomeUnknown, TaskID: d.task("charge").ID})
		inc := d.incident(IncidentTaskAmbiguous)
		is.Equal(ErrorCode(d.resolve(inc, ResolveAccept, `{"chargeId":"c9"}`, "  ")), CodeReconciliationRequired)
		is.Equal(ErrorCode(d.resolve(inc, ResolveAccept, "", "psp#123")), CodeReconciliationRequired)
		is.Equal(ErrorCode(d.resolve(inc, ResolveAccept, `{"other":1}`, "psp#123")), CodeRuntimeOutput)
		is.Equal(ErrorCode(d.resolve(inc, ResolveAccept, `{"chargeId":`, "psp#123")), CodeRuntimeOutput)
		big := `{"chargeId":"` + strings.Repeat("x", MaxValueBytes) + `"}`
		is.Equal(ErrorCode(d.resolve(inc, ResolveAccept, big, "psp#123")), CodeRuntimeOutput)
		is.NoErr(d.resolve(inc, ResolveAccept, `{"chargeId":"c9"}`, "psp#123"))
		is.Equal(d.s.Status, StatusSucceeded)
		is.Equal(string(d.s.Output), `{"id":"c9"}`)
		r := d.s.Incidents[inc.ID].Resolution
		is.Equal(r.EvidenceReference, "psp#123")
		is.Equal(r.ReceiptID, "11111111-2222-4333-8444-555555555555")
		is.Equal(r.Seq, d.s.Seq)
	})

	t.Run("terminate", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/terminate
steps:
  - id: charge
    action: t/charge@1
`))
		d.start(`{}`)
		fail(d, "charge", "DECLINED", false)
		inc := d.incident(IncidentTaskFailed)
		is.Equal(ErrorCode(d.resolve(inc, ResolveTerminate, `{"x":1}`, "")), CodeRuntimeOutput)
		is.NoErr(d.resolve(inc, ResolveTerminate, "", ""))
		is.Equal(d.s.Status, StatusCancelled)
		is.True(d.s.ExternalEffectsMayContinue)
		comp := effectsOf(d.last, EffectRunCompleted)
		is.Equal(len(comp), 1)
		is.Equal(comp[0].Completion.Status, StatusCancelled)
		is.True(comp[0].Completion.ExternalEffectsMayContinue)
	})
}

// Two parallel branches each open an incident: one barrier holds the run
// until the last is resolved, then the run continues once.
const barrierWF = `kind: workflow
id: t/barrier
timeout: 1h
steps:
  - id: both
    parallel:
      - name: left
        steps:
          - id: a
            action: t/charge@1
          - id: a2
            action: t/fetch@1
      - name: right
        steps:
          - id: b
            action: t/charge@1
      - name: slow
        steps:
          - id: c
            action: t/fetch@1
          - id: c2
            action: t/fetch@1
result: {a: =steps.a.output.chargeId, b: =steps.b.output.chargeId}
`

func TestSuspensionBarrier(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, barrierWF))
	d.start(`{}`)
	fail(d, "a", "DECLINED", false)
	is.Equal(d.s.Status, StatusSuspended)
	d.must(Event{Kind: EventTaskOutcomeUnknown, TaskID: d.task("b").ID})
	first, second := d.incident(IncidentTaskFailed), d.incident(IncidentTaskAmbiguous)
	is.True(first.NodeID != second.NodeID)

	// Work already in flight may complete while suspended, but nothing
	// continues: c's completion is held at the barrier.
	eff := d.complete("c", `{"count":1}`)
	is.Equal(len(effectsOf(eff, EffectStartTask)), 0)
	is.Equal(d.s.Status, StatusSuspended)

	is.NoErr(d.resolve(first, ResolveAccept, `{"chargeId":"a1"}`, "ref-a"))
	is.Equal(d.s.Status, StatusSuspended) // the other incident still holds
	is.Equal(len(effectsOf(d.last, EffectStartTask)), 0)

	is.NoErr(d.resolve(second, ResolveAccept, `{"chargeId":"b1"}`, "ref-b"))
	// The run continues once: both held continuations start now.
	starts := effectsOf(d.last, EffectStartTask)
	is.Equal(len(starts), 2)
	is.Equal(starts[0].Task.NodeID, "c2")
	is.Equal(starts[1].Task.NodeID, "a2")
	is.Equal(d.s.Status, StatusRunning)
	d.complete("a2", `{}`)
	d.complete("c2", `{}`)
	is.Equal(string(d.s.Output), `{"a":"a1","b":"b1"}`)
}

func TestDeadlinesEndSuspendedRun(t *testing.T) {
	t.Run("overall deadline", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, barrierWF))
		d.start(`{}`)
		fail(d, "a", "DECLINED", false)
		inc := d.incident(IncidentTaskFailed)
		eff := d.advanceTo(t0.Add(time.Hour))
		is.Equal(d.s.Status, StatusTimedOut)
		is.Equal(d.s.Error.Code, ErrCodeRunTimeout)
		// The incident is closed with the run; resolving it is refused.
		is.Equal(d.s.Incidents[inc.ID].Status, IncidentResolved)
		is.Equal(d.s.Incidents[inc.ID].Resolution.Kind, resolveRunEnded)
		is.Equal(len(effectsOf(eff, EffectResolveIncident)), 1)
		is.True(d.s.ExternalEffectsMayContinue) // b and c were in flight
		is.Equal(ErrorCode(d.resolve(d.s.Incidents[inc.ID], ResolveTerminate, "", "")), CodeRuntimeState)
	})
	t.Run("signal deadline without onTimeout", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/suspended-wait
steps:
  - id: both
    parallel:
      - name: left
        steps:
          - id: a
            action: t/charge@1
      - name: right
        steps:
          - id: s
            signal: go
            deadline: 10m
`))
		d.start(`{}`)
		fail(d, "a", "DECLINED", false)
		is.Equal(d.s.Status, StatusSuspended)
		d.fireNext()
		is.Equal(d.s.Status, StatusTimedOut)
		is.Equal(d.s.Error.Node, "s")
	})
}

func TestIncidentIDsAreDeterministic(t *testing.T) {
	is := is.New(t)
	run := func() *Incident {
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		return exhaust(d, "fetch")
	}
	a, b := run(), run()
	is.Equal(a.ID, b.ID)
	is.Equal(a.ID, incidentID("run-1", "fetch", 1, 3, IncidentRetriesExhausted))
	is.Equal(string(mustJSON(t, a)), string(mustJSON(t, b)))
	var back Incident
	is.NoErr(json.Unmarshal(mustJSON(t, a), &back))
	is.Equal(string(mustJSON(t, back)), string(mustJSON(t, a)))
}
