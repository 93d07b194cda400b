package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/platform/kernel"
)

// perform turns the effects of an accepted event into durable work, in the
// transaction that stores the new state: tasks for executors (dispatch
// rows, worker queue rows), human task rows, child runs, inbox events for
// other runs, outbox events and log lines. Nothing here calls out of the
// process; the executors do that after the commit. With rows (a cursor's,
// when the effects leave the run's own row alone: ownRowOnly), the run's
// log lines and outbox events are added to them for the cursor's flush.
func (s *Service) perform(ctx context.Context, tx *sql.Tx, r *runRow, p *program, e kernel.Event, effects []kernel.Effect, rows *pendingRows) error {
	if e.Kind == kernel.EventStarted {
		if err := s.emitTo(ctx, tx, r, EventRunStarted, nil, rows); err != nil {
			return err
		}
	}
	// The records of consecutive effects share one log statement; lines
	// keep the effects' order.
	var lines []logLine
	// records counts the records as saveStep stored them with the event.
	records := 0
	flush := func() error {
		err := addLogs(ctx, tx, r.ID, lines, rows)
		lines = lines[:0]
		return err
	}
	for _, ef := range effects {
		if ef.Kind == kernel.EffectRecord {
			if ef.Record != nil {
				lines = append(lines, recordLine(ef.Record, e.Seq, records))
				records++
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		var err error
		switch ef.Kind {
		case kernel.EffectStartTask:
			err = s.startTask(ctx, tx, r, p, ef.Task)
		case kernel.EffectCancelTask:
			err = s.cancelTask(ctx, tx, r, ef.TaskID, ef.Reason)
		case kernel.EffectOpenHumanTask:
			err = openHumanTask(ctx, tx, r, ef.Human)
		case kernel.EffectCloseHumanTask:
			err = closeHumanTask(ctx, tx, r, ef.Human, ef.Reason)
		case kernel.EffectStartChild:
			err = s.startChild(ctx, tx, r, ef.Child)
		case kernel.EffectCancelChild:
			err = s.cancelChild(ctx, tx, r, ef.Child, ef.Reason)
		case kernel.EffectRunCompleted:
			err = s.completed(ctx, tx, r, p, ef.Completion, rows)
		case kernel.EffectOpenIncident:
			err = s.emitTo(ctx, tx, r, EventIncidentOpened, ef.Incident, rows)
		case kernel.EffectResolveIncident:
			err = s.emitTo(ctx, tx, r, EventIncidentResolved, ef.Incident, rows)
		}
		if err != nil {
			return err
		}
	}
	return flush()
}

// startTask routes an issued task to its executor: built-in echo and noop
// adapters complete inline (the needs_work flag), the http adapter and
// agent steps through a dispatch row, worker bindings through the worker
// queue. A binding nothing here can perform is dispatched as unavailable
// and fails without retry, which opens a PF-TASK-FAILED incident.
func (s *Service) startTask(ctx context.Context, tx *sql.Tx, r *runRow, p *program, t *kernel.TaskSpec) error {
	if t == nil {
		return nil
	}
	var executor string
	switch t.Executor {
	case kernel.ExecutorAgent:
		executor = executorAgent
	case kernel.ExecutorWorker:
		if err := s.enqueueWorkerTask(ctx, tx, r, t, !p.sec.none); err != nil {
			return err
		}
		return writeLog(ctx, tx, r.ID, logLine{At: s.timestamp(), Seq: r.State.Seq, Type: "task_queued", Node: t.NodeID,
			Message: fmt.Sprintf("attempt %d queued for workers", t.Attempt)})
	case kernel.ExecutorConnector:
		switch p.adapters[t.Ref] {
		case adapterEcho, adapterNoop:
			return nil
		case adapterHTTP:
			executor = executorHTTP
		default:
			executor = executorUnavailable
		}
	default:
		executor = executorUnavailable
	}
	spec, err := s.seal.taskSpec(!p.sec.none, t)
	if err != nil {
		return err
	}
	if err := insertDispatch(ctx, tx, r, t.TaskID, executor, spec, s.timestamp()); err != nil {
		return err
	}
	s.dispatchPending.Store(true)
	return nil
}

// cancelTask withdraws a task: its dispatch row or worker queue row goes,
// and an in-flight call is cancelled after the commit.
func (s *Service) cancelTask(ctx context.Context, tx *sql.Tx, r *runRow, id, reason string) error {
	if err := deleteDispatch(ctx, tx, id); err != nil {
		return err
	}
	if err := cancelWorkerTask(ctx, tx, r, id, reason); err != nil {
		return err
	}
	s.cancelInFlight(id)
	return nil
}

// startChild creates the child run of a workflow step in the caller's
// transaction: same environment and activation, the callee's pinned
// published version, linked back to the caller so its end comes back as
// child_completed.
func (s *Service) startChild(ctx context.Context, tx *sql.Tx, caller *runRow, c *kernel.Child) error {
	if c == nil {
		return nil
	}
	if _, err := s.getRun(ctx, tx, "", c.ID); err == nil {
		return nil // already started (an effect is idempotent by its id)
	} else if !errors.Is(err, errNotFound) {
		return err
	}
	p, err := s.program(ctx, tx, caller.Project, c.PublishedVersionID)
	if err != nil {
		return err
	}
	now := s.timestamp()
	version, callerID, childID := c.PublishedVersionID, caller.ID, c.ID
	child := runRow{ID: c.ID, Tenant: caller.Tenant, Project: caller.Project, Environment: caller.Environment,
		ActivationID: caller.ActivationID, CreatedAt: now, UpdatedAt: now, CreatedBy: caller.CreatedBy,
		PublishedVersionID: version, CallerRunID: &callerID, CallerChildID: &childID, Test: caller.Test}
	if err := insertRun(ctx, tx, &child); err != nil {
		return err
	}
	input := c.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if _, err := s.apply(ctx, tx, &child, p, kernel.Event{Kind: kernel.EventStarted, RunID: child.ID, Input: input}); err != nil {
		// The callee refused its input: the child fails at once.
		if kernel.ErrorCode(err) == "" {
			return err
		}
		return s.enqueue(ctx, tx, caller.ID, kernel.Event{Kind: kernel.EventChildCompleted, ChildID: c.ID,
			ChildStatus: kernel.StatusFailed, Error: &kernel.TaskError{Code: kernel.ErrorCode(err), Message: err.Error()}})
	}
	return writeLog(ctx, tx, caller.ID, logLine{At: now, Seq: caller.State.Seq, Type: "child_started", Node: c.Node,
		Message: "child run " + c.ID + " started (" + c.Ref + ")"})
}

// cancelChild asks a child run to stop (through its inbox, or at once
// when it is paused).
func (s *Service) cancelChild(ctx context.Context, tx *sql.Tx, caller *runRow, c *kernel.Child, reason string) error {
	if c == nil {
		return nil
	}
	if reason == "" {
		reason = "the calling run cancelled its workflow step"
	}
	child, err := s.getRun(ctx, tx, "", c.ID)
	if errors.Is(err, errNotFound) || (err == nil && child.State.Status.Terminal()) {
		return nil
	}
	if err != nil {
		return err
	}
	e := kernel.Event{Kind: kernel.EventCancelRequested, Reason: "caller: " + reason}
	if child.Paused {
		// The loop leaves a paused run's inbox alone, and a cancellation
		// is never held: the child is cancelled now.
		p, err := s.program(ctx, tx, child.Project, child.PublishedVersionID)
		if err != nil {
			return err
		}
		if _, err := s.apply(ctx, tx, &child, p, e); err != nil && kernel.ErrorCode(err) == "" {
			return err
		}
		return nil
	}
	return s.enqueue(ctx, tx, c.ID, e)
}

// completed handles the end of a run: the outbox event, and
// child_completed for the caller of a child run (rows: see perform).
func (s *Service) completed(ctx context.Context, tx *sql.Tx, r *runRow, p *program, c *kernel.Completion, rows *pendingRows) error {
	if c == nil {
		return nil
	}
	published := *c // subscribers see the output as run views show it
	published.Output = redact(c.Output, p.sec.Output)
	if err := s.emitTo(ctx, tx, r, "platform.run."+string(c.Status), published, rows); err != nil {
		return err
	}
	if err := addLogs(ctx, tx, r.ID, []logLine{{At: s.timestamp(), Seq: r.State.Seq, Type: "run_" + string(c.Status),
		Message: "run " + string(c.Status)}}, rows); err != nil {
		return err
	}
	if r.CallerRunID == nil || r.CallerChildID == nil {
		return nil
	}
	e := kernel.Event{Kind: kernel.EventChildCompleted, ChildID: *r.CallerChildID, ChildStatus: c.Status, Output: c.Output}
	if c.Error != nil {
		e.Error = &kernel.TaskError{Code: c.Error.Code, Message: c.Error.Message}
	}
	return s.enqueue(ctx, tx, *r.CallerRunID, e)
}

// enqueue holds e in run id's inbox and flags the run for the loop.
func (s *Service) enqueue(ctx context.Context, tx *sql.Tx, id string, e kernel.Event) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("engine: encode event: %w", err)
	}
	// Sealed always: which values of the event are secret is the receiving
	// run's program's to say, and held events are few.
	sealed, err := s.seal.seal(raw, inboxAD(id))
	if err != nil {
		return err
	}
	return holdEvent(ctx, tx, id, sealed, s.timestamp())
}

// Deliver feeds e to run id of environment env ("" for any) in tx: at once,
// or held in the run's inbox while the run is paused (a cancellation is
// never held; a held event is checked against the paused state first). It answers the run as it is after the event, and whether
// the event was held. A kernel refusal is returned as *kernel.Error and
// writes nothing. The caller wakes the loop (Notify) after the commit.
func (s *Service) Deliver(ctx context.Context, tx *sql.Tx, env, id string, e kernel.Event) (runRow, *program, bool, error) {
	r, err := s.getRun(ctx, tx, env, id)
	if err != nil {
		return r, nil, false, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	if err != nil {
		return r, nil, false, err
	}
	if r.Paused && e.Kind != kernel.EventCancelRequested && !r.State.Status.Terminal() {
		// Held until the run resumes: checked now against the paused
		// state, so that a refusal answers the sender rather than being
		// dropped on resume.
		probe := e
		probe.Seq, probe.At = r.State.Seq+1, s.timestamp()
		if _, _, err := kernel.Step(p.p, r.State, probe); err != nil {
			return r, p, false, err
		}
		return r, p, true, s.enqueue(ctx, tx, id, e)
	}
	_, err = s.apply(ctx, tx, &r, p, e)
	return r, p, false, err
}

// Notify wakes the engine loop (after a commit that gave it work).
func (s *Service) Notify() { s.notify() }
