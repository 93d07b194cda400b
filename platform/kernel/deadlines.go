package kernel

import (
	"slices"
	"sort"
	"time"
)

// TimerKind says what a timer is for.
type TimerKind string

const (
	// TimerRunDeadline is the workflow's overall timeout.
	TimerRunDeadline TimerKind = "run_deadline"
	// TimerSignalDeadline and TimerHumanDeadline end a signal or human
	// step's wait.
	TimerSignalDeadline TimerKind = "signal_deadline"
	TimerHumanDeadline  TimerKind = "human_deadline"
	// TimerStepDeadline is an action's deadline for all attempts together
	// (or an agent step's timeout): PF-TASK-DEADLINE when it passes.
	TimerStepDeadline TimerKind = "step_deadline"
	// TimerAttemptTimeout ends one attempt: its outcome becomes unknown.
	TimerAttemptTimeout TimerKind = "attempt_timeout"
	// TimerChildTimeout is a workflow step's timeout.
	TimerChildTimeout TimerKind = "child_timeout"
	// TimerWait is a wait step's duration.
	TimerWait TimerKind = "wait"
	// TimerRetryBackoff delays the next attempt of a failed action.
	TimerRetryBackoff TimerKind = "retry_backoff"
)

// Timer is a pending timer. The engine schedules a timer_fired event for it
// at Due (or later); the kernel decides what it means.
type Timer struct {
	ID       string    `json:"id"`
	Kind     TimerKind `json:"kind"`
	Due      time.Time `json:"due"`
	NodeID   string    `json:"node_id,omitempty"`
	Instance string    `json:"instance,omitempty"`
	Token    string    `json:"token,omitempty"`
	TaskID   string    `json:"task_id,omitempty"`
	ChildID  string    `json:"child_id,omitempty"`
}

// Class orders timers that are due together, as the specification's "wait
// and deadline order" requires: the overall run timeout (0) first, then
// signal timeouts and the other deadlines (1), then duration waits and
// retry backoffs (2).
func (k TimerKind) Class() int {
	switch k {
	case TimerRunDeadline:
		return 0
	case TimerWait, TimerRetryBackoff:
		return 2
	}
	return 1
}

// rank breaks ties between timers of one class, due time and node: a
// step's deadline wins over an attempt timeout falling at the same time.
func (k TimerKind) rank() int {
	switch k {
	case TimerRunDeadline:
		return 0
	case TimerSignalDeadline, TimerHumanDeadline:
		return 1
	case TimerStepDeadline, TimerChildTimeout:
		return 2
	case TimerAttemptTimeout:
		return 3
	case TimerWait:
		return 4
	}
	return 5
}

func timerLess(a, b *Timer) bool {
	if ca, cb := a.Kind.Class(), b.Kind.Class(); ca != cb {
		return ca < cb
	}
	if !a.Due.Equal(b.Due) {
		return a.Due.Before(b.Due)
	}
	if a.NodeID != b.NodeID {
		return a.NodeID < b.NodeID
	}
	if ra, rb := a.Kind.rank(), b.Kind.rank(); ra != rb {
		return ra < rb
	}
	return a.ID < b.ID
}

// DueOrder returns the timers due at now (Due <= now) in the order the
// kernel processes them: overall run timeout first, then signal timeouts
// and other deadlines, then duration waits, each by due time and node id.
// The engine's scheduler fires the first (timer_fired with At = now); the
// kernel then processes every timer due at At in this order within that
// one Step, and a timer it processed that way becomes stale.
func DueOrder(s State, now time.Time) []Timer {
	var due []*Timer
	for _, t := range s.Timers {
		if !t.Due.After(now) {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool { return timerLess(due[i], due[j]) })
	out := make([]Timer, len(due))
	for i, t := range due {
		out[i] = *t
	}
	return out
}

// NextDue returns the earliest pending timer (ties broken like DueOrder),
// for the engine's scheduler to wake up at; false when none is pending.
func NextDue(s State) (Timer, bool) {
	var best *Timer
	for _, t := range s.Timers {
		if best == nil || t.Due.Before(best.Due) || (t.Due.Equal(best.Due) && timerLess(t, best)) {
			best = t
		}
	}
	if best == nil {
		return Timer{}, false
	}
	return *best, true
}

// dueTimers is DueOrder on the machine's own state, returning pointers.
func dueTimers(timers map[string]*Timer, now time.Time) []*Timer {
	var due []*Timer
	for _, t := range timers {
		if !t.Due.After(now) {
			due = append(due, t)
		}
	}
	slices.SortFunc(due, func(a, b *Timer) int {
		if timerLess(a, b) {
			return -1
		}
		if timerLess(b, a) {
			return 1
		}
		return 0
	})
	return due
}

func addMs(t time.Time, ms int64) time.Time { return t.Add(time.Duration(ms) * time.Millisecond) }
