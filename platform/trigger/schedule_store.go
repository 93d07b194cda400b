package trigger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// errNotFound is returned by reads that find no row.
var errNotFound = errors.New("trigger: not found")

// environmentExists reports whether the environment exists in the project
// and tenant.
func environmentExists(ctx context.Context, q store.Querier, tenant, project, env string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		env, project, tenant).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("trigger: read environment: %w", err)
	}
	return n > 0, nil
}

const scheduleCols = `id, tenant_id, project_id, environment_id, revision, status, cron, activation_id, input, principal_id,
	blocked_reason, next_due_at, created_at, created_by, updated_at, updated_by`

// inputs seals schedule inputs at rest with the daemon's secret box (the
// schedule id is the associated data): a workflow may mark input values
// secret, and the data directory never holds them in clear (see
// docs/platform-api.md, "Schedules").
type inputs struct{ box *secretbox.Box }

// sealedPrefix marks a sealed input; a stored input without it is plain
// JSON (written before inputs were sealed).
const sealedPrefix = "sealed:"

func (b inputs) seal(id string, in json.RawMessage) (string, error) {
	sealed, err := b.box.SealString(string(in), "schedule-input:"+id)
	if err != nil {
		return "", fmt.Errorf("trigger: seal the input of schedule %s: %w", id, err)
	}
	return sealedPrefix + sealed, nil
}

func (b inputs) open(id, stored string) (json.RawMessage, error) {
	sealed, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return json.RawMessage(stored), nil
	}
	in, err := b.box.OpenString(sealed, "schedule-input:"+id)
	if err != nil {
		return nil, fmt.Errorf("trigger: open the input of schedule %s: %w", id, err)
	}
	return json.RawMessage(in), nil
}

func scanSchedule(sc interface{ Scan(...any) error }, in inputs) (row, error) {
	var r row
	var input string
	var blocked sql.NullString
	var next sql.NullInt64
	var created, updated int64
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Project, &r.Environment, &r.Revision, &r.Status, &r.Cron, &r.ActivationID, &input,
		&r.PrincipalID, &blocked, &next, &created, &r.CreatedBy, &updated, &r.UpdatedBy); err != nil {
		return r, err
	}
	r.Timezone, r.MissedPolicy = TimezoneUTC, MissedSkip
	var err error
	if r.Input, err = in.open(r.ID, input); err != nil {
		return r, err
	}
	if blocked.Valid {
		r.BlockedReason = &blocked.String
	}
	if next.Valid {
		t := store.FromMillis(next.Int64)
		r.NextDueAt = &t
	}
	r.CreatedAt, r.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	return r, nil
}

// getSchedule reads a schedule by id in any environment (errNotFound).
func getSchedule(ctx context.Context, q store.Querier, in inputs, id string) (row, error) {
	r, err := scanSchedule(q.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM platform_schedules WHERE id = ?`, id), in)
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("trigger: read schedule: %w", err)
	}
	return r, nil
}

// insertSchedule stores a new schedule.
func insertSchedule(ctx context.Context, tx *sql.Tx, in inputs, r row) error {
	input, err := in.seal(r.ID, r.Input)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_schedules(`+scheduleCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Tenant, r.Project, r.Environment, r.Revision, r.Status, r.Cron, r.ActivationID, input, r.PrincipalID,
		r.BlockedReason, store.OptMillis(r.NextDueAt), store.Millis(r.CreatedAt), r.CreatedBy, store.Millis(r.UpdatedAt), r.UpdatedBy)
	if err != nil {
		return fmt.Errorf("trigger: insert schedule: %w", err)
	}
	return nil
}

// updateSchedule stores r (a new revision or a scan's change) provided the
// stored row is still at revision rev with status and cursor as read
// (prevStatus, prevNext); it answers false when it changed meanwhile.
func updateSchedule(ctx context.Context, tx *sql.Tx, in inputs, r row, rev int64, prevStatus string, prevNext *time.Time) (bool, error) {
	input, err := in.seal(r.ID, r.Input)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE platform_schedules SET revision = ?, status = ?, cron = ?, activation_id = ?, input = ?,
		principal_id = ?, blocked_reason = ?, next_due_at = ?, updated_at = ?, updated_by = ?
		WHERE id = ? AND revision = ? AND status = ? AND next_due_at IS ?`,
		r.Revision, r.Status, r.Cron, r.ActivationID, input, r.PrincipalID, r.BlockedReason, store.OptMillis(r.NextDueAt),
		store.Millis(r.UpdatedAt), r.UpdatedBy, r.ID, rev, prevStatus, store.OptMillis(prevNext))
	if err != nil {
		return false, fmt.Errorf("trigger: update schedule: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("trigger: update schedule: %w", err)
	}
	return n == 1, nil
}

// listSchedules lists the environment's schedules (deleted ones too) in id
// order after after.
func listSchedules(ctx context.Context, q store.Querier, in inputs, env, after string, limit int) ([]Schedule, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+scheduleCols+` FROM platform_schedules WHERE environment_id = ? AND id > ? ORDER BY id LIMIT ?`,
		env, after, limit)
	if err != nil {
		return nil, fmt.Errorf("trigger: list schedules: %w", err)
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		r, err := scanSchedule(rows, in)
		if err != nil {
			return nil, fmt.Errorf("trigger: list schedules: %w", err)
		}
		out = append(out, r.Schedule)
	}
	return out, rows.Err()
}

// dueSchedules lists up to limit enabled schedules whose cursor is at or
// before now, the most overdue first.
func dueSchedules(ctx context.Context, q store.Querier, now time.Time, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM platform_schedules WHERE status = 'enabled' AND next_due_at <= ?
		ORDER BY next_due_at, id LIMIT ?`, store.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("trigger: list due schedules: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("trigger: list due schedules: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// insertOccurrence records a started occurrence or a skipped range. The
// primary key (schedule, first occurrence) refuses a second record of the
// same occurrence key.
func insertOccurrence(ctx context.Context, tx *sql.Tx, schedule string, o Occurrence) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_schedule_occurrences(schedule_id, from_at, to_at, kind, run_id, revision, observed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, schedule, store.Millis(o.From), store.Millis(o.To), o.Kind, o.RunID, o.Revision, store.Millis(o.ObservedAt))
	if err != nil {
		return fmt.Errorf("trigger: record occurrence: %w", err)
	}
	return nil
}

// listOccurrences lists a schedule's occurrences newest first, those
// before before (ms; 0 for the newest).
func listOccurrences(ctx context.Context, q store.Querier, schedule string, before int64, limit int) ([]Occurrence, error) {
	if before == 0 {
		before = 1<<63 - 1
	}
	rows, err := q.QueryContext(ctx, `SELECT from_at, to_at, kind, run_id, revision, observed_at FROM platform_schedule_occurrences
		WHERE schedule_id = ? AND from_at < ? ORDER BY from_at DESC LIMIT ?`, schedule, before, limit)
	if err != nil {
		return nil, fmt.Errorf("trigger: list occurrences: %w", err)
	}
	defer rows.Close()
	var out []Occurrence
	for rows.Next() {
		var o Occurrence
		var from, to, observed int64
		var run sql.NullString
		if err := rows.Scan(&from, &to, &o.Kind, &run, &o.Revision, &observed); err != nil {
			return nil, fmt.Errorf("trigger: list occurrences: %w", err)
		}
		o.From, o.To, o.ObservedAt = store.FromMillis(from), store.FromMillis(to), store.FromMillis(observed)
		if run.Valid {
			o.RunID = &run.String
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
