package kernel

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

const orderWF = `kind: workflow
id: t/order
timeout: 1h
steps:
  - id: all
    parallel:
      - name: p1
        steps:
          - id: zwait
            wait: 10m
      - name: p2
        steps:
          - id: await
            wait: 10m
      - name: p3
        steps:
          - id: early
            wait: 20m
      - name: p4
        steps:
          - id: sig
            signal: s
            deadline: 50m
            onTimeout: after
          - id: after
            wait: 1s
            next: end
`

func TestDueOrder(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, orderWF))
	d.start(`{}`)
	order := func(at time.Duration) []string {
		var out []string
		for _, tm := range DueOrder(d.s, t0.Add(at)) {
			out = append(out, tm.NodeID+"/"+string(tm.Kind))
		}
		return out
	}
	is.Equal(order(9*time.Minute), []string(nil))
	// Duration waits by due time, then node id.
	is.Equal(order(10*time.Minute), []string{"await/wait", "zwait/wait"})
	// Everything due: overall run timeout first, then signal timeouts, then
	// duration waits by due time and node id, although the waits were due
	// earlier.
	is.Equal(order(2*time.Hour), []string{"/run_deadline", "sig/signal_deadline", "await/wait", "zwait/wait", "early/wait"})

	next, ok := NextDue(d.s)
	is.True(ok)
	is.Equal(next.NodeID, "await")
	is.Equal(next.Kind.Class(), 2)
	_, ok = NextDue(State{})
	is.True(!ok)

	// The scheduler fires the first due timer; the run deadline wins and
	// no wait elapses.
	eff := d.advanceTo(t0.Add(2 * time.Hour))
	is.Equal(d.s.Status, StatusTimedOut)
	is.Equal(len(records(eff, RecordWaitElapsed)), 0)
	is.Equal(len(records(eff, RecordTimedOut)), 1)
}

func TestDueTimersProcessedInOrderWithinOneEvent(t *testing.T) {
	is := is.New(t)
	d := newDriver(t, load(t, strings.Replace(orderWF, "timeout: 1h\n", "", 1)))
	d.start(`{}`)
	// The engine observes the latest timer only at 55m and fires it; every
	// timer due by then is processed in DueOrder within that event.
	d.now = t0.Add(55 * time.Minute)
	eff := d.must(Event{Kind: EventTimerFired, TimerID: timerID("run-1", TimerWait, "early", 1, 0)})
	var got []string
	for _, e := range eff {
		if e.Kind == EffectRecord && (e.Record.Type == RecordWaitElapsed || e.Record.Type == RecordTimedOut) {
			got = append(got, e.Record.Type+":"+e.Record.NodeID)
			is.Equal(e.Record.ObservedAt, t0.Add(55*time.Minute))
		}
	}
	is.Equal(got, []string{"timed_out:sig", "wait_elapsed:await", "wait_elapsed:zwait", "wait_elapsed:early"})
	// The other timers the engine had scheduled are now stale.
	err := d.try(Event{Kind: EventTimerFired, TimerID: timerID("run-1", TimerWait, "await", 1, 0)})
	is.Equal(ErrorCode(err), CodeRuntimeState)
	d.fireNext() // "after"
	is.Equal(d.s.Status, StatusSucceeded)
}

func TestTimerClasses(t *testing.T) {
	is := is.New(t)
	is.Equal(TimerRunDeadline.Class(), 0)
	for _, k := range []TimerKind{TimerSignalDeadline, TimerHumanDeadline, TimerStepDeadline, TimerAttemptTimeout, TimerChildTimeout} {
		is.Equal(k.Class(), 1)
	}
	is.Equal(TimerWait.Class(), 2)
	is.Equal(TimerRetryBackoff.Class(), 2)
	// Same class, due time and node: the step deadline before the attempt
	// timeout.
	a := &Timer{ID: "a", Kind: TimerAttemptTimeout, Due: t0, NodeID: "n"}
	b := &Timer{ID: "b", Kind: TimerStepDeadline, Due: t0, NodeID: "n"}
	is.True(timerLess(b, a))
	is.True(!timerLess(a, b))
}
