package engine

import (
	"database/sql"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Request limits.
const (
	MaxKeyLen     = 200
	MaxReasonLen  = 2000
	MaxInputBytes = 1 << 20
	// payloadBodyBytes bounds the bodies that carry a payload of up to 1
	// MiB (input, signal payload, output, form data): the payload plus room
	// for the other fields, so that an oversized payload is answered by the
	// route's own 422 rather than the generic 413.
	payloadBodyBytes = MaxInputBytes + 64<<10
)

// tagRuns is the OpenAPI tag of the routes.
const tagRuns = "Runs"

// base is E/runs relative to api.Prefix.
const base = "/tenants/{tenant}/projects/{project}/environments/{environment}/runs"

// Register adds the run and incident routes to a.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	routes := []api.Route{
		{Method: "POST", Path: base, Capability: auth.CapRunStart, Idempotency: api.PolicyRequired, Handler: s.start,
			OperationID: "startRun", Tag: tagRuns, Summary: "Start a run of an activation",
			Description: "Starts a run of an active activation of the environment with the input (validated against the workflow's input schema: 422 PF-VALIDATION). " +
				"An unknown activation answers 422 PF-VALIDATION, a retired one 409 PF-CONFLICT. Built-in echo and noop tasks complete in process; " +
				"wait steps complete through the scheduler.",
			Request: StartRequest{}, Response: Run{}, Status: 201, ETag: true, MaxBody: payloadBodyBytes},
		{Method: "GET", Path: base + "/{run}", Capability: auth.CapRunRead, Handler: s.get,
			OperationID: "getRun", Tag: tagRuns, Summary: "Read a run", Description: "The ETag is the accepted sequence.",
			Response: Run{}, ETag: true},
		{Method: "POST", Path: base + "/{run}/cancel", Capability: auth.CapRunCancel, Idempotency: api.PolicyOptional, Handler: s.cancel,
			OperationID: "cancelRun", Tag: tagRuns, Summary: "Cancel a run",
			Description: "Cancels a run that has not ended; cancelling a cancelled run answers the same snapshot and records nothing; " +
				"another ended run answers 409 PF-RUNTIME-STATE. external_effects_may_continue says whether issued work may still finish. " +
				"A run whose state is over 1 MiB is answered by a large-run acknowledgment (CancelAck: capacity_limited, /state omitted with reason resource_limit).",
			Request: CancelRequest{}, Response: Run{}, ETag: true},
		{Method: "POST", Path: base + "/{run}/retry", Capability: auth.CapRunRetry, Idempotency: api.PolicyRequired, Handler: s.retry,
			OperationID: "retryRun", Tag: tagRuns, Summary: "Retry an ended run as a new run",
			Description: "Starts a new run (parent_run_id = the retried run) like POST E/runs, which also needs run.start; the retried run is unchanged. " +
				"A run that has not ended answers 409 PF-RUNTIME-STATE.",
			Request: StartRequest{}, Response: Run{}, Status: 201, ETag: true, MaxBody: payloadBodyBytes},
		{Method: "GET", Path: base + "/{run}/history", Capability: auth.CapRunRead, Page: true, Handler: s.history,
			OperationID: "getRunHistory", Tag: tagRuns, Summary: "List a run's accepted events in sequence order",
			Response: api.Page[HistoryEvent]{}},
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
	add := func(rt api.Route) { a.Handle(r, rt) }
	s.registerIncidents(add)
	s.registerControl(add)
	s.registerLists(add)
	s.registerWorkers(add)
	s.registerHumans(add)
	s.registerArchive(add)
}

// runPath is the canonical path of a run.
func runPath(sc auth.Scope, id string) string {
	return api.Prefix + "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + "/runs/" + id
}

// start serves POST E/runs.
func (s *Service) start(c *api.Call) error {
	var req StartRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	sc := c.PathScope()
	rs, err := s.Start(c.Context(), sc, req, c.Caller.Principal.ID, StartOptions{Files: FileAccess{Environment: mayReadFiles(c, sc)}})
	if err != nil {
		return err
	}
	return s.commitStart(c, rs)
}

// retry serves POST E/runs/{run}/retry.
func (s *Service) retry(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	sc := c.PathScope()
	if err := c.Authorize(auth.CapRunStart, sc); err != nil {
		return err
	}
	var req StartRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	rs, err := s.Retry(c.Context(), sc, id, req, c.Caller.Principal.ID, StartOptions{Files: FileAccess{Environment: mayReadFiles(c, sc)}})
	if err != nil {
		return err
	}
	return s.commitStart(c, rs)
}

// commitStart commits rs in the idempotent transaction of c and answers
// the new run (201, its Location and ETag).
func (s *Service) commitStart(c *api.Call, rs *RunStart) error {
	ctx, sc := c.Context(), c.PathScope()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		run, err := rs.Commit(ctx, tx)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: run, Revision: run.AcceptedSequence, Location: runPath(sc, run.ID)}, nil
	}, s.notify)
}

// get serves GET E/runs/{run}.
func (s *Service) get(c *api.Call) error {
	run, err := s.GetRun(c.Context(), c.PathScope(), c.Params.ByName("run"))
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: run, Revision: run.AcceptedSequence})
}

// cancel serves POST E/runs/{run}/cancel.
func (s *Service) cancel(c *api.Call) error {
	var req CancelRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkCancel(req.Reason); err != nil {
		return err
	}
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	ctx, sc := c.Context(), c.PathScope()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		run, err := s.Cancel(ctx, tx, sc, id, req.Reason)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: cancelAnswer(run), Revision: run.AcceptedSequence}, nil
	}, s.notify)
}

// history serves GET E/runs/{run}/history: accepted events in seq order.
func (s *Service) history(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	q, err := c.PageQuery("run-history", map[string]string{"run": id})
	if err != nil {
		return err
	}
	var after int64
	if q.After != "" {
		if after, err = strconv.ParseInt(q.After, 10, 64); err != nil {
			return api.InvalidParameter(api.CodeValidation, "cursor", "the cursor is not valid for this list")
		}
	}
	items, err := s.History(c.Context(), c.PathScope(), id, after, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(e HistoryEvent) string { return strconv.FormatInt(e.Seq, 10) })
	if err != nil {
		return err
	}
	return c.OK(page)
}
