package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
)

// tagHumans is the OpenAPI tag of the human task routes.
const tagHumans = "Human tasks"

// humansBase is E/human-tasks relative to api.Prefix.
const humansBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/human-tasks"

// CodeHumanTaskRevision: the If-Match revision of a human task change is
// not the task's current one.
const CodeHumanTaskRevision = "PF-HUMAN-TASK-REVISION"

// MaxDecisionLen bounds a completion's decision (and the assignee filter).
const MaxDecisionLen = 200

// HumanTask is a task for people opened by a human step.
type HumanTask struct {
	ID          string          `json:"id" format:"uuid"`
	RunID       string          `json:"run_id" format:"uuid"`
	NodeID      string          `json:"node_id"`
	Instance    string          `json:"instance"`
	Generation  int             `json:"generation"`
	Title       string          `json:"title"`
	Description string          `json:"description,omitempty"`
	Assignees   []string        `json:"assignees" doc:"as the step evaluated them; an entry that is a principal id or user:<principal id> names that principal"`
	Decisions   []string        `json:"decisions" doc:"the decisions a completion chooses from"`
	Form        json.RawMessage `json:"form,omitempty" doc:"JSON Schema of the data a completion submits"`
	Status      string          `json:"status" doc:"open, claimed, completed or closed"`
	ClaimedBy   string          `json:"claimed_by,omitempty" doc:"the principal holding the task (kept once it is completed or closed)"`
	ClaimedAt   *time.Time      `json:"claimed_at,omitempty"`
	CompletedBy string          `json:"completed_by,omitempty"`
	Decision    string          `json:"decision,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	CloseReason string          `json:"close_reason,omitempty" doc:"closed only: timeout (the step's deadline), cancelled, terminated, run_deadline, step_timeout or run_ended"`
	ClosedAt    *time.Time      `json:"closed_at,omitempty" doc:"when it was completed or closed"`
	Revision    int64           `json:"revision" doc:"grows with every change; the ETag and the optional If-Match of changes"`
	OpenedAt    time.Time       `json:"opened_at"`
	Deadline    *time.Time      `json:"deadline,omitempty"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// HumanReassignRequest is the body of POST E/human-tasks/{identifier}/reassign.
type HumanReassignRequest struct {
	Assignee string `json:"assignee" api:"required" format:"uuid" doc:"the principal who holds the task next; it must be enabled and hold human_task.complete in the environment"`
}

// HumanCompleteRequest is the body of POST E/human-tasks/{identifier}/complete.
type HumanCompleteRequest struct {
	Decision string          `json:"decision" api:"required" doc:"one of the task's decisions (at most 200 characters)"`
	Data     json.RawMessage `json:"data,omitempty" doc:"valid for the task's form (absent is null)"`
}

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

// humanView is the API view of a stored task.
func humanView(h humanRow) HumanTask {
	return HumanTask{ID: h.ID, RunID: h.RunID, NodeID: h.NodeID, Instance: h.Instance, Generation: h.Generation, Title: h.Title,
		Description: h.Description, Assignees: nonNil(h.Assignees), Decisions: nonNil(h.Decisions), Form: h.Form, Status: h.Status,
		ClaimedBy: h.ClaimedBy, ClaimedAt: h.ClaimedAt, CompletedBy: h.CompletedBy, Decision: h.Decision, Data: h.Data,
		CloseReason: h.CloseReason, ClosedAt: h.ClosedAt, Revision: h.Revision, OpenedAt: h.OpenedAt, Deadline: h.Deadline,
		UpdatedAt: h.UpdatedAt}
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
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	rows, err := listHumans(ctx, rd, sc.Environment, f, q.After, q.Fetch())
	if err != nil {
		return err
	}
	items := make([]HumanTask, len(rows))
	for i, h := range rows {
		items[i] = humanView(h)
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
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	h, err := getHuman(ctx, rd, sc.Environment, id)
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: humanView(h), Revision: h.Revision})
}

// humanChangeFunc changes task h for principal by in tx at time now and
// answers the task after the change (h itself when nothing changed).
type humanChangeFunc func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error)

// changeHuman commits a change of task id: the environment and the task
// must exist (404), If-Match must name its revision (409
// PF-HUMAN-TASK-REVISION) and it must not be completed or closed (409
// PF-RUNTIME-STATE); the answer is the task after the change.
func (s *Service) changeHuman(c *api.Call, id string, change humanChangeFunc) error {
	ctx, sc, by, rev := c.Context(), c.PathScope(), c.Caller.Principal.ID, c.IfMatch()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return nil, err
		}
		h, err := getHuman(ctx, tx, sc.Environment, id)
		if err != nil {
			return nil, err
		}
		if rev != 0 && rev != h.Revision {
			return nil, &api.Error{Status: http.StatusConflict, Code: CodeHumanTaskRevision,
				Message: fmt.Sprintf("human task %s is at revision %d, not %d; read it again", id, h.Revision, rev),
				Headers: map[string]string{"ETag": api.FormatETag(h.Revision)}}
		}
		if h.Status == humanCompleted || h.Status == humanClosed {
			return nil, api.Conflict(kernel.CodeRuntimeState, "human task %s is %s", id, h.Status)
		}
		if h, err = change(ctx, tx, h, by, s.timestamp()); err != nil {
			return nil, err
		}
		return &api.Result{Body: humanView(h), Revision: h.Revision}, nil
	}, s.notify)
}

// humanRequest reads the task id of the path and the body into dst
// (strictly; with optional, an empty body is accepted).
func humanRequest(c *api.Call, dst any, optional bool) (string, error) {
	id, err := c.UUIDParam("identifier", "human task")
	if err != nil {
		return "", err
	}
	if optional {
		return id, c.DecodeOptional(dst)
	}
	return id, c.Decode(dst)
}

// logHuman writes a human task change to its run's log.
func logHuman(ctx context.Context, tx *sql.Tx, h humanRow, now time.Time, typ, msg string, data map[string]any) error {
	data["human_task_id"] = h.ID
	return writeLog(ctx, tx, h.RunID, logLine{At: now, Type: typ, Node: h.NodeID, Message: "human task " + h.ID + " " + msg, Data: data})
}

// claimHumanTask serves POST E/human-tasks/{identifier}/claim.
func (s *Service) claimHumanTask(c *api.Call) error {
	id, err := humanRequest(c, &struct{}{}, true)
	if err != nil {
		return err
	}
	return s.changeHuman(c, id, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		if h.Status == humanClaimed {
			if h.ClaimedBy == by {
				return h, nil
			}
			return h, api.Conflict(kernel.CodeRuntimeState, "human task %s is claimed by %s; only an open task is claimed", h.ID, h.ClaimedBy)
		}
		h, err := updateHuman(ctx, tx, h, humanChange{Status: humanClaimed, ClaimedBy: by}, now)
		if err != nil {
			return h, err
		}
		return h, logHuman(ctx, tx, h, now, "human_task_claimed", "claimed by "+by, map[string]any{"by": by})
	})
}

// releaseHumanTask serves POST E/human-tasks/{identifier}/release.
func (s *Service) releaseHumanTask(c *api.Call) error {
	id, err := humanRequest(c, &struct{}{}, true)
	if err != nil {
		return err
	}
	return s.changeHuman(c, id, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		if h.Status != humanClaimed {
			return h, api.Conflict(kernel.CodeRuntimeState, "human task %s is not claimed", h.ID)
		}
		if h.ClaimedBy != by {
			return h, api.Conflict(kernel.CodeRuntimeState, "human task %s is claimed by %s; only its holder releases it (reassign it instead)", h.ID, h.ClaimedBy)
		}
		h, err := updateHuman(ctx, tx, h, humanChange{Status: humanOpen}, now)
		if err != nil {
			return h, err
		}
		return h, logHuman(ctx, tx, h, now, "human_task_released", "released by "+by, map[string]any{"by": by})
	})
}

// reassignHumanTask serves POST E/human-tasks/{identifier}/reassign.
func (s *Service) reassignHumanTask(c *api.Call) error {
	var req HumanReassignRequest
	id, err := humanRequest(c, &req, false)
	if err != nil {
		return err
	}
	if !auth.IsCanonicalUUID(req.Assignee) {
		return api.Invalid("/assignee", "assignee must be a principal id (a canonical lowercase UUID)")
	}
	sc := c.PathScope()
	return s.changeHuman(c, id, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		if err := checkAssignee(ctx, tx, req.Assignee, sc); err != nil {
			return h, err
		}
		if h.Status == humanClaimed && h.ClaimedBy == req.Assignee {
			return h, nil
		}
		from := h.ClaimedBy
		h, err := updateHuman(ctx, tx, h, humanChange{Status: humanClaimed, ClaimedBy: req.Assignee}, now)
		if err != nil {
			return h, err
		}
		return h, logHuman(ctx, tx, h, now, "human_task_reassigned", "reassigned to "+req.Assignee+" by "+by,
			map[string]any{"by": by, "from": from, "to": req.Assignee})
	})
}

// checkComplete validates a completion request and answers its data
// (compact; nil when absent or null).
func checkComplete(req *HumanCompleteRequest) (json.RawMessage, error) {
	if err := checkText("decision", req.Decision, MaxDecisionLen, true); err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(req.Data)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > MaxInputBytes {
		return nil, api.Invalid("/data", "data has %d bytes; at most %d are accepted", len(raw), MaxInputBytes)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, api.Invalid("/data", "data is not valid JSON")
	}
	return compact.Bytes(), nil
}

// completeHumanTask serves POST E/human-tasks/{identifier}/complete.
func (s *Service) completeHumanTask(c *api.Call) error {
	var req HumanCompleteRequest
	id, err := humanRequest(c, &req, false)
	if err != nil {
		return err
	}
	data, err := checkComplete(&req)
	if err != nil {
		return err
	}
	files := FileAccess{Environment: mayReadFiles(c, c.PathScope()), OriginKind: "human_task", OriginID: id}
	return s.changeHuman(c, id, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		data, err := s.attachFormFiles(ctx, tx, h, data, files)
		if err != nil {
			return h, err
		}
		return s.completeTask(ctx, tx, h, by, req.Decision, data, now)
	})
}

// completeTask completes the open or claimed task h as principal by in tx:
// the holder or assignee rules, then the kernel's check of the decision
// and data through the run.
func (s *Service) completeTask(ctx context.Context, tx *sql.Tx, h humanRow, by, decision string, data json.RawMessage, now time.Time) (humanRow, error) {
	switch {
	case h.Status == humanClaimed && h.ClaimedBy != by:
		return h, api.Conflict(kernel.CodeRuntimeState, "human task %s is claimed by %s; only its holder completes it", h.ID, h.ClaimedBy)
	case h.Status == humanOpen && len(h.Assignees) > 0 && !assignedTo(h.Assignees, by):
		return h, api.Conflict(kernel.CodeRuntimeState, "human task %s is assigned to %s; claim it before completing it",
			h.ID, strings.Join(h.Assignees, ", "))
	}
	e := kernel.Event{Kind: kernel.EventHumanCompleted, TaskID: h.ID, Decision: decision, Data: data, CompletedBy: by}
	r, err := s.getRun(ctx, tx, h.Environment, h.RunID)
	if err != nil {
		return h, err
	}
	held := r.Paused && !r.State.Status.Terminal() // Deliver holds it
	// The completion is logged before Deliver steps the run, so that
	// it comes before the lines of the steps it lets run.
	msg := "completed by " + by + " with " + decision
	if held {
		msg += " (held until the run resumes)"
	}
	if err := logHuman(ctx, tx, h, now, "human_task_completed", msg, map[string]any{"by": by, "decision": decision, "held": held}); err != nil {
		return h, err
	}
	if _, _, _, err := s.Deliver(ctx, tx, h.Environment, h.RunID, e); err != nil {
		return h, refusal(err)
	}
	// The task keeps its data for views only (the run's state holds
	// the real values): secret fields of the form are redacted.
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	if err != nil {
		return h, err
	}
	return completeHuman(ctx, tx, h, by, decision, redact(data, p.sec.Forms[h.NodeID]), now)
}

// attachFormFiles checks the file references of a completion's data: the
// files uploaded through the task, those its run refers to, or any file
// of the environment for a caller with file.read.
func (s *Service) attachFormFiles(ctx context.Context, tx *sql.Tx, h humanRow, data json.RawMessage, a FileAccess) (json.RawMessage, error) {
	r, err := s.getRun(ctx, tx, h.Environment, h.RunID)
	if err != nil {
		return nil, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	if err != nil {
		return nil, err
	}
	return s.attachFiles(ctx, tx, h.Environment, h.RunID, "/data", data, p.files.Forms[h.NodeID], a)
}
