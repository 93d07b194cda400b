package engine

import (
	"database/sql"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// tagHumans is the OpenAPI tag of the human task routes.
const tagHumans = "Human tasks"

// humansBase is E/human-tasks relative to api.Prefix.
const humansBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/human-tasks"

// registerHumans adds the human task routes.
func (s *Service) registerHumans(add func(api.Route)) {
	change := func(op, path, summary, desc string, handler api.HandlerFunc, body any) api.Route {
		return api.Route{Method: "POST", Path: humansBase + "/{identifier}/" + path, Capability: auth.CapHumanTaskComplete,
			Idempotency: api.PolicyRequired, IfMatch: api.PolicyOptional, Handler: handler, OperationID: op, Tag: tagHumans,
			Summary: summary, Description: desc + " The same Idempotency-Key and body answer the committed result again; " +
				"an If-Match revision other than the task's current one answers 409 " + CodeHumanTaskRevision + ". " +
				"A completed or closed task answers 409 PF-RUNTIME-STATE.",
			Request: body, Response: HumanTask{}, ETag: true}
	}
	for _, rt := range []api.Route{
		{Method: "GET", Path: humansBase, Capability: auth.CapHumanTaskRead, Page: true, Handler: s.listHumanTasks,
			OperationID: "listHumanTasks", Tag: tagHumans, Summary: "List the human tasks of the environment",
			Description: "Open, claimed, completed and closed tasks of every run of the environment, in task id order. " +
				"The cursor is bound to the filters.",
			Query: []api.Param{
				{Name: "status", Type: "string", Description: "open, claimed, completed or closed (default: all)"},
				{Name: "assignee", Type: "string", Description: "tasks with this assignee entry; a principal id also matches user:<id>"},
				{Name: "run_id", Type: "string", Description: "tasks of this run"},
				{Name: "claimed_by", Type: "string", Description: "tasks held (or last held) by this principal"},
			},
			Response: api.Page[HumanTask]{}},
		{Method: "GET", Path: humansBase + "/{identifier}", Capability: auth.CapHumanTaskRead, Handler: s.getHumanTask,
			OperationID: "getHumanTask", Tag: tagHumans, Summary: "Read a human task", Description: "The ETag is the task's revision.",
			Response: HumanTask{}, ETag: true},
		change("claimHumanTask", "claim", "Claim a human task",
			"The caller holds an open task (any principal with human_task.complete, assignee or not). Claiming a task the caller "+
				"already holds changes nothing; a task held by someone else answers 409 PF-RUNTIME-STATE. No body, or {}.",
			s.claimHumanTask, nil),
		change("releaseHumanTask", "release", "Release a human task",
			"The holder gives a claimed task back: it is open again. An open task, or one held by someone else, answers 409 "+
				"PF-RUNTIME-STATE. No body, or {}.", s.releaseHumanTask, nil),
		change("reassignHumanTask", "reassign", "Reassign a human task",
			"Makes assignee (a principal id) the holder of an open or claimed task. The assignee must be enabled and hold "+
				"human_task.complete in the environment (422 PF-VALIDATION otherwise); reassigning to the holder changes nothing.",
			s.reassignHumanTask, HumanReassignRequest{}),
		change("completeHumanTask", "complete", "Complete a human task",
			"Completes the task with a decision and data: the run's human step continues in the same transaction "+
				"(human_completed, output {decision, data, completedBy}). A claimed task is completed by its holder; an open "+
				"task by a listed assignee, or by anyone with human_task.complete when it has no assignees; others answer 409 "+
				"PF-RUNTIME-STATE (claim it first). A decision that is not one of the task's decisions, or data not valid for "+
				"its form, answers 422 PF-VALIDATION. On a paused run the completion is checked now and applied when it resumes.",
			s.completeHumanTask, HumanCompleteRequest{}),
	} {
		if _, ok := rt.Request.(HumanCompleteRequest); ok {
			rt.MaxBody = payloadBodyBytes // form data of up to 1 MiB
		}
		add(rt)
	}
}

// humanFilterOf reads and validates the list filters.
func humanFilterOf(c *api.Call) (humanFilter, error) {
	var f humanFilter
	for _, p := range []struct {
		name string
		dst  *string
	}{{"status", &f.Status}, {"assignee", &f.Assignee}, {"run_id", &f.RunID}, {"claimed_by", &f.ClaimedBy}} {
		v, err := c.Query(p.name)
		if err != nil {
			return f, err
		}
		*p.dst = v
	}
	switch f.Status {
	case "", humanOpen, humanClaimed, humanCompleted, humanClosed:
	default:
		return f, api.InvalidParameter(api.CodeValidation, "status", "status is open, claimed, completed or closed")
	}
	if f.RunID != "" && !auth.IsCanonicalUUID(f.RunID) {
		return f, api.InvalidParameter(api.CodeValidation, "run_id", "run_id must be a canonical lowercase UUID")
	}
	if f.ClaimedBy != "" && !auth.IsCanonicalUUID(f.ClaimedBy) {
		return f, api.InvalidParameter(api.CodeValidation, "claimed_by", "claimed_by must be a principal id (a canonical lowercase UUID)")
	}
	if utf8.RuneCountInString(f.Assignee) > MaxDecisionLen {
		return f, api.InvalidParameter(api.CodeValidation, "assignee", "assignee has at most %d characters", MaxDecisionLen)
	}
	return f, nil
}

// listHumanTasks serves GET E/human-tasks.
func (s *Service) listHumanTasks(c *api.Call) error {
	f, err := humanFilterOf(c)
	if err != nil {
		return err
	}
	q, err := c.PageQuery("human-tasks", map[string]string{"status": f.Status, "assignee": f.Assignee, "run_id": f.RunID,
		"claimed_by": f.ClaimedBy})
	if err != nil {
		return err
	}
	items, err := s.ListHumanTasks(c.Context(), HumanFilter{Scope: c.PathScope(), Status: f.Status, Assignee: f.Assignee,
		RunID: f.RunID, ClaimedBy: f.ClaimedBy, After: q.After, Limit: q.Fetch()})
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(h HumanTask) string { return h.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// getHumanTask serves GET E/human-tasks/{identifier}.
func (s *Service) getHumanTask(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "human task")
	if err != nil {
		return err
	}
	h, err := s.GetHumanTask(c.Context(), c.PathScope(), id)
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: h, Revision: h.Revision})
}

// humanRequest reads the task id of the path and the body into dst
// (strictly; with optional, an empty body is accepted), and names the
// change for the caller.
func humanRequest(c *api.Call, dst any, optional bool) (HumanChange, error) {
	id, err := c.UUIDParam("identifier", "human task")
	if err != nil {
		return HumanChange{}, err
	}
	if optional {
		err = c.DecodeOptional(dst)
	} else {
		err = c.Decode(dst)
	}
	return HumanChange{Scope: c.PathScope(), ID: id, By: c.Caller.Principal.ID, Revision: c.IfMatch()}, err
}

// commitHuman commits change and answers the task after it.
func (s *Service) commitHuman(c *api.Call, change func(tx *sql.Tx) (HumanTask, error)) error {
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		h, err := change(tx)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: h, Revision: h.Revision}, nil
	}, s.notify)
}

// claimHumanTask serves POST E/human-tasks/{identifier}/claim.
func (s *Service) claimHumanTask(c *api.Call) error {
	ch, err := humanRequest(c, &struct{}{}, true)
	if err != nil {
		return err
	}
	return s.commitHuman(c, func(tx *sql.Tx) (HumanTask, error) { return s.ClaimHumanTask(c.Context(), tx, ch) })
}

// releaseHumanTask serves POST E/human-tasks/{identifier}/release.
func (s *Service) releaseHumanTask(c *api.Call) error {
	ch, err := humanRequest(c, &struct{}{}, true)
	if err != nil {
		return err
	}
	return s.commitHuman(c, func(tx *sql.Tx) (HumanTask, error) { return s.ReleaseHumanTask(c.Context(), tx, ch) })
}

// reassignHumanTask serves POST E/human-tasks/{identifier}/reassign.
func (s *Service) reassignHumanTask(c *api.Call) error {
	var req HumanReassignRequest
	ch, err := humanRequest(c, &req, false)
	if err != nil {
		return err
	}
	if err := checkReassign(&req); err != nil {
		return err
	}
	return s.commitHuman(c, func(tx *sql.Tx) (HumanTask, error) { return s.ReassignHumanTask(c.Context(), tx, ch, req) })
}

// completeHumanTask serves POST E/human-tasks/{identifier}/complete.
func (s *Service) completeHumanTask(c *api.Call) error {
	var req HumanCompleteRequest
	ch, err := humanRequest(c, &req, false)
	if err != nil {
		return err
	}
	if _, err := checkComplete(&req); err != nil {
		return err
	}
	files := FileAccess{Environment: mayReadFiles(c, ch.Scope), OriginKind: "human_task", OriginID: ch.ID}
	return s.commitHuman(c, func(tx *sql.Tx) (HumanTask, error) { return s.CompleteHumanTask(c.Context(), tx, ch, req, files) })
}
