package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
)

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

// humanView is the API view of a stored task.
func humanView(h humanRow) HumanTask {
	return HumanTask{ID: h.ID, RunID: h.RunID, NodeID: h.NodeID, Instance: h.Instance, Generation: h.Generation, Title: h.Title,
		Description: h.Description, Assignees: nonNil(h.Assignees), Decisions: nonNil(h.Decisions), Form: h.Form, Status: h.Status,
		ClaimedBy: h.ClaimedBy, ClaimedAt: h.ClaimedAt, CompletedBy: h.CompletedBy, Decision: h.Decision, Data: h.Data,
		CloseReason: h.CloseReason, ClosedAt: h.ClosedAt, Revision: h.Revision, OpenedAt: h.OpenedAt, Deadline: h.Deadline,
		UpdatedAt: h.UpdatedAt}
}

// humanChangeFunc changes task h for principal by in tx at time now and
// answers the task after the change (h itself when nothing changed).
type humanChangeFunc func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error)

// HumanChange names a change of human task ID of environment Scope by
// principal By; Revision, when not 0, is the If-Match revision it must be
// at (PF-HUMAN-TASK-REVISION otherwise).
type HumanChange struct {
	Scope    auth.Scope
	ID, By   string
	Revision int64
}

// changeHuman commits a change of task ch.ID (see within for tx): the
// environment and the task must exist (PF-NOT-FOUND), ch.Revision must be
// its revision (PF-HUMAN-TASK-REVISION) and it must not be completed or
// closed (PF-RUNTIME-STATE); the answer is the task after the change.
func (s *Service) changeHuman(ctx context.Context, tx *sql.Tx, ch HumanChange, change humanChangeFunc) (HumanTask, error) {
	if !auth.IsCanonicalUUID(ch.ID) {
		return HumanTask{}, notFound("human task")
	}
	var out HumanTask
	err := s.within(ctx, tx, func(tx *sql.Tx) error {
		if err := requireEnvironment(ctx, tx, ch.Scope); err != nil {
			return err
		}
		h, err := getHuman(ctx, tx, ch.Scope.Environment, ch.ID)
		if err != nil {
			return err
		}
		if ch.Revision != 0 && ch.Revision != h.Revision {
			return &Error{Code: CodeHumanTaskRevision, Revision: h.Revision,
				Message: fmt.Sprintf("human task %s is at revision %d, not %d; read it again", ch.ID, h.Revision, ch.Revision)}
		}
		if h.Status == humanCompleted || h.Status == humanClosed {
			return refused(CodeRuntimeState, "human task %s is %s", ch.ID, h.Status)
		}
		if h, err = change(ctx, tx, h, ch.By, s.timestamp()); err != nil {
			return err
		}
		out = humanView(h)
		return nil
	})
	return out, err
}

// HumanFilter selects the human tasks ListHumanTasks answers; the zero
// value of a field does not filter.
type HumanFilter struct {
	Scope auth.Scope
	// Status is open, claimed, completed or closed; Assignee an assignee
	// entry (a principal id also matches user:<id>).
	Status, Assignee, RunID, ClaimedBy string
	// After is the task id to resume behind.
	After string
	Limit int
}

// ListHumanTasks answers the human tasks of f.Scope's environment that
// match f, in task id order.
func (s *Service) ListHumanTasks(ctx context.Context, f HumanFilter) ([]HumanTask, error) {
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, f.Scope); err != nil {
		return nil, err
	}
	rows, err := listHumans(ctx, rd, f.Scope.Environment, humanFilter{Status: f.Status, Assignee: f.Assignee, RunID: f.RunID,
		ClaimedBy: f.ClaimedBy}, f.After, f.Limit)
	if err != nil {
		return nil, err
	}
	items := make([]HumanTask, len(rows))
	for i, h := range rows {
		items[i] = humanView(h)
	}
	return items, nil
}

// GetHumanTask answers human task id of environment sc.
func (s *Service) GetHumanTask(ctx context.Context, sc auth.Scope, id string) (HumanTask, error) {
	if !auth.IsCanonicalUUID(id) {
		return HumanTask{}, notFound("human task")
	}
	rd := s.db.Reader()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return HumanTask{}, err
	}
	h, err := getHuman(ctx, rd, sc.Environment, id)
	if err != nil {
		return HumanTask{}, err
	}
	return humanView(h), nil
}

// logHuman writes a human task change to its run's log.
func logHuman(ctx context.Context, tx *sql.Tx, h humanRow, now time.Time, typ, msg string, data map[string]any) error {
	data["human_task_id"] = h.ID
	return writeLog(ctx, tx, h.RunID, logLine{At: now, Type: typ, Node: h.NodeID, Message: "human task " + h.ID + " " + msg, Data: data})
}

// ClaimHumanTask makes ch.By the holder of open task ch.ID (see within
// for tx). Claiming a task the caller holds changes nothing; one held by
// someone else is PF-RUNTIME-STATE.
func (s *Service) ClaimHumanTask(ctx context.Context, tx *sql.Tx, ch HumanChange) (HumanTask, error) {
	return s.changeHuman(ctx, tx, ch, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		if h.Status == humanClaimed {
			if h.ClaimedBy == by {
				return h, nil
			}
			return h, refused(CodeRuntimeState, "human task %s is claimed by %s; only an open task is claimed", h.ID, h.ClaimedBy)
		}
		h, err := updateHuman(ctx, tx, h, humanChange{Status: humanClaimed, ClaimedBy: by}, now)
		if err != nil {
			return h, err
		}
		return h, logHuman(ctx, tx, h, now, "human_task_claimed", "claimed by "+by, map[string]any{"by": by})
	})
}

// ReleaseHumanTask gives claimed task ch.ID back, by its holder ch.By
// (see within for tx): it is open again.
func (s *Service) ReleaseHumanTask(ctx context.Context, tx *sql.Tx, ch HumanChange) (HumanTask, error) {
	return s.changeHuman(ctx, tx, ch, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		if h.Status != humanClaimed {
			return h, refused(CodeRuntimeState, "human task %s is not claimed", h.ID)
		}
		if h.ClaimedBy != by {
			return h, refused(CodeRuntimeState, "human task %s is claimed by %s; only its holder releases it (reassign it instead)", h.ID, h.ClaimedBy)
		}
		h, err := updateHuman(ctx, tx, h, humanChange{Status: humanOpen}, now)
		if err != nil {
			return h, err
		}
		return h, logHuman(ctx, tx, h, now, "human_task_released", "released by "+by, map[string]any{"by": by})
	})
}

// checkReassign validates a reassignment.
func checkReassign(req *HumanReassignRequest) error {
	if !auth.IsCanonicalUUID(req.Assignee) {
		return invalid("/assignee", "assignee must be a principal id (a canonical lowercase UUID)")
	}
	return nil
}

// ReassignHumanTask makes req.Assignee the holder of open or claimed task
// ch.ID (see within for tx); the assignee must be enabled and hold
// human_task.complete in the environment (PF-VALIDATION otherwise).
func (s *Service) ReassignHumanTask(ctx context.Context, tx *sql.Tx, ch HumanChange, req HumanReassignRequest) (HumanTask, error) {
	if err := checkReassign(&req); err != nil {
		return HumanTask{}, err
	}
	return s.changeHuman(ctx, tx, ch, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
		if err := checkAssignee(ctx, tx, req.Assignee, ch.Scope); err != nil {
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
		return nil, invalid("/data", "data has %d bytes; at most %d are accepted", len(raw), MaxInputBytes)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, invalid("/data", "data is not valid JSON")
	}
	return compact.Bytes(), nil
}

// CompleteHumanTask completes task ch.ID with req's decision and data
// (see within for tx): the run's human step continues in the same
// transaction. files says which files the data may refer to.
func (s *Service) CompleteHumanTask(ctx context.Context, tx *sql.Tx, ch HumanChange, req HumanCompleteRequest, files FileAccess) (HumanTask, error) {
	data, err := checkComplete(&req)
	if err != nil {
		return HumanTask{}, err
	}
	return s.changeHuman(ctx, tx, ch, func(ctx context.Context, tx *sql.Tx, h humanRow, by string, now time.Time) (humanRow, error) {
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
		return h, refused(CodeRuntimeState, "human task %s is claimed by %s; only its holder completes it", h.ID, h.ClaimedBy)
	case h.Status == humanOpen && len(h.Assignees) > 0 && !assignedTo(h.Assignees, by):
		return h, refused(CodeRuntimeState, "human task %s is assigned to %s; claim it before completing it",
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
