package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/auth"
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
	return insertWorkerTask(ctx, tx, r, t.TaskID, queue, spec, deadline)
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

// cancelWorkerTask withdraws worker task id of run r (the kernel's
// cancel_task: attempt timeout, step deadline, run ended): the row goes, so
// the task can no longer be claimed, and a lease on it is revoked (the
// worker's next call answers 409 PF-RUNTIME-STATE with the reason).
func cancelWorkerTask(ctx context.Context, tx *sql.Tx, r *runRow, id, reason string) error {
	status, worker, principal, err := workerTaskHolder(ctx, tx, id)
	if errors.Is(err, errNotFound) {
		return nil // not a worker task, or it already ended
	}
	if err != nil {
		return err
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
	return s.eachDueTask(ctx, expiredLeasesQuery, s.recoverLease)
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
	w, err := s.getWorkerTask(ctx, tx, "", id)
	if errors.Is(err, errNotFound) {
		return nil
	}
	if err != nil {
		return err
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
	return s.eachDueTask(ctx, unclaimedQuery, s.expireOne)
}

func (s *Service) expireOne(ctx context.Context, tx *sql.Tx, id string) error {
	w, err := s.getWorkerTask(ctx, tx, "", id)
	if errors.Is(err, errNotFound) {
		return nil
	}
	if err != nil {
		return err
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

// Worker task request limits.
const (
	MaxWorkerIDLen      = 200
	MaxClaimQueues      = 20
	MaxQueueNameLen     = 200
	MaxClaimTasks       = 100
	MinLeaseSeconds     = 5
	MaxLeaseSeconds     = 3600
	DefaultLeaseSeconds = 60
	MaxErrorCodeLen     = 100
	MaxErrorMessageLen  = 2000
)

var (
	// queueNameRE is the language's task queue name (`worker:`).
	queueNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	// errorCodeRE is the language's error code (retry.nonRetryable).
	errorCodeRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// ClaimRequest is the body of POST E/tasks/claim.
type ClaimRequest struct {
	WorkerID     string   `json:"worker_id" api:"required" doc:"the worker process's name (1 to 200 characters, no control characters); the lease belongs to it and to the calling principal"`
	Queues       []string `json:"queues" api:"required" doc:"1 to 20 distinct queue names (an action's worker: value)"`
	MaxTasks     *int     `json:"max_tasks,omitempty" doc:"1 to 100 (default 1)"`
	LeaseSeconds *int     `json:"lease_seconds,omitempty" doc:"5 to 3600 (default 60)"`
}

// HeartbeatRequest is the body of POST E/tasks/heartbeat.
type HeartbeatRequest struct {
	TaskID       string `json:"task_id" api:"required" format:"uuid"`
	WorkerID     string `json:"worker_id" api:"required" doc:"the worker_id of the claim"`
	LeaseSeconds *int   `json:"lease_seconds,omitempty" doc:"5 to 3600 (default 60): the lease then ends that long after now"`
}

// CompleteRequest is the body of POST E/tasks/complete.
type CompleteRequest struct {
	TaskID   string          `json:"task_id" api:"required" format:"uuid"`
	WorkerID string          `json:"worker_id" api:"required" doc:"the worker_id of the claim"`
	Output   json.RawMessage `json:"output" api:"required" doc:"the action output, valid for the action's pinned output schema"`
}

// FailRequest is the body of POST E/tasks/fail.
type FailRequest struct {
	TaskID    string      `json:"task_id" api:"required" format:"uuid"`
	WorkerID  string      `json:"worker_id" api:"required" doc:"the worker_id of the claim"`
	Error     TaskFailure `json:"error" api:"required"`
	Retryable bool        `json:"retryable" api:"required" doc:"whether the step's retry policy applies; false (or a code in retry.nonRetryable) opens a PF-TASK-FAILED incident"`
	// RetryAfterMs is the wait the worker's service asked for.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty" doc:"optional, with retryable true: how long the service asked to wait (0 to 86400000 ms, e.g. its Retry-After); it lengthens the policy's backoff up to its maxInterval"`
}

// MaxRetryAfterMs bounds a worker's retry_after_ms (one day).
const MaxRetryAfterMs = 24 * 60 * 60 * 1000

// TaskFailure is the error a worker reports.
type TaskFailure struct {
	Code    string `json:"code" api:"required" doc:"1 to 100 characters, UPPER_SNAKE_CASE: A-Z, 0-9 and _, starting with a letter"`
	Message string `json:"message,omitempty" doc:"at most 2000 characters"`
}

// QueuedTask is a worker task as listed: one attempt of an action step.
type QueuedTask struct {
	ID             string     `json:"id" format:"uuid" doc:"the task id (one attempt; the next attempt is another task)"`
	RunID          string     `json:"run_id" format:"uuid"`
	NodeID         string     `json:"node_id"`
	Instance       string     `json:"instance"`
	Attempt        int        `json:"attempt"`
	Queue          string     `json:"queue"`
	Action         string     `json:"action" doc:"the action reference, id@version"`
	SideEffect     string     `json:"side_effect" doc:"read_only, idempotent, idempotency_key or unsafe"`
	Status         string     `json:"status" doc:"ready or leased"`
	WorkerID       string     `json:"worker_id,omitempty" doc:"the lease holder's worker_id"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at,omitempty"`
	Deadline       *time.Time `json:"deadline,omitempty" doc:"the attempt's deadline: the run withdraws the task then"`
	CreatedAt      time.Time  `json:"created_at"`
}

// ClaimedTask is a task leased to a worker, with what it needs to perform it.
type ClaimedTask struct {
	QueuedTask
	Input          json.RawMessage `json:"input" doc:"the action input"`
	OperationKey   string          `json:"operation_key" doc:"the same for every attempt of the step: deduplicate external effects by it"`
	IdempotencyKey string          `json:"idempotency_key" doc:"the step's idempotencyKey value, else operation_key"`
	StepDeadline   *time.Time      `json:"step_deadline,omitempty" doc:"the step's deadline for all attempts"`
}

// ClaimResponse is the answer of POST E/tasks/claim.
type ClaimResponse struct {
	Tasks []ClaimedTask `json:"tasks" doc:"the leased tasks, oldest first; empty when none is ready"`
}

// Lease is the answer of POST E/tasks/heartbeat.
type Lease struct {
	ID             string     `json:"id" format:"uuid"`
	WorkerID       string     `json:"worker_id"`
	LeaseExpiresAt time.Time  `json:"lease_expires_at"`
	Deadline       *time.Time `json:"deadline,omitempty" doc:"the attempt's deadline: a heartbeat does not extend it"`
}

// TaskReport is the answer of POST E/tasks/complete and E/tasks/fail.
type TaskReport struct {
	ID               string `json:"id" format:"uuid"`
	RunID            string `json:"run_id" format:"uuid"`
	Outcome          string `json:"outcome" doc:"completed or failed"`
	RunStatus        string `json:"run_status" doc:"the run's status after the outcome"`
	AcceptedSequence int64  `json:"accepted_sequence" doc:"the run's last accepted event"`
	Held             bool   `json:"held" doc:"the run is paused: the outcome was checked and is applied when it resumes"`
}

// checkWorkerID validates a worker_id.
func checkWorkerID(id string) error {
	if strings.TrimSpace(id) == "" || utf8.RuneCountInString(id) > MaxWorkerIDLen || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return invalid("/worker_id", "worker_id has 1 to %d characters, is not blank and has no control characters", MaxWorkerIDLen)
	}
	return nil
}

// checkTaskRef validates the task_id and worker_id of a lease holder's call.
func checkTaskRef(task, worker string) error {
	if !auth.IsCanonicalUUID(task) {
		return invalid("/task_id", "task_id must be a canonical lowercase UUID")
	}
	return checkWorkerID(worker)
}

// leaseFor validates lease_seconds (absent: the default).
func leaseFor(v *int) (time.Duration, error) {
	n := DefaultLeaseSeconds
	if v != nil {
		n = *v
	}
	if n < MinLeaseSeconds || n > MaxLeaseSeconds {
		return 0, invalid("/lease_seconds", "lease_seconds is %d to %d", MinLeaseSeconds, MaxLeaseSeconds)
	}
	return time.Duration(n) * time.Second, nil
}

// queueRule says what a queue name is.
const queueRule = "a queue name has 1 to 200 characters: a letter, then letters, digits, '_', '.' or '-'"

func validQueue(q string) bool { return len(q) <= MaxQueueNameLen && queueNameRE.MatchString(q) }

// checkClaim validates a claim and answers how many tasks it takes and
// for how long.
func checkClaim(req *ClaimRequest) (int, time.Duration, error) {
	if err := checkWorkerID(req.WorkerID); err != nil {
		return 0, 0, err
	}
	if len(req.Queues) == 0 || len(req.Queues) > MaxClaimQueues {
		return 0, 0, invalid("/queues", "queues lists 1 to %d queue names", MaxClaimQueues)
	}
	seen := map[string]bool{}
	for i, q := range req.Queues {
		path := fmt.Sprintf("/queues/%d", i)
		if !validQueue(q) {
			return 0, 0, invalid(path, queueRule)
		}
		if seen[q] {
			return 0, 0, invalid(path, "queue %s is listed twice", q)
		}
		seen[q] = true
	}
	n := 1
	if req.MaxTasks != nil {
		n = *req.MaxTasks
	}
	if n < 1 || n > MaxClaimTasks {
		return 0, 0, invalid("/max_tasks", "max_tasks is 1 to %d", MaxClaimTasks)
	}
	lease, err := leaseFor(req.LeaseSeconds)
	return n, lease, err
}

// queuedView is the list view of a task.
func queuedView(w *workerTask) QueuedTask {
	return QueuedTask{ID: w.TaskID, RunID: w.RunID, NodeID: w.Spec.NodeID, Instance: w.Spec.Instance, Attempt: w.Spec.Attempt,
		Queue: w.Queue, Action: w.Spec.Ref, SideEffect: w.Spec.SideEffect, Status: w.Status, WorkerID: w.WorkerID,
		LeaseExpiresAt: w.LeaseExpiresAt, Deadline: w.Spec.Deadline, CreatedAt: w.CreatedAt}
}

// heldTask reads task id of the path's environment for its lease holder
// (worker and principal) in tx. A task that ended answers its end instead
// (the caller decides between a replay and a conflict); a task that never
// existed is 404, one not leased by that holder 409 PF-RUNTIME-STATE.
func (s *Service) heldTask(ctx context.Context, tx *sql.Tx, sc auth.Scope, id, worker, principal string) (workerTask, *taskEnd, error) {
	if err := requireEnvironment(ctx, tx, sc); err != nil {
		return workerTask{}, nil, err
	}
	w, err := s.getWorkerTask(ctx, tx, sc.Environment, id)
	if errors.Is(err, errNotFound) {
		end, err := getTaskEnd(ctx, tx, sc.Environment, id)
		if errors.Is(err, errNotFound) {
			return w, nil, notFound("task")
		}
		if err != nil {
			return w, nil, err
		}
		return w, &end, nil
	}
	if err != nil {
		return w, nil, err
	}
	if w.Status != taskLeased {
		return w, nil, refused(CodeRuntimeState, "task %s is not leased: claim it first", id)
	}
	if w.WorkerID != worker || w.PrincipalID != principal {
		return w, nil, refused(CodeRuntimeState, "task %s is leased by another worker", id)
	}
	return w, nil, nil
}

// endedConflict is the 409 about a task that ended.
func endedConflict(id string, e *taskEnd) error {
	at := e.EndedAt.Format(time.RFC3339Nano)
	switch e.Outcome {
	case endCompleted:
		return refused(CodeRuntimeState, "task %s was completed at %s", id, at)
	case endFailed:
		return refused(CodeRuntimeState, "task %s was reported failed at %s", id, at)
	case endUnknown:
		return refused(CodeRuntimeState, "the lease on task %s expired and was recovered at %s: the run treats the attempt's outcome as unknown", id, at)
	}
	return refused(CodeRuntimeState, "task %s was withdrawn by its run at %s (%s)", id, at, e.Reason)
}

// txFunc is the body of a write transaction.
type txFunc func(tx *sql.Tx) error

// within runs fn in tx, the caller's write transaction (the HTTP layer's,
// which stores the idempotency record with the change), or in a write of
// its own when tx is nil (then the loop is woken after it commits).
func (s *Service) within(ctx context.Context, tx *sql.Tx, fn txFunc) error {
	if tx != nil {
		return fn(tx)
	}
	return s.db.WriteThen(ctx, fn, s.notify)
}

// ClaimTasks leases up to req.MaxTasks ready tasks of req.Queues in
// environment sc to req.WorkerID and principal by, oldest first (see
// within for tx). Only tasks of runs neither paused nor ended, whose
// attempt deadline has not passed, are handed out.
func (s *Service) ClaimTasks(ctx context.Context, tx *sql.Tx, sc auth.Scope, by string, req ClaimRequest) (ClaimResponse, error) {
	n, lease, err := checkClaim(&req)
	if err != nil {
		return ClaimResponse{}, err
	}
	var out ClaimResponse
	err = s.within(ctx, tx, func(tx *sql.Tx) error {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return err
		}
		out.Tasks, err = s.lease(ctx, tx, sc.Environment, by, &req, n, lease)
		return err
	})
	return out, err
}

// lease leases up to n ready tasks of the claim's queues in tx (the single
// writer, so no other claim sees them ready).
func (s *Service) lease(ctx context.Context, tx *sql.Tx, env, principal string, req *ClaimRequest, n int, d time.Duration) ([]ClaimedTask, error) {
	now := s.timestamp()
	ready, err := s.readyTasks(ctx, tx, env, req.Queues, now, n)
	if err != nil {
		return nil, err
	}
	expires := now.Add(d)
	out := make([]ClaimedTask, 0, len(ready))
	for i := range ready {
		w := &ready[i]
		if err := leaseTask(ctx, tx, w.TaskID, req.WorkerID, principal, expires, now); err != nil {
			return nil, err
		}
		w.Status, w.WorkerID, w.PrincipalID, w.LeaseExpiresAt = taskLeased, req.WorkerID, principal, &expires
		if err := writeLog(ctx, tx, w.RunID, logLine{At: now, Type: "task_claimed", Node: w.Spec.NodeID,
			Message: fmt.Sprintf("attempt %d claimed by worker %s, lease until %s", w.Spec.Attempt, req.WorkerID, expires.Format(time.RFC3339Nano)),
			Data:    map[string]any{"task_id": w.TaskID, "worker_id": req.WorkerID, "principal_id": principal}}); err != nil {
			return nil, err
		}
		input := w.Spec.Input
		if len(input) == 0 {
			input = json.RawMessage("null")
		}
		out = append(out, ClaimedTask{QueuedTask: queuedView(w), Input: input, OperationKey: w.Spec.OperationKey,
			IdempotencyKey: w.Spec.IdempotencyKey, StepDeadline: w.Spec.StepDeadline})
	}
	return out, nil
}

// checkHeartbeat validates a heartbeat and answers the lease's length.
func checkHeartbeat(req *HeartbeatRequest) (time.Duration, error) {
	if err := checkTaskRef(req.TaskID, req.WorkerID); err != nil {
		return 0, err
	}
	return leaseFor(req.LeaseSeconds)
}

// Heartbeat extends the lease of task req.TaskID held by req.WorkerID
// and principal by: it then ends req.LeaseSeconds after now (see within
// for tx). PF-RUNTIME-STATE when the task is not leased by that holder.
func (s *Service) Heartbeat(ctx context.Context, tx *sql.Tx, sc auth.Scope, by string, req HeartbeatRequest) (Lease, error) {
	d, err := checkHeartbeat(&req)
	if err != nil {
		return Lease{}, err
	}
	var out Lease
	err = s.within(ctx, tx, func(tx *sql.Tx) error {
		w, end, err := s.heldTask(ctx, tx, sc, req.TaskID, req.WorkerID, by)
		if err != nil {
			return err
		}
		if end != nil {
			return endedConflict(req.TaskID, end)
		}
		now := s.timestamp()
		expires := now.Add(d)
		if err := extendLease(ctx, tx, w.TaskID, expires, now); err != nil {
			return err
		}
		out = Lease{ID: w.TaskID, WorkerID: w.WorkerID, LeaseExpiresAt: expires, Deadline: w.Spec.Deadline}
		return nil
	})
	return out, err
}

// checkCompleteTask validates a completion and answers its event.
func checkCompleteTask(req *CompleteRequest) (kernel.Event, error) {
	if err := checkTaskRef(req.TaskID, req.WorkerID); err != nil {
		return kernel.Event{}, err
	}
	return kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: req.TaskID, Output: bytes.TrimSpace(req.Output)}, nil
}

// CompleteTask feeds the output of task req.TaskID, reported by its lease
// holder, to the task's run and ends the task (see report; within for tx).
func (s *Service) CompleteTask(ctx context.Context, tx *sql.Tx, sc auth.Scope, by string, req CompleteRequest) (TaskReport, error) {
	e, err := checkCompleteTask(&req)
	if err != nil {
		return TaskReport{}, err
	}
	return s.report(ctx, tx, sc, by, req.TaskID, req.WorkerID, endCompleted, e)
}

// checkFail validates a failure report and answers its event.
func checkFail(req *FailRequest) (kernel.Event, error) {
	if err := checkTaskRef(req.TaskID, req.WorkerID); err != nil {
		return kernel.Event{}, err
	}
	if len(req.Error.Code) > MaxErrorCodeLen || !errorCodeRE.MatchString(req.Error.Code) {
		return kernel.Event{}, invalid("/error/code", "error.code has 1 to %d characters: A-Z, 0-9 and _, starting with a letter", MaxErrorCodeLen)
	}
	if utf8.RuneCountInString(req.Error.Message) > MaxErrorMessageLen {
		return kernel.Event{}, invalid("/error/message", "error.message has at most %d characters", MaxErrorMessageLen)
	}
	if req.RetryAfterMs < 0 || req.RetryAfterMs > MaxRetryAfterMs {
		return kernel.Event{}, invalid("/retry_after_ms", "retry_after_ms is 0 to %d", MaxRetryAfterMs)
	}
	if req.RetryAfterMs > 0 && !req.Retryable {
		return kernel.Event{}, invalid("/retry_after_ms", "retry_after_ms is only sent with retryable: true")
	}
	return kernel.Event{Kind: kernel.EventTaskFailed, TaskID: req.TaskID, Error: &kernel.TaskError{Code: req.Error.Code, Message: req.Error.Message},
		Retryable: req.Retryable, RetryAfterMs: req.RetryAfterMs}, nil
}

// FailTask feeds the failure of task req.TaskID, reported by its lease
// holder, to the task's run and ends the task (see report; within for tx).
func (s *Service) FailTask(ctx context.Context, tx *sql.Tx, sc auth.Scope, by string, req FailRequest) (TaskReport, error) {
	e, err := checkFail(&req)
	if err != nil {
		return TaskReport{}, err
	}
	return s.report(ctx, tx, sc, by, req.TaskID, req.WorkerID, endFailed, e)
}

// TaskFilter selects the worker tasks ListTasks answers.
type TaskFilter struct {
	Scope auth.Scope
	// Queue and Status ("ready" or "leased") filter when set.
	Queue, Status string
	// After is the task id to resume behind.
	After string
	Limit int
}

// ListTasks answers the ready and leased tasks of f.Scope's environment
// that match f (without their input), in task id order.
func (s *Service) ListTasks(ctx context.Context, f TaskFilter) ([]QueuedTask, error) {
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, f.Scope); err != nil {
		return nil, err
	}
	rows, err := s.listWorkerTasks(ctx, rd, f)
	if err != nil {
		return nil, err
	}
	items := make([]QueuedTask, len(rows))
	for i := range rows {
		items[i] = queuedView(&rows[i])
	}
	return items, nil
}

// reportHash identifies an outcome report: the outcome and the event's
// payload, with the output in canonical JSON (sorted keys).
func reportHash(outcome string, e kernel.Event) ([]byte, error) {
	var output any
	if len(e.Output) > 0 {
		dec := json.NewDecoder(bytes.NewReader(e.Output))
		dec.UseNumber()
		if err := dec.Decode(&output); err != nil {
			return nil, invalid("/output", "output is not valid JSON")
		}
	}
	data, err := json.Marshal(struct {
		Outcome   string            `json:"outcome"`
		Output    any               `json:"output"`
		Error     *kernel.TaskError `json:"error"`
		Retryable bool              `json:"retryable"`
		// omitted when 0, so reports stored before it hash the same
		RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
	}{outcome, output, e.Error, e.Retryable, e.RetryAfterMs})
	if err != nil {
		return nil, fmt.Errorf("engine: encode report: %w", err)
	}
	sum := sha256.Sum256(data)
	return sum[:], nil
}

// report feeds the outcome event e of task id, reported by its lease holder
// worker, to the task's run and ends the task, in one transaction. A kernel
// refusal changes nothing. The same report of an ended task by the same
// holder answers the stored result.
func (s *Service) report(ctx context.Context, tx *sql.Tx, sc auth.Scope, by, id, worker, outcome string, e kernel.Event) (TaskReport, error) {
	hash, err := reportHash(outcome, e)
	if err != nil {
		return TaskReport{}, err
	}
	var out TaskReport
	err = s.within(ctx, tx, func(tx *sql.Tx) error {
		w, end, err := s.heldTask(ctx, tx, sc, id, worker, by)
		if err != nil {
			return err
		}
		if end != nil {
			if end.Outcome == outcome && end.WorkerID == worker && end.PrincipalID == by && bytes.Equal(end.Hash, hash) && end.Response != "" {
				// The stored answer of the same report.
				if err := json.Unmarshal([]byte(end.Response), &out); err != nil {
					return fmt.Errorf("engine: stored report of task %s: %w", id, err)
				}
				return nil
			}
			return endedConflict(id, end)
		}
		if e.Kind == kernel.EventTaskCompleted {
			if e.Output, err = s.attachOutputFiles(ctx, tx, w, e.Output); err != nil {
				return err
			}
		}
		now := s.timestamp()
		r, _, held, err := s.Deliver(ctx, tx, sc.Environment, w.RunID, e)
		if err != nil {
			return refusal(err)
		}
		out = TaskReport{ID: id, RunID: r.ID, Outcome: outcome, RunStatus: string(r.State.Status),
			AcceptedSequence: r.State.Seq, Held: held}
		body, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("engine: encode report: %w", err)
		}
		if err := endWorkerTask(ctx, tx, id, w.RunID, w.Environment, taskEnd{Outcome: outcome, Reason: "reported by the worker",
			WorkerID: worker, PrincipalID: by, Hash: hash, Response: string(body), EndedAt: now}); err != nil {
			return err
		}
		msg := fmt.Sprintf("attempt %d %s by worker %s", w.Spec.Attempt, outcome, worker)
		if e.Error != nil {
			msg += ": " + e.Error.Code
		}
		if err := writeLog(ctx, tx, w.RunID, logLine{At: now, Type: "task_reported", Node: w.Spec.NodeID, Message: msg,
			Data: map[string]any{"task_id": id, "worker_id": worker, "held": held}}); err != nil {
			return err
		}
		return nil
	})
	return out, err
}

// attachOutputFiles checks the file references of a worker's output: the
// files its task created, or those its run already refers to.
func (s *Service) attachOutputFiles(ctx context.Context, tx *sql.Tx, w workerTask, output json.RawMessage) (json.RawMessage, error) {
	r, err := s.getRun(ctx, tx, w.Environment, w.RunID)
	if err != nil {
		return nil, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	if err != nil {
		return nil, err
	}
	return s.attachFiles(ctx, tx, w.Environment, w.RunID, "/output", output, p.files.Steps[w.Spec.NodeID],
		FileAccess{OriginKind: "task", OriginID: w.TaskID})
}
