package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
)

// Executors of dispatch rows.
const (
	executorHTTP        = "http"
	executorAgent       = "agent"
	executorUnavailable = "unavailable"
)

// Dispatch limits: tasks started per dispatcher turn and in flight at once.
const (
	dispatchBatch   = 64
	maxInFlight     = 256
	outcomeDeadline = 5 * time.Second
)

// outcome is how a dispatched call ended.
type outcome struct {
	// Output is the task output (completed).
	Output json.RawMessage
	// Err is set when the task failed; Retryable says whether the retry
	// policy applies.
	Err       *kernel.TaskError
	Retryable bool
	// RetryAfter is the wait the service asked for (Retry-After).
	RetryAfter time.Duration
	// Unknown: the call may or may not have taken effect.
	Unknown bool
	// Note is a log line about the call (method, url, status, duration).
	Note string
}

// event is the kernel event reporting o for task id.
func (o outcome) event(id string) kernel.Event {
	switch {
	case o.Unknown:
		return kernel.Event{Kind: kernel.EventTaskOutcomeUnknown, TaskID: id}
	case o.Err != nil:
		return kernel.Event{Kind: kernel.EventTaskFailed, TaskID: id, Error: o.Err, Retryable: o.Retryable,
			RetryAfterMs: o.RetryAfter.Milliseconds()}
	}
	out := o.Output
	if len(out) == 0 {
		out = json.RawMessage("{}")
	}
	return kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: id, Output: out}
}

// dispatchRow is a claimed dispatch.
type dispatchRow struct {
	TaskID, RunID, Executor string
	Spec                    kernel.TaskSpec
}

// recoverDispatches runs once before the dispatcher: a dispatch marked
// started by an earlier process has an unknown outcome. The kernel retries
// a safe class and opens PF-TASK-AMBIGUOUS for an unsafe one.
func (s *Service) recoverDispatches(ctx context.Context) error {
	rows, err := startedDispatches(ctx, s.db.Reader())
	if err != nil {
		return err
	}
	for _, id := range rows {
		if err := s.finish(ctx, id, outcome{Unknown: true, Note: "the daemon stopped while the call was in flight"}); err != nil {
			return err
		}
	}
	return nil
}

// dispatch starts up to dispatchBatch pending tasks of runs that are not
// paused: each is marked started in one commit, then performed in a
// goroutine. It answers whether a full batch was started.
func (s *Service) dispatch(ctx context.Context) (bool, error) {
	free := maxInFlight - int(s.inFlightCount.Load())
	if free <= 0 {
		return false, nil
	}
	var claimed []dispatchRow
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		if claimed, err = s.pendingDispatches(ctx, tx, min(free, dispatchBatch)); err != nil {
			return err
		}
		now := s.timestamp()
		for _, d := range claimed {
			if err := markDispatchStarted(ctx, tx, d.TaskID, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	for _, d := range claimed {
		var callCtx context.Context
		var cancel context.CancelFunc
		if d.Spec.Deadline != nil {
			callCtx, cancel = context.WithDeadline(ctx, *d.Spec.Deadline)
		} else {
			callCtx, cancel = context.WithCancel(ctx)
		}
		s.calls.Add(1) // before track: see cancelInFlight
		s.track(d.TaskID, cancel)
		go func() {
			defer s.calls.Done()
			defer s.untrack(d.TaskID)
			o := s.perform1(callCtx, d)
			if ctx.Err() != nil && o.Unknown {
				return // shutting down cut the call: the started row makes the outcome unknown on restart
			}
			// An outcome that arrived is recorded, even while shutting down.
			s.recordOutcome(context.WithoutCancel(ctx), d.TaskID, o)
		}()
	}
	return len(claimed) == dispatchBatch, nil
}

// perform1 performs one dispatched task with its executor.
func (s *Service) perform1(ctx context.Context, d dispatchRow) outcome {
	switch d.Executor {
	case executorHTTP:
		return s.performHTTP(ctx, &d.Spec)
	case executorAgent:
		return s.performAgent(ctx, d.RunID, &d.Spec)
	}
	return outcome{Err: &kernel.TaskError{Code: "EXECUTOR_UNAVAILABLE",
		Message: fmt.Sprintf("no executor can perform %s here: only the built-in http, echo and noop adapters and worker queues are served", d.Spec.Ref)}}
}

// recordOutcome records the outcome of dispatched task id, trying again a few
// times when the write fails: an outcome left unrecorded would reach the
// run only as an unknown one (after a restart, or the attempt's timer).
func (s *Service) recordOutcome(ctx context.Context, id string, o outcome) {
	var err error
	for attempt := range reportAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		fctx, cancel := context.WithTimeout(ctx, outcomeDeadline)
		err = s.finish(fctx, id, o)
		cancel()
		if err == nil {
			return
		}
	}
	s.logErr(ctx, "report task "+id, err)
}

// reportAttempts bounds the writes of one outcome.
const reportAttempts = 3

// finish reports the outcome of dispatched task id: the dispatch row is
// deleted and the event fed to the run in one transaction. A task that was
// withdrawn meanwhile (cancelled, timed out) is ignored.
func (s *Service) finish(ctx context.Context, id string, o outcome) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		run, stored, err := readDispatch(ctx, tx, id)
		if errors.Is(err, errNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var spec kernel.TaskSpec
		if err := s.seal.openTaskSpec(stored, id, &spec); err != nil {
			return err
		}
		node := spec.NodeID
		if err := deleteDispatch(ctx, tx, id); err != nil {
			return err
		}
		if o.Note != "" {
			level := "info"
			if o.Err != nil || o.Unknown {
				level = "warn"
			}
			if err := writeLog(ctx, tx, run, logLine{At: s.timestamp(), Level: level, Type: "task_call", Node: node, Message: o.Note,
				Data: map[string]any{"task_id": id}}); err != nil {
				return err
			}
		}
		_, _, _, err = s.Deliver(ctx, tx, "", run, o.event(id))
		return dropRefused(ctx, tx, run, s.timestamp(), "outcome of task "+id, err)
	})
	if err == nil {
		s.notify()
	}
	return err
}

// track remembers the cancel function of an in-flight call.
func (s *Service) track(id string, cancel context.CancelFunc) {
	s.mu.Lock()
	s.inFlight[id] = cancel
	s.mu.Unlock()
	s.inFlightCount.Add(1)
}

func (s *Service) untrack(id string) {
	s.mu.Lock()
	cancel, ok := s.inFlight[id]
	delete(s.inFlight, id)
	s.mu.Unlock()
	if ok {
		cancel()
		s.inFlightCount.Add(-1)
	}
}

// cancelInFlight stops the call of task id, if one is in flight, once
// the transaction that withdrew the task (deleting its dispatch row) has
// committed: cancelling earlier would cut a call the run still waits for
// if that transaction rolled back. It waits at most withdrawWait.
func (s *Service) cancelInFlight(id string) {
	s.mu.Lock()
	_, ok := s.inFlight[id]
	if ok {
		// The call's goroutine untracks before it calls s.calls.Done, so
		// the count is positive here: Add cannot race Close's Wait.
		s.calls.Add(1)
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	go func() {
		defer s.calls.Done()
		for deadline := time.Now().Add(withdrawWait); time.Now().Before(deadline); time.Sleep(withdrawPoll) {
			s.mu.Lock()
			cancel, ok := s.inFlight[id]
			s.mu.Unlock()
			if !ok {
				return // the call ended
			}
			if gone, err := dispatchGone(s.db.Reader(), id); err == nil && gone {
				cancel()
				return
			}
		}
	}()
}

// withdrawWait bounds how long a withdrawal's commit is waited for (a
// write phase's bound); withdrawPoll is how often it is looked for.
const (
	withdrawWait = 5 * time.Second
	withdrawPoll = 5 * time.Millisecond
)

// dropRefused turns the refusal of a task outcome into a note in the run's
// log: the kernel no longer waits for the attempt (it was withdrawn or
// timed out meanwhile), or the run's state cannot be read (a legacy run,
// which only cancellation changes). Other errors are returned.
func dropRefused(ctx context.Context, tx *sql.Tx, run string, at time.Time, what string, err error) error {
	if kernel.ErrorCode(err) == "" && !errors.Is(err, errLegacy) {
		return err
	}
	return writeLog(ctx, tx, run, logLine{At: at, Level: "warn", Type: "event_refused", Message: fmt.Sprintf("%s refused: %v", what, err)})
}
