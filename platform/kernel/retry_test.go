package kernel

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"
)

// t/fetch@1 is read_only with maxAttempts 3, initialInterval 1s,
// coefficient 2, maxInterval 3s and a 10s attempt timeout.
const fetchWF = `kind: workflow
id: t/retry
steps:
  - id: fetch
    action: t/fetch@1
result: {n: =steps.fetch.output.count}
`

func fail(d *driver, node, code string, retryable bool) []Effect {
	d.tb.Helper()
	return d.must(Event{Kind: EventTaskFailed, TaskID: d.task(node).ID, Error: &TaskError{Code: code, Message: "boom"}, Retryable: retryable})
}

func TestRetryBackoffTimers(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, fetchWF))
	d.start(`{}`)
	first := d.task("fetch")
	opKey := first.OperationKey

	// Attempt 1 fails: the backoff is the initial interval, 1s.
	eff := fail(d, "fetch", "UNAVAILABLE", true)
	is.Equal(kinds(eff), "cancel_timer,start_timer")
	bt := effectsOf(eff, EffectStartTimer)[0].Timer
	is.Equal(bt.Kind, TimerRetryBackoff)
	is.Equal(bt.Due, t0.Add(time.Second))
	is.Equal(len(records(eff, RecordTaskRetryScheduled)), 1)
	is.Equal(d.s.Status, StatusRunning)
	// The failed attempt is no longer running.
	err := d.try(Event{Kind: EventTaskCompleted, TaskID: first.ID, Output: json.RawMessage(`{}`)})
	is.Equal(ErrorCode(err), CodeRuntimeState)

	eff = d.fireNext()
	starts := effectsOf(eff, EffectStartTask)
	is.Equal(len(starts), 1)
	second := starts[0].Task
	is.Equal(second.Attempt, 2)
	is.Equal(second.OperationKey, opKey) // stable across attempts
	is.True(second.TaskID != first.ID)
	is.Equal(*second.Deadline, t0.Add(time.Second+10*time.Second))

	// Attempt 2 fails: 1s × 2 = 2s.
	eff = fail(d, "fetch", "UNAVAILABLE", true)
	is.Equal(effectsOf(eff, EffectStartTimer)[0].Timer.Due, d.now.Add(2*time.Second))
	d.fireNext()
	is.Equal(d.task("fetch").Attempt, 3)

	// Attempt 3 of 3 fails: retries are exhausted.
	eff = fail(d, "fetch", "UNAVAILABLE", true)
	is.Equal(kinds(eff), "cancel_timer,open_incident")
	inc := d.incident(IncidentRetriesExhausted)
	is.Equal(inc.Attempt, 3)
	is.Equal(inc.Error.Code, "UNAVAILABLE")
	is.True(inc.RetrySafe)
	is.Equal(d.s.Status, StatusSuspended)
	is.Equal(len(records(eff, RecordRunSuspended)), 1)
}

func TestBackoffFormula(t *testing.T) {
	is := is.New(t)
	p := retryPolicy{maxAttempts: 10, initialMs: 500, coefficient: 2, maxIntervalMs: 30000}
	want := []int64{500, 1000, 2000, 4000, 8000, 16000, 30000, 30000}
	for i, w := range want {
		is.Equal(backoffMs(p, i+1), w)
	}
	is.Equal(backoffMs(retryPolicy{initialMs: 1000, coefficient: 1.5, maxIntervalMs: 60000}, 3), int64(2250))
	is.Equal(backoffMs(retryPolicy{initialMs: 1000, coefficient: 1e300, maxIntervalMs: 60000}, 90), int64(60000))
}

func TestNonRetryableFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retryable bool
		code      string
	}{
		{"reported as not retryable", false, "UNAVAILABLE"},
		{"listed in nonRetryable", true, "NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			d := newDriver(t, load(t, `kind: workflow
id: t/nonretry
steps:
  - id: fetch
    action: t/fetch@1
    retry: {nonRetryable: [NOT_FOUND]}
`))
			d.start(`{}`)
			fail(d, "fetch", tc.code, tc.retryable)
			inc := d.incident(IncidentTaskFailed)
			is.Equal(inc.Attempt, 1)
			is.Equal(inc.Error.Code, tc.code)
		})
	}
}

func TestOutcomeUnknown(t *testing.T) {
	t.Run("safe classes are re-issued with the same operation key", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, fetchWF))
		d.start(`{}`)
		first := d.task("fetch")
		eff := d.must(Event{Kind: EventTaskOutcomeUnknown, TaskID: first.ID})
		is.Equal(kinds(eff), "cancel_timer,cancel_task,start_timer")
		d.fireNext()
		is.Equal(d.task("fetch").OperationKey, first.OperationKey)
		is.Equal(d.task("fetch").Attempt, 2)
	})
	t.Run("unsafe is never re-issued", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/unsafe
steps:
  - id: charge
    action: t/charge@1
`))
		d.start(`{}`)
		eff := d.must(Event{Kind: EventTaskOutcomeUnknown, TaskID: d.task("charge").ID})
		is.Equal(kinds(eff), "cancel_timer,cancel_task,open_incident")
		inc := d.incident(IncidentTaskAmbiguous)
		is.True(!inc.RetrySafe)
		is.Equal(inc.SideEffect, "unsafe")
		is.Equal(len(effectsOf(d.effects, EffectStartTask)), 1)
	})
	t.Run("an attempt timeout is an unknown outcome", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, `kind: workflow
id: t/unsafe-timeout
steps:
  - id: charge
    action: t/charge@1
`))
		d.start(`{}`)
		eff := d.fireNext() // the 5s attempt timeout
		is.Equal(kinds(eff), "cancel_task,open_incident")
		inc := d.incident(IncidentTaskAmbiguous)
		is.Equal(inc.Error.Code, "ATTEMPT_TIMEOUT")
		is.Equal(d.now, t0.Add(5*time.Second))
	})
}

func TestStepDeadline(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, `kind: workflow
id: t/deadline
steps:
  - id: fetch
    action: t/fetch@1
    timeout: 10s
    deadline: 15s
`))
	d.start(`{}`)
	is.Equal(*d.task("fetch").Deadline, t0.Add(15*time.Second))
	fail(d, "fetch", "UNAVAILABLE", true) // backoff 1s
	d.fireNext()                          // attempt 2 at 1s; its timeout would be 11s
	is.Equal(*d.task("fetch").AttemptDeadline, t0.Add(11*time.Second))
	fail(d, "fetch", "UNAVAILABLE", true) // backoff 2s → attempt 3 at 3s
	d.fireNext()
	// Attempt 3 runs from 3s; its own timeout (13s) is before the deadline.
	is.Equal(*d.task("fetch").AttemptDeadline, t0.Add(13*time.Second))
	d.advanceTo(t0.Add(13 * time.Second)) // attempt 3 times out at 13s
	inc := d.incident(IncidentRetriesExhausted)
	is.Equal(*inc.Deadline, t0.Add(15*time.Second))
}

func TestStepDeadlineOpensDeadlineIncident(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, `kind: workflow
id: t/deadline2
steps:
  - id: fetch
    action: t/fetch@1
    timeout: 10s
    deadline: 10s
`))
	eff := d.start(`{}`)
	// Deadline equal to the attempt timeout: only the deadline timer.
	is.Equal(len(effectsOf(eff, EffectStartTimer)), 1)
	is.Equal(effectsOf(eff, EffectStartTimer)[0].Timer.Kind, TimerStepDeadline)
	eff = d.fireNext()
	is.Equal(kinds(eff), "cancel_task,open_incident")
	inc := d.incident(IncidentTaskDeadline)
	is.Equal(inc.Error.Code, "DEADLINE_EXCEEDED")
	// After the deadline, retry_safe is refused.
	is.Equal(ErrorCode(d.resolve(inc, ResolveRetrySafe, "", "")), CodeRuntimeDeadline)
}

// A service's Retry-After lengthens the backoff, up to the policy's
// maximum interval; a shorter one changes nothing.
func TestRetryAfterLengthensBackoff(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, fetchWF))
	d.start(`{}`)
	failAfter := func(ms int64) time.Time {
		eff := d.must(Event{Kind: EventTaskFailed, TaskID: d.task("fetch").ID, Error: &TaskError{Code: "HTTP_429"}, Retryable: true,
			RetryAfterMs: ms})
		return effectsOf(eff, EffectStartTimer)[0].Timer.Due
	}
	// Attempt 1: backoff 1s, asked 2.5s.
	is.Equal(failAfter(2500), d.now.Add(2500*time.Millisecond))
	d.fireNext()
	// Attempt 2: backoff 2s, asked 1h: capped at maxInterval 3s.
	is.Equal(failAfter(3600_000), d.now.Add(3*time.Second))
	d.fireNext()
	is.Equal(d.task("fetch").Attempt, 3)

	d = newDriver(t, load(t, fetchWF))
	d.start(`{}`)
	// Asked less than the backoff (or nonsense): the backoff stands.
	is.Equal(failAfter(500), d.now.Add(time.Second))
	d.fireNext()
	is.Equal(failAfter(-5), d.now.Add(2*time.Second))
}
