package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// Worker tasks (migration 0012_worker_tasks): an attempt of an action bound
// to `worker: <queue>` is a row written in the transaction that issued it
// (status ready). A worker claims it through the API (status leased, with
// its worker id, its principal and an expiry it extends by heartbeats) and
// reports the outcome; the row is deleted, and how the task ended recorded
// (platform_worker_task_ends), in the transaction that feeds that outcome
// to the run. The kernel withdraws an attempt (attempt timeout, step
// deadline, the run ended) with cancel_task, which ends the task whatever
// its status; a lease that expires is an attempt whose outcome is unknown
// (recoverLeases). A task is never leased twice: the next attempt of a
// step is a new task.

// Worker task statuses.
const (
	taskReady  = "ready"
	taskLeased = "leased"
)

// workerTask is a stored worker task.
type workerTask struct {
	TaskID, RunID, Environment, Queue, Status string
	Spec                                      kernel.TaskSpec
	WorkerID, PrincipalID                     string
	LeaseExpiresAt                            *time.Time
	// ClaimDeadline (deadline_at) is when the task stops being handed out
	// (claimDeadline).
	ClaimDeadline *time.Time
	CreatedAt     time.Time
}

const workerTaskCols = `task_id, run_id, environment_id, queue, spec, status, COALESCE(worker_id, ''), COALESCE(principal_id, ''),
	lease_expires_at, deadline_at, created_at`

func (sl sealer) scanWorkerTask(sc interface{ Scan(...any) error }) (workerTask, error) {
	var w workerTask
	var spec string
	var lease, claimBy sql.NullInt64
	var created int64
	if err := sc.Scan(&w.TaskID, &w.RunID, &w.Environment, &w.Queue, &spec, &w.Status, &w.WorkerID, &w.PrincipalID,
		&lease, &claimBy, &created); err != nil {
		return w, err
	}
	if err := sl.openTaskSpec(spec, w.TaskID, &w.Spec); err != nil {
		return w, err
	}
	if lease.Valid {
		t := store.FromMillis(lease.Int64)
		w.LeaseExpiresAt = &t
	}
	if claimBy.Valid {
		t := store.FromMillis(claimBy.Int64)
		w.ClaimDeadline = &t
	}
	w.CreatedAt = store.FromMillis(created)
	return w, nil
}

// getWorkerTask reads a worker task of environment env; errNotFound when
// there is none.
func (s *Service) getWorkerTask(ctx context.Context, q store.Querier, env, id string) (workerTask, error) {
	w, err := s.seal.scanWorkerTask(q.QueryRowContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks
		WHERE task_id = ? AND environment_id = ?`, id, env))
	if errors.Is(err, sql.ErrNoRows) {
		return w, errNotFound
	}
	if err != nil {
		return w, fmt.Errorf("engine: read worker task: %w", err)
	}
	return w, nil
}

// workerQueue is the queue of a worker binding ({"type": "worker",
// "queue": ...}).
func workerQueue(t *kernel.TaskSpec) (string, error) {
	var b struct {
		Queue string `json:"queue"`
	}
	if err := json.Unmarshal(t.Binding, &b); err != nil || b.Queue == "" {
		return "", fmt.Errorf("engine: task %s of %s has no worker queue in its binding", t.TaskID, t.Ref)
	}
	return b.Queue, nil
}

// enqueueWorkerTask queues the attempt t of run r for the workers of its
// queue, in the transaction that issued it (ready, claimable at once). An
// effect performed twice is harmless: the task id is the row's key.
func (s *Service) enqueueWorkerTask(ctx context.Context, tx *sql.Tx, r *runRow, t *kernel.TaskSpec, sealed bool) error {
	queue, err := workerQueue(t)
	if err != nil {
		return err
	}
	spec, err := s.seal.taskSpec(sealed, t)
	if err != nil {
		return err
	}
	var deadline *int64
	if t.Deadline != nil {
		ms := store.Millis(claimDeadline(r.UpdatedAt, *t.Deadline))
		deadline = &ms
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_worker_tasks(task_id, run_id, tenant_id, project_id, environment_id,
		queue, spec, status, deadline_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?) ON CONFLICT(task_id) DO NOTHING`,
		t.TaskID, r.ID, r.Tenant, r.Project, r.Environment, queue, spec, deadline, store.Millis(r.UpdatedAt)); err != nil {
		return fmt.Errorf("engine: queue worker task %s: %w", t.TaskID, err)
	}
	return nil
}

// Outcomes of an ended worker task (platform_worker_task_ends).
const (
	endCompleted = "completed"
	endFailed    = "failed"
	endUnknown   = "outcome_unknown"
	endWithdrawn = "withdrawn"
)

// taskEnd is how a worker task ended. Hash and Response are those of the
// lease holder's complete or fail request.
type taskEnd struct {
	Outcome, Reason       string
	WorkerID, PrincipalID string
	Hash                  []byte
	Response              string
	EndedAt               time.Time
}

// endWorkerTask deletes the row of task id (of run and env) and records how
// it ended, in tx. The first end recorded stays.
func endWorkerTask(ctx context.Context, tx *sql.Tx, id, run, env string, e taskEnd) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_worker_tasks WHERE task_id = ?`, id); err != nil {
		return fmt.Errorf("engine: end worker task %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_worker_task_ends(task_id, run_id, environment_id, outcome, reason,
		worker_id, principal_id, request_hash, response, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(task_id) DO NOTHING`,
		id, run, env, e.Outcome, e.Reason, optional(e.WorkerID), optional(e.PrincipalID), e.Hash, optional(e.Response),
		store.Millis(e.EndedAt)); err != nil {
		return fmt.Errorf("engine: record end of worker task %s: %w", id, err)
	}
	return nil
}

// getTaskEnd reads how task id of environment env ended; errNotFound when
// it has not (or never existed).
func getTaskEnd(ctx context.Context, q store.Querier, env, id string) (taskEnd, error) {
	var e taskEnd
	var response sql.NullString
	var ended int64
	err := q.QueryRowContext(ctx, `SELECT outcome, reason, COALESCE(worker_id, ''), COALESCE(principal_id, ''), request_hash,
		response, ended_at FROM platform_worker_task_ends WHERE task_id = ? AND environment_id = ?`, id, env).
		Scan(&e.Outcome, &e.Reason, &e.WorkerID, &e.PrincipalID, &e.Hash, &response, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return e, errNotFound
	}
	if err != nil {
		return e, fmt.Errorf("engine: read end of worker task: %w", err)
	}
	e.Response, e.EndedAt = response.String, store.FromMillis(ended)
	return e, nil
}

// cancelWorkerTask withdraws worker task id of run r (the kernel's
// cancel_task: attempt timeout, step deadline, run ended): the row goes, so
// the task can no longer be claimed, and a lease on it is revoked (the
// worker's next call answers 409 PF-RUNTIME-STATE with the reason).
func cancelWorkerTask(ctx context.Context, tx *sql.Tx, r *runRow, id, reason string) error {
	var status, worker, principal string
	err := tx.QueryRowContext(ctx, `SELECT status, COALESCE(worker_id, ''), COALESCE(principal_id, '') FROM platform_worker_tasks
		WHERE task_id = ?`, id).Scan(&status, &worker, &principal)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not a worker task, or it already ended
	}
	if err != nil {
		return fmt.Errorf("engine: read worker task: %w", err)
	}
	if err := endWorkerTask(ctx, tx, id, r.ID, r.Environment, taskEnd{Outcome: endWithdrawn, Reason: reason,
		WorkerID: worker, PrincipalID: principal, EndedAt: r.UpdatedAt}); err != nil {
		return err
	}
	msg := "worker task withdrawn before it was claimed (" + reason + ")"
	if status == taskLeased {
		msg = "lease of worker " + worker + " revoked (" + reason + ")"
	}
	return writeLog(ctx, tx, r.ID, logLine{At: r.UpdatedAt, Seq: r.State.Seq, Level: "warn", Type: "task_withdrawn",
		Message: msg, Data: map[string]any{"task_id": id, "reason": reason}})
}

// recoverLeases handles up to BatchSize leases that expired, earliest
// first: each is an attempt whose outcome is unknown. In one transaction
// the row is deleted and task_outcome_unknown fed to the run (held while it
// is paused); the kernel then retries a safe side-effect class as a new
// attempt (a new task) and opens a PF-TASK-AMBIGUOUS incident for an
// unsafe one. It answers how many expired leases it found.
//
// Ready tasks past their attempt deadline need nothing here: the kernel's
// attempt timeout and step deadline timers withdraw them (cancel_task).
func (s *Service) recoverLeases(ctx context.Context) (int, error) {
	return s.eachDueTask(ctx, `SELECT task_id FROM platform_worker_tasks
		WHERE status = 'leased' AND lease_expires_at <= ? ORDER BY lease_expires_at, task_id LIMIT ?`, s.recoverLease)
}

// eachDueTask runs handle for each task (at most BatchSize) that query
// lists as due now, each in its own write, and wakes the loop when there
// were any. It answers how many it found.
func (s *Service) eachDueTask(ctx context.Context, query string, handle func(context.Context, *sql.Tx, string) error) (int, error) {
	ids, err := idsWhere(ctx, s.db.Reader(), query, store.Millis(s.timestamp()), BatchSize)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	for _, id := range ids {
		if err := s.db.Write(ctx, func(tx *sql.Tx) error { return handle(ctx, tx, id) }); err != nil {
			return 0, err
		}
	}
	s.notify()
	return len(ids), nil
}

// recoverLease recovers the lease of task id in tx if it is still expired
// (a heartbeat or an outcome may have come first).
func (s *Service) recoverLease(ctx context.Context, tx *sql.Tx, id string) error {
	w, err := s.seal.scanWorkerTask(tx.QueryRowContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks WHERE task_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: read worker task: %w", err)
	}
	now := s.timestamp()
	if w.Status != taskLeased || w.LeaseExpiresAt == nil || w.LeaseExpiresAt.After(now) {
		return nil
	}
	if err := endWorkerTask(ctx, tx, id, w.RunID, w.Environment, taskEnd{Outcome: endUnknown, Reason: "lease_expired",
		WorkerID: w.WorkerID, PrincipalID: w.PrincipalID, EndedAt: now}); err != nil {
		return err
	}
	if err := writeLog(ctx, tx, w.RunID, logLine{At: now, Level: "warn", Type: "lease_expired", Node: w.Spec.NodeID,
		Message: fmt.Sprintf("lease of worker %s on attempt %d expired at %s: the outcome is unknown", w.WorkerID, w.Spec.Attempt,
			w.LeaseExpiresAt.Format(time.RFC3339Nano)),
		Data: map[string]any{"task_id": id, "worker_id": w.WorkerID, "principal_id": w.PrincipalID}}); err != nil {
		return err
	}
	_, _, _, err = s.Deliver(ctx, tx, w.Environment, w.RunID, kernel.Event{Kind: kernel.EventTaskOutcomeUnknown, TaskID: id})
	// A refusal leaves the row deleted, with a note.
	return dropRefused(ctx, tx, w.RunID, now, "unknown outcome of task "+id, err)
}

// claimDeadline is when a worker must have claimed an attempt issued at
// issued with deadline d: a tenth of the attempt's time (at most
// maxClaimMargin) before d, so an attempt nobody claimed is known not to
// have run before the kernel's attempt timer would call it unknown
// (expireReady), and a claim leaves the worker some time.
func claimDeadline(issued, d time.Time) time.Time {
	return d.Add(-min(d.Sub(issued)/10, maxClaimMargin))
}

// maxClaimMargin bounds the time between a claim deadline and the attempt
// deadline.
const maxClaimMargin = time.Second

// expireReady ends ready worker tasks that no worker claimed by their
// claim deadline (docs/platform-api.md "Limits": expired ready tasks, at most
// BatchSize per turn). Nobody ran such an attempt, so its outcome is known:
// a failure the step's retry policy may retry (TASK_NOT_CLAIMED), not the
// unknown outcome the kernel's attempt timer would report (which opens
// PF-TASK-AMBIGUOUS for an unsafe action). It runs before the turn's
// timers. An attempt whose deadline is the step's deadline is left to the
// kernel's step deadline (PF-TASK-DEADLINE).
func (s *Service) expireReady(ctx context.Context) (int, error) {
	return s.eachDueTask(ctx, `SELECT w.task_id FROM platform_worker_tasks w JOIN platform_runs r ON r.id = w.run_id
		WHERE w.status = 'ready' AND w.deadline_at <= ? AND r.paused = 0 ORDER BY w.deadline_at, w.task_id LIMIT ?`, s.expireOne)
}

func (s *Service) expireOne(ctx context.Context, tx *sql.Tx, id string) error {
	w, err := s.seal.scanWorkerTask(tx.QueryRowContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks WHERE task_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: read worker task: %w", err)
	}
	now := s.timestamp()
	d := w.Spec.Deadline
	if w.Status != taskReady || d == nil || w.ClaimDeadline == nil || w.ClaimDeadline.After(now) ||
		(w.Spec.StepDeadline != nil && !d.Before(*w.Spec.StepDeadline)) {
		return nil
	}
	if err := endWorkerTask(ctx, tx, id, w.RunID, w.Environment, taskEnd{Outcome: endFailed, Reason: "not_claimed", EndedAt: now}); err != nil {
		return err
	}
	msg := fmt.Sprintf("no worker claimed attempt %d from queue %s before its deadline", w.Spec.Attempt, w.Queue)
	if err := writeLog(ctx, tx, w.RunID, logLine{At: now, Level: "warn", Type: "task_not_claimed", Node: w.Spec.NodeID, Message: msg,
		Data: map[string]any{"task_id": id}}); err != nil {
		return err
	}
	_, _, _, err = s.Deliver(ctx, tx, w.Environment, w.RunID, kernel.Event{Kind: kernel.EventTaskFailed, TaskID: id,
		Error: &kernel.TaskError{Code: "TASK_NOT_CLAIMED", Message: msg}, Retryable: true})
	return dropRefused(ctx, tx, w.RunID, now, "expiry of task "+id, err)
}
