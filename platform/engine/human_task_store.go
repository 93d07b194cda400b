package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// Human task statuses (platform_human_tasks.status).
const (
	humanOpen      = "open"
	humanClaimed   = "claimed"
	humanCompleted = "completed"
	humanClosed    = "closed"
)

// assigneeUserPrefix marks an assignee entry that names a principal id
// ("user:<principal id>"); a bare principal id matches too.
const assigneeUserPrefix = "user:"

// humanRow is a stored human task.
type humanRow struct {
	ID, RunID, Environment, NodeID, Instance string
	Generation                               int
	Title, Description                       string
	Assignees, Decisions                     []string
	Form, Data                               json.RawMessage
	Status                                   string
	ClaimedBy, CompletedBy, Decision         string
	CloseReason                              string
	ClaimedAt, ClosedAt, Deadline            *time.Time
	Revision                                 int64
	OpenedAt, UpdatedAt                      time.Time
}

const humanCols = `id, run_id, environment_id, node_id, instance, generation, title, description, assignees, decisions, form,
	status, claimed_by, claimed_at, completed_by, decision, data, close_reason, closed_at, revision, opened_at, deadline_at, updated_at`

func scanHuman(sc interface{ Scan(...any) error }) (humanRow, error) {
	var h humanRow
	var assignees, decisions string
	var form, claimedBy, completedBy, decision, data, reason sql.NullString
	var claimedAt, closedAt, deadline sql.NullInt64
	var opened, updated int64
	if err := sc.Scan(&h.ID, &h.RunID, &h.Environment, &h.NodeID, &h.Instance, &h.Generation, &h.Title, &h.Description,
		&assignees, &decisions, &form, &h.Status, &claimedBy, &claimedAt, &completedBy, &decision, &data, &reason, &closedAt,
		&h.Revision, &opened, &deadline, &updated); err != nil {
		return h, err
	}
	if err := json.Unmarshal([]byte(assignees), &h.Assignees); err != nil {
		return h, fmt.Errorf("engine: stored assignees of human task %s: %w", h.ID, err)
	}
	if err := json.Unmarshal([]byte(decisions), &h.Decisions); err != nil {
		return h, fmt.Errorf("engine: stored decisions of human task %s: %w", h.ID, err)
	}
	if form.Valid {
		h.Form = json.RawMessage(form.String)
	}
	if data.Valid {
		h.Data = json.RawMessage(data.String)
	}
	h.ClaimedBy, h.CompletedBy, h.Decision, h.CloseReason = claimedBy.String, completedBy.String, decision.String, reason.String
	h.ClaimedAt, h.ClosedAt, h.Deadline = store.FromNullMillis(claimedAt), store.FromNullMillis(closedAt), store.FromNullMillis(deadline)
	h.OpenedAt, h.UpdatedAt = store.FromMillis(opened), store.FromMillis(updated)
	return h, nil
}

// getHuman reads a human task of the environment.
func getHuman(ctx context.Context, q store.Querier, env, id string) (humanRow, error) {
	h, err := scanHuman(q.QueryRowContext(ctx, `SELECT `+humanCols+` FROM platform_human_tasks WHERE id = ? AND environment_id = ?`, id, env))
	if errors.Is(err, sql.ErrNoRows) {
		return h, notFound("human task")
	}
	if err != nil {
		return h, fmt.Errorf("engine: read human task: %w", err)
	}
	return h, nil
}

// humanFilter narrows a list of human tasks ("" for unset filters).
type humanFilter struct {
	Status, Assignee, RunID, ClaimedBy string
}

// listHumans reads up to limit human tasks of the environment after the id
// after, in id order.
func listHumans(ctx context.Context, q store.Querier, env string, f humanFilter, after string, limit int) ([]humanRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+humanCols+` FROM platform_human_tasks
		WHERE environment_id = ? AND id > ? AND (? = '' OR status = ?) AND (? = '' OR run_id = ?) AND (? = '' OR claimed_by = ?)
		AND (? = '' OR EXISTS (SELECT 1 FROM json_each(assignees) j WHERE j.value = ? OR j.value = ?))
		ORDER BY id LIMIT ?`, env, after, f.Status, f.Status, f.RunID, f.RunID, f.ClaimedBy, f.ClaimedBy,
		f.Assignee, f.Assignee, assigneeUserPrefix+f.Assignee, limit)
	if err != nil {
		return nil, fmt.Errorf("engine: list human tasks: %w", err)
	}
	defer rows.Close()
	var out []humanRow
	for rows.Next() {
		h, err := scanHuman(rows)
		if err != nil {
			return nil, fmt.Errorf("engine: list human tasks: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: list human tasks: %w", err)
	}
	return out, nil
}

// assignedTo reports whether principal is one of the assignees: an entry
// that is its id or "user:" and its id. Other entries (display names,
// "group:finance") match no principal.
func assignedTo(assignees []string, principal string) bool {
	return slices.Contains(assignees, principal) || slices.Contains(assignees, assigneeUserPrefix+principal)
}

// openHumanTask stores a task a human step opened, in the transaction of
// the state that opened it (an effect performed twice changes nothing).
func openHumanTask(ctx context.Context, tx *sql.Tx, r *runRow, h *kernel.HumanTask) error {
	if h == nil {
		return nil
	}
	assignees, err := json.Marshal(nonNil(h.Assignees))
	if err != nil {
		return fmt.Errorf("engine: encode assignees: %w", err)
	}
	decisions, err := json.Marshal(nonNil(h.Decisions))
	if err != nil {
		return fmt.Errorf("engine: encode decisions: %w", err)
	}
	var form *string
	if len(h.Form) > 0 {
		f := string(h.Form)
		form = &f
	}
	var deadline *int64
	if h.Deadline != nil {
		d := store.Millis(*h.Deadline)
		deadline = &d
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO platform_human_tasks(id, run_id, environment_id, node_id, instance, generation, title,
		description, assignees, decisions, form, status, opened_at, deadline_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
		h.ID, r.ID, r.Environment, h.Node, h.Instance, h.Generation, h.Title, h.Description, string(assignees), string(decisions),
		form, store.Millis(h.OpenedAt), deadline, store.Millis(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("engine: store human task %s: %w", h.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	return writeLog(ctx, tx, r.ID, logLine{At: r.UpdatedAt, Seq: r.State.Seq, Type: "human_task_opened", Node: h.Node,
		Message: "human task " + h.ID + " opened: " + h.Title, Data: map[string]any{"human_task_id": h.ID, "assignees": nonNil(h.Assignees)}})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// closeHumanTask withdraws a task the kernel closed without a completion
// (reason "timeout" when the step's deadline passed; the run's end reason
// when it ended), in the transaction of that state. A completion still
// held for a paused run was never applied, so it is closed as well.
func closeHumanTask(ctx context.Context, tx *sql.Tx, r *runRow, h *kernel.HumanTask, reason string) error {
	if h == nil {
		return nil
	}
	at := store.Millis(r.UpdatedAt)
	res, err := tx.ExecContext(ctx, `UPDATE platform_human_tasks SET status = 'closed', close_reason = ?, closed_at = ?,
		revision = revision + 1, updated_at = ? WHERE id = ? AND status <> 'closed'`, reason, at, at, h.ID)
	if err != nil {
		return fmt.Errorf("engine: close human task %s: %w", h.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	return writeLog(ctx, tx, r.ID, logLine{At: r.UpdatedAt, Seq: r.State.Seq, Type: "human_task_closed", Node: h.Node,
		Message: "human task " + h.ID + " closed: " + reason, Data: map[string]any{"human_task_id": h.ID, "reason": reason}})
}

// humanChange is the new holder and status of a task (claim, release,
// reassignment).
type humanChange struct {
	Status    string
	ClaimedBy string // "" clears it
}

// updateHuman applies a change to the task at its revision and answers the
// task as stored after it. A concurrent change is an error (writes are
// serialized, so it does not happen).
func updateHuman(ctx context.Context, tx *sql.Tx, h humanRow, c humanChange, now time.Time) (humanRow, error) {
	at := store.Millis(now)
	var claimedAt *int64
	if c.ClaimedBy != "" {
		claimedAt = &at
	}
	res, err := tx.ExecContext(ctx, `UPDATE platform_human_tasks SET status = ?, claimed_by = ?, claimed_at = ?, revision = revision + 1,
		updated_at = ? WHERE id = ? AND revision = ?`, c.Status, optional(c.ClaimedBy), claimedAt, at, h.ID, h.Revision)
	if err != nil {
		return h, fmt.Errorf("engine: update human task %s: %w", h.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return h, fmt.Errorf("engine: update human task %s: it changed concurrently", h.ID)
	}
	return getHuman(ctx, tx, h.Environment, h.ID)
}

// completeHuman records the completion of a task.
func completeHuman(ctx context.Context, tx *sql.Tx, h humanRow, by, decision string, data json.RawMessage, now time.Time) (humanRow, error) {
	at := store.Millis(now)
	var stored *string
	if len(data) > 0 {
		d := string(data)
		stored = &d
	}
	res, err := tx.ExecContext(ctx, `UPDATE platform_human_tasks SET status = 'completed', completed_by = ?, decision = ?, data = ?,
		closed_at = ?, revision = revision + 1, updated_at = ? WHERE id = ? AND revision = ?`, by, decision, stored, at, at, h.ID, h.Revision)
	if err != nil {
		return h, fmt.Errorf("engine: complete human task %s: %w", h.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return h, fmt.Errorf("engine: complete human task %s: it changed concurrently", h.ID)
	}
	return getHuman(ctx, tx, h.Environment, h.ID)
}

// checkAssignee answers 422 unless principal exists, is enabled and holds
// human_task.complete at scope (the reassigned person must be able to act).
func checkAssignee(ctx context.Context, q store.Querier, principal string, scope auth.Scope) error {
	var kind string
	var disabled bool
	err := q.QueryRowContext(ctx, `SELECT kind, disabled FROM platform_principals WHERE id = ?`, principal).Scan(&kind, &disabled)
	if errors.Is(err, sql.ErrNoRows) {
		return invalid("/assignee", "no principal has the id %s", principal)
	}
	if err != nil {
		return fmt.Errorf("engine: read principal: %w", err)
	}
	rows, err := q.QueryContext(ctx, `SELECT id, tenant_id, project_id, environment_id, resource_id, role, capabilities
		FROM platform_grants WHERE principal_id = ? AND revoked_at IS NULL ORDER BY id`, principal)
	if err != nil {
		return fmt.Errorf("engine: read grants: %w", err)
	}
	defer rows.Close()
	var grants []auth.Grant
	for rows.Next() {
		g := auth.Grant{PrincipalID: principal}
		var role, caps string
		if err := rows.Scan(&g.ID, &g.Scope.Tenant, &g.Scope.Project, &g.Scope.Environment, &g.Scope.Resource, &role, &caps); err != nil {
			return fmt.Errorf("engine: read grants: %w", err)
		}
		g.Role = auth.Role(role)
		for c := range strings.SplitSeq(caps, ",") {
			if c != "" {
				g.Capabilities = append(g.Capabilities, auth.Capability(c))
			}
		}
		grants = append(grants, g)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("engine: read grants: %w", err)
	}
	p := auth.Principal{ID: principal, Kind: auth.PrincipalKind(kind), Disabled: disabled}
	if d := auth.Authorize(grants, p, auth.CapHumanTaskComplete, scope); !d.Allowed {
		return invalid("/assignee", "principal %s cannot complete human tasks in this environment (%s)", principal, d.Reason)
	}
	return nil
}
