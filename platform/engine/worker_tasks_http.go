package engine

import (
	"database/sql"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// tagTasks is the OpenAPI tag of the worker task routes.
const tagTasks = "Worker tasks"

// tasksBase is E/tasks relative to api.Prefix. The routes under it are
// static (claim, heartbeat, complete, fail): the task id travels in the
// body, like the spec's E/tasks/files/* routes, so both fit one router.
const tasksBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/tasks"

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

// claim serves POST E/tasks/claim.
func (s *Service) claim(c *api.Call) error {
	var req ClaimRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if _, _, err := checkClaim(&req); err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		out, err := s.ClaimTasks(ctx, tx, sc, by, req)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: out}, nil
	}, nil)
}

// heartbeat serves POST E/tasks/heartbeat.
func (s *Service) heartbeat(c *api.Call) error {
	var req HeartbeatRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if _, err := checkHeartbeat(&req); err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		out, err := s.Heartbeat(ctx, tx, sc, by, req)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: out}, nil
	}, nil)
}

// complete serves POST E/tasks/complete.
func (s *Service) complete(c *api.Call) error {
	var req CompleteRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if _, err := checkCompleteTask(&req); err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		out, err := s.CompleteTask(ctx, tx, sc, by, req)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: out}, nil
	}, s.notify)
}

// fail serves POST E/tasks/fail.
func (s *Service) fail(c *api.Call) error {
	var req FailRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if _, err := checkFail(&req); err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		out, err := s.FailTask(ctx, tx, sc, by, req)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: out}, nil
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
	items, err := s.ListTasks(c.Context(), TaskFilter{Scope: c.PathScope(), Queue: queue, Status: status, After: q.After, Limit: q.Fetch()})
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(t QueuedTask) string { return t.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}
