package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// The scheduler's reads and writes (service.go): what is due, which runs
// a cycle advances, and a run's work flags.

// nextDue answers the earliest timer, claim deadline or lease expiry of a
// run that is not paused (null when there is none).
func nextDue(ctx context.Context, q store.Querier) (sql.NullInt64, error) {
	var next sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT min(at) FROM (
		SELECT min(t.due_at) AS at FROM platform_run_timers t JOIN platform_runs r ON r.id = t.run_id WHERE r.paused = 0
		UNION ALL SELECT min(w.deadline_at) FROM platform_worker_tasks w JOIN platform_runs r ON r.id = w.run_id
			WHERE w.status = 'ready' AND r.paused = 0
		UNION ALL SELECT min(lease_expires_at) FROM platform_worker_tasks WHERE status = 'leased')`).Scan(&next)
	return next, err
}

// pickEnvironments is the part of workQuery and dueQuery that chooses the
// environments of a cycle from cand(tenant_id, environment_id, run id,
// at): per tenant the environment with the oldest item, then the
// MaxTenantsPerTurn oldest of those; then BatchSize items per environment
// in time order.
const pickEnvironments = `envs AS (
		SELECT tenant_id, environment_id, min(at) AS oldest FROM cand GROUP BY tenant_id, environment_id),
	firsts AS (
		SELECT environment_id, oldest, row_number() OVER (PARTITION BY tenant_id ORDER BY oldest, environment_id) AS n FROM envs),
	chosen AS (
		SELECT environment_id FROM firsts WHERE n = 1 ORDER BY oldest, environment_id LIMIT ?),
	ranked AS (
		SELECT c.id, c.at, row_number() OVER (PARTITION BY c.environment_id ORDER BY c.at, c.id) AS k
		FROM cand c JOIN chosen USING (environment_id))
	SELECT id FROM ranked WHERE k <= ? ORDER BY at, id`

// workQuery lists runs with work (needs_work, not paused).
const workQuery = `WITH cand AS (
		SELECT tenant_id, environment_id, id, updated_at AS at FROM platform_runs WHERE needs_work = 1 AND paused = 0),
	` + pickEnvironments

// dueQuery lists runs with a timer due at ? (not paused), by the earliest.
const dueQuery = `WITH cand AS (
		SELECT r.tenant_id, r.environment_id, r.id, min(t.due_at) AS at FROM platform_run_timers t
		JOIN platform_runs r ON r.id = t.run_id WHERE t.due_at <= ? AND r.paused = 0 GROUP BY r.id),
	` + pickEnvironments

// runsWithWork lists the runs with work a cycle advances (workQuery).
func runsWithWork(ctx context.Context, q store.Querier, tenants, batch int) ([]string, error) {
	return idsWhere(ctx, q, workQuery, tenants, batch)
}

// runsWithDueTimers lists the runs with a timer due at now a cycle fires
// (dueQuery).
func runsWithDueTimers(ctx context.Context, q store.Querier, now time.Time, tenants, batch int) ([]string, error) {
	return idsWhere(ctx, q, dueQuery, store.Millis(now), tenants, batch)
}

// workFlags reads run id's sequence, needs_work and paused flags
// (errNotFound without the run).
func workFlags(ctx context.Context, tx *sql.Tx, id string) (seq int64, work, paused bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT seq, needs_work, paused FROM platform_runs WHERE id = ?`, id).Scan(&seq, &work, &paused)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, false, errNotFound
	}
	if err != nil {
		return 0, false, false, fmt.Errorf("engine: read work flag: %w", err)
	}
	return seq, work, paused, nil
}

// takeHeld deletes held event id from the inbox.
func takeHeld(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_run_inbox WHERE id = ?`, id); err != nil {
		return fmt.Errorf("engine: take held event: %w", err)
	}
	return nil
}

// timerIDs lists the due-table timers of run id.
func timerIDs(ctx context.Context, tx *sql.Tx, id string) ([]string, error) {
	return idsWhere(ctx, tx, `SELECT timer_id FROM platform_run_timers WHERE run_id = ?`, id)
}

// deleteTimer deletes timer t of run id from the due table.
func deleteTimer(ctx context.Context, tx *sql.Tx, id, t string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_run_timers WHERE run_id = ? AND timer_id = ?`, id, t); err != nil {
		return fmt.Errorf("engine: drop timer: %w", err)
	}
	return nil
}
