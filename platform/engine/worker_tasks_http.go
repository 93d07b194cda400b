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

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// tagTasks is the OpenAPI tag of the worker task routes.
const tagTasks = "Worker tasks"

// tasksBase is E/tasks relative to api.Prefix. The routes under it are
// static (claim, heartbeat, complete, fail): the task id travels in the
// body, like the spec's E/tasks/files/* routes, so both fit one router.
const tasksBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/tasks"

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

// registerWorkers adds the worker task routes.
func (s *Service) registerWorkers(add func(api.Route)) {
	for _, rt := range []api.Route{
		{Method: "POST", Path: tasksBase + "/claim", Capability: auth.CapTaskClaim, Idempotency: api.PolicyOptional, Handler: s.claim,
			OperationID: "claimTasks", Tag: tagTasks, Summary: "Claim ready worker tasks",
			Description: "Leases up to max_tasks ready tasks of the queues, oldest first, to worker_id and the calling principal for " +
				"lease_seconds. Only tasks of runs that are neither paused nor ended, and whose attempt deadline has not passed, are " +
				"handed out; a claim is atomic, so two claims never get the same task. An empty list means nothing is ready.",
			Request: ClaimRequest{}, Response: ClaimResponse{}},
		{Method: "POST", Path: tasksBase + "/heartbeat", Capability: auth.CapTaskClaim, Handler: s.heartbeat,
			OperationID: "heartbeatTask", Tag: tagTasks, Summary: "Extend the lease of a claimed task",
			Description: "The lease then ends lease_seconds after now. 409 PF-RUNTIME-STATE when the task is not leased by that " +
				"worker_id and principal: not claimed, leased by another worker, or ended (completed, failed, withdrawn by the run, " +
				"lease expired and recovered); the message says which. Stop working on it then.",
			Request: HeartbeatRequest{}, Response: Lease{}},
		{Method: "POST", Path: tasksBase + "/complete", Capability: auth.CapTaskClaim, Idempotency: api.PolicyOptional, Handler: s.complete,
			OperationID: "completeTask", Tag: tagTasks, Summary: "Report the output of a claimed task",
			Description: "Feeds task_completed to the run in the transaction that ends the task. An output the pinned output schema " +
				"refuses is 422 PF-VALIDATION and changes nothing (the lease is kept). The same request sent again by the lease holder " +
				"answers the same result; any other call about the ended task is 409 PF-RUNTIME-STATE.",
			Request: CompleteRequest{}, Response: TaskReport{}, MaxBody: payloadBodyBytes},
		{Method: "POST", Path: tasksBase + "/fail", Capability: auth.CapTaskClaim, Idempotency: api.PolicyOptional, Handler: s.fail,
			OperationID: "failTask", Tag: tagTasks, Summary: "Report the failure of a claimed task",
			Description: "Feeds task_failed to the run: a retryable failure follows the step's retry policy (a new attempt is a new " +
				"task), otherwise a PF-TASK-FAILED incident opens. Replays and conflicts as for complete.",
			Request: FailRequest{}, Response: TaskReport{}},
		{Method: "GET", Path: tasksBase, Capability: auth.CapStatusRead, Page: true, Handler: s.listTasks,
			OperationID: "listWorkerTasks", Tag: tagTasks, Summary: "List the worker tasks of the environment",
			Description: "Ready and leased tasks (without their input), in task id order.",
			Query: []api.Param{{Name: "queue", Type: "string", Description: "only this queue"},
				{Name: "status", Type: "string", Description: "ready or leased (default: both)"}},
			Response: api.Page[QueuedTask]{}},
	} {
		add(rt)
	}
}

// checkWorkerID validates a worker_id.
func checkWorkerID(id string) error {
	if strings.TrimSpace(id) == "" || utf8.RuneCountInString(id) > MaxWorkerIDLen || strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return api.Invalid("/worker_id", "worker_id has 1 to %d characters, is not blank and has no control characters", MaxWorkerIDLen)
	}
	return nil
}

// checkTaskRef validates the task_id and worker_id of a lease holder's call.
func checkTaskRef(task, worker string) error {
	if !auth.IsCanonicalUUID(task) {
		return api.Invalid("/task_id", "task_id must be a canonical lowercase UUID")
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
		return 0, api.Invalid("/lease_seconds", "lease_seconds is %d to %d", MinLeaseSeconds, MaxLeaseSeconds)
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
		return 0, 0, api.Invalid("/queues", "queues lists 1 to %d queue names", MaxClaimQueues)
	}
	seen := map[string]bool{}
	for i, q := range req.Queues {
		path := fmt.Sprintf("/queues/%d", i)
		if !validQueue(q) {
			return 0, 0, api.Invalid(path, queueRule)
		}
		if seen[q] {
			return 0, 0, api.Invalid(path, "queue %s is listed twice", q)
		}
		seen[q] = true
	}
	n := 1
	if req.MaxTasks != nil {
		n = *req.MaxTasks
	}
	if n < 1 || n > MaxClaimTasks {
		return 0, 0, api.Invalid("/max_tasks", "max_tasks is 1 to %d", MaxClaimTasks)
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

// claim serves POST E/tasks/claim.
func (s *Service) claim(c *api.Call) error {
	var req ClaimRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	n, lease, err := checkClaim(&req)
	if err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return nil, err
		}
		tasks, err := s.lease(ctx, tx, sc.Environment, by, &req, n, lease)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: ClaimResponse{Tasks: tasks}}, nil
	}, nil)
}

// lease leases up to n ready tasks of the claim's queues in tx (the single
// writer, so no other claim sees them ready).
func (s *Service) lease(ctx context.Context, tx *sql.Tx, env, principal string, req *ClaimRequest, n int, d time.Duration) ([]ClaimedTask, error) {
	now := s.timestamp()
	args := []any{env}
	for _, q := range req.Queues {
		args = append(args, q)
	}
	args = append(args, store.Millis(now), n)
	rows, err := tx.QueryContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks w
		WHERE w.environment_id = ? AND w.status = 'ready' AND w.queue IN (?`+strings.Repeat(", ?", len(req.Queues)-1)+`)
		AND (w.deadline_at IS NULL OR w.deadline_at > ?)
		AND EXISTS (SELECT 1 FROM platform_runs r WHERE r.id = w.run_id AND r.paused = 0
			AND r.status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out'))
		ORDER BY w.created_at, w.task_id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("engine: list ready worker tasks: %w", err)
	}
	var ready []workerTask
	for rows.Next() {
		w, err := s.seal.scanWorkerTask(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		ready = append(ready, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: list ready worker tasks: %w", err)
	}
	expires := now.Add(d)
	out := make([]ClaimedTask, 0, len(ready))
	for i := range ready {
		w := &ready[i]
		if _, err := tx.ExecContext(ctx, `UPDATE platform_worker_tasks SET status = 'leased', worker_id = ?, principal_id = ?,
			lease_expires_at = ?, claimed_at = ?, heartbeat_at = NULL WHERE task_id = ? AND status = 'ready'`,
			req.WorkerID, principal, store.Millis(expires), store.Millis(now), w.TaskID); err != nil {
			return nil, fmt.Errorf("engine: lease worker task: %w", err)
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
			return w, nil, api.NotFound("task")
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
		return w, nil, api.Conflict(kernel.CodeRuntimeState, "task %s is not leased: claim it first", id)
	}
	if w.WorkerID != worker || w.PrincipalID != principal {
		return w, nil, api.Conflict(kernel.CodeRuntimeState, "task %s is leased by another worker", id)
	}
	return w, nil, nil
}

// endedConflict is the 409 about a task that ended.
func endedConflict(id string, e *taskEnd) error {
	at := e.EndedAt.Format(time.RFC3339Nano)
	switch e.Outcome {
	case endCompleted:
		return api.Conflict(kernel.CodeRuntimeState, "task %s was completed at %s", id, at)
	case endFailed:
		return api.Conflict(kernel.CodeRuntimeState, "task %s was reported failed at %s", id, at)
	case endUnknown:
		return api.Conflict(kernel.CodeRuntimeState, "the lease on task %s expired and was recovered at %s: the run treats the attempt's outcome as unknown", id, at)
	}
	return api.Conflict(kernel.CodeRuntimeState, "task %s was withdrawn by its run at %s (%s)", id, at, e.Reason)
}

// heartbeat serves POST E/tasks/heartbeat.
func (s *Service) heartbeat(c *api.Call) error {
	var req HeartbeatRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkTaskRef(req.TaskID, req.WorkerID); err != nil {
		return err
	}
	d, err := leaseFor(req.LeaseSeconds)
	if err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		w, end, err := s.heldTask(ctx, tx, sc, req.TaskID, req.WorkerID, by)
		if err != nil {
			return nil, err
		}
		if end != nil {
			return nil, endedConflict(req.TaskID, end)
		}
		now := s.timestamp()
		expires := now.Add(d)
		if _, err := tx.ExecContext(ctx, `UPDATE platform_worker_tasks SET lease_expires_at = ?, heartbeat_at = ? WHERE task_id = ?`,
			store.Millis(expires), store.Millis(now), w.TaskID); err != nil {
			return nil, fmt.Errorf("engine: extend lease: %w", err)
		}
		return &api.Result{Body: Lease{ID: w.TaskID, WorkerID: w.WorkerID, LeaseExpiresAt: expires, Deadline: w.Spec.Deadline}}, nil
	}, nil)
}

// complete serves POST E/tasks/complete.
func (s *Service) complete(c *api.Call) error {
	var req CompleteRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkTaskRef(req.TaskID, req.WorkerID); err != nil {
		return err
	}
	out := bytes.TrimSpace(req.Output)
	return s.report(c, req.TaskID, req.WorkerID, endCompleted, kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: req.TaskID, Output: out})
}

// fail serves POST E/tasks/fail.
func (s *Service) fail(c *api.Call) error {
	var req FailRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkTaskRef(req.TaskID, req.WorkerID); err != nil {
		return err
	}
	if len(req.Error.Code) > MaxErrorCodeLen || !errorCodeRE.MatchString(req.Error.Code) {
		return api.Invalid("/error/code", "error.code has 1 to %d characters: A-Z, 0-9 and _, starting with a letter", MaxErrorCodeLen)
	}
	if utf8.RuneCountInString(req.Error.Message) > MaxErrorMessageLen {
		return api.Invalid("/error/message", "error.message has at most %d characters", MaxErrorMessageLen)
	}
	if req.RetryAfterMs < 0 || req.RetryAfterMs > MaxRetryAfterMs {
		return api.Invalid("/retry_after_ms", "retry_after_ms is 0 to %d", MaxRetryAfterMs)
	}
	if req.RetryAfterMs > 0 && !req.Retryable {
		return api.Invalid("/retry_after_ms", "retry_after_ms is only sent with retryable: true")
	}
	return s.report(c, req.TaskID, req.WorkerID, endFailed, kernel.Event{Kind: kernel.EventTaskFailed, TaskID: req.TaskID,
		Error: &kernel.TaskError{Code: req.Error.Code, Message: req.Error.Message}, Retryable: req.Retryable, RetryAfterMs: req.RetryAfterMs})
}

// reportHash identifies an outcome report: the outcome and the event's
// payload, with the output in canonical JSON (sorted keys).
func reportHash(outcome string, e kernel.Event) ([]byte, error) {
	var output any
	if len(e.Output) > 0 {
		dec := json.NewDecoder(bytes.NewReader(e.Output))
		dec.UseNumber()
		if err := dec.Decode(&output); err != nil {
			return nil, api.Invalid("/output", "output is not valid JSON")
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
func (s *Service) report(c *api.Call, id, worker, outcome string, e kernel.Event) error {
	hash, err := reportHash(outcome, e)
	if err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		w, end, err := s.heldTask(ctx, tx, sc, id, worker, by)
		if err != nil {
			return nil, err
		}
		if end != nil {
			if end.Outcome == outcome && end.WorkerID == worker && end.PrincipalID == by && bytes.Equal(end.Hash, hash) && end.Response != "" {
				return &api.Result{Body: json.RawMessage(end.Response)}, nil
			}
			return nil, endedConflict(id, end)
		}
		if e.Kind == kernel.EventTaskCompleted {
			if e.Output, err = s.attachOutputFiles(ctx, tx, w, e.Output); err != nil {
				return nil, err
			}
		}
		now := s.timestamp()
		r, _, held, err := s.Deliver(ctx, tx, sc.Environment, w.RunID, e)
		if err != nil {
			return nil, refusal(err)
		}
		body, err := json.Marshal(TaskReport{ID: id, RunID: r.ID, Outcome: outcome, RunStatus: string(r.State.Status),
			AcceptedSequence: r.State.Seq, Held: held})
		if err != nil {
			return nil, fmt.Errorf("engine: encode report: %w", err)
		}
		if err := endWorkerTask(ctx, tx, id, w.RunID, w.Environment, taskEnd{Outcome: outcome, Reason: "reported by the worker",
			WorkerID: worker, PrincipalID: by, Hash: hash, Response: string(body), EndedAt: now}); err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("attempt %d %s by worker %s", w.Spec.Attempt, outcome, worker)
		if e.Error != nil {
			msg += ": " + e.Error.Code
		}
		if err := writeLog(ctx, tx, w.RunID, logLine{At: now, Type: "task_reported", Node: w.Spec.NodeID, Message: msg,
			Data: map[string]any{"task_id": id, "worker_id": worker, "held": held}}); err != nil {
			return nil, err
		}
		return &api.Result{Body: json.RawMessage(body)}, nil
	}, s.notify)
}

// listTasks serves GET E/tasks.
func (s *Service) listTasks(c *api.Call) error {
	queue, err := c.Query("queue")
	if err != nil {
		return err
	}
	if queue != "" && !validQueue(queue) {
		return api.InvalidParameter(api.CodeValidation, "queue", queueRule)
	}
	status, err := c.Query("status")
	if err != nil {
		return err
	}
	if status != "" && status != taskReady && status != taskLeased {
		return api.InvalidParameter(api.CodeValidation, "status", "status is ready or leased")
	}
	q, err := c.PageQuery("worker-tasks", map[string]string{"queue": queue, "status": status})
	if err != nil {
		return err
	}
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	rows, err := rd.QueryContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks
		WHERE environment_id = ? AND task_id > ? AND (? = '' OR queue = ?) AND (? = '' OR status = ?) ORDER BY task_id LIMIT ?`,
		sc.Environment, q.After, queue, queue, status, status, q.Fetch())
	if err != nil {
		return fmt.Errorf("engine: list worker tasks: %w", err)
	}
	defer rows.Close()
	items := []QueuedTask{}
	for rows.Next() {
		w, err := s.seal.scanWorkerTask(rows)
		if err != nil {
			return err
		}
		items = append(items, queuedView(&w))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("engine: list worker tasks: %w", err)
	}
	page, err := api.MakePage(q, items, func(t QueuedTask) string { return t.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
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
