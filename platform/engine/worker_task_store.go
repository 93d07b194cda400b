package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/store"
)

// readyTasks reads up to n ready tasks of queues in environment env that
// may be handed out at now (their run neither paused nor ended, their
// claim deadline not passed), oldest first.
func (s *Service) readyTasks(ctx context.Context, tx *sql.Tx, env string, queues []string, now time.Time, n int) ([]workerTask, error) {
	args := []any{env}
	for _, q := range queues {
		args = append(args, q)
	}
	args = append(args, store.Millis(now), n)
	rows, err := tx.QueryContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks w
		WHERE w.environment_id = ? AND w.status = 'ready' AND w.queue IN (?`+strings.Repeat(", ?", len(queues)-1)+`)
		AND (w.deadline_at IS NULL OR w.deadline_at > ?)
		AND EXISTS (SELECT 1 FROM platform_runs r WHERE r.id = w.run_id AND r.paused = 0
			AND r.status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out'))
		ORDER BY w.created_at, w.task_id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("engine: list ready worker tasks: %w", err)
	}
	defer rows.Close()
	var ready []workerTask
	for rows.Next() {
		w, err := s.seal.scanWorkerTask(rows)
		if err != nil {
			return nil, err
		}
		ready = append(ready, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: list ready worker tasks: %w", err)
	}
	return ready, nil
}

// leaseTask leases ready task id to worker and principal until expires.
func leaseTask(ctx context.Context, tx *sql.Tx, id, worker, principal string, expires, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_worker_tasks SET status = 'leased', worker_id = ?, principal_id = ?,
		lease_expires_at = ?, claimed_at = ?, heartbeat_at = NULL WHERE task_id = ? AND status = 'ready'`,
		worker, principal, store.Millis(expires), store.Millis(now), id); err != nil {
		return fmt.Errorf("engine: lease worker task: %w", err)
	}
	return nil
}

// extendLease moves the lease of task id to expires (a heartbeat at now).
func extendLease(ctx context.Context, tx *sql.Tx, id string, expires, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_worker_tasks SET lease_expires_at = ?, heartbeat_at = ? WHERE task_id = ?`,
		store.Millis(expires), store.Millis(now), id); err != nil {
		return fmt.Errorf("engine: extend lease: %w", err)
	}
	return nil
}

// listWorkerTasks reads the tasks of f's environment that match f, in
// task id order.
func (s *Service) listWorkerTasks(ctx context.Context, q store.Querier, f TaskFilter) ([]workerTask, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks
		WHERE environment_id = ? AND task_id > ? AND (? = '' OR queue = ?) AND (? = '' OR status = ?) ORDER BY task_id LIMIT ?`,
		f.Scope.Environment, f.After, f.Queue, f.Queue, f.Status, f.Status, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("engine: list worker tasks: %w", err)
	}
	defer rows.Close()
	var out []workerTask
	for rows.Next() {
		w, err := s.seal.scanWorkerTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("engine: list worker tasks: %w", err)
	}
	return out, nil
}

const workerTaskCols = `task_id, run_id, environment_id, queue, spec, status, COALESCE(worker_id, ''), COALESCE(principal_id, ''),
	lease_expires_at, deadline_at, created_at`

func (sl sealer) scanWorkerTask(sc interface{ Scan(...any) error }) (workerTask, error) {
	var w workerTask
	var spec string
	var lease, claimBy sql.NullInt64
	var created int64
	if err := sc.Scan(&w.TaskID, &w.RunID, &w.Environment, &w.Queue, &spec, &w.Status, &w.WorkerID, &w.PrincipalID,
		&lease, &claimBy, &created); err != nil {
		return w, err
	}
	if err := sl.openTaskSpec(spec, w.TaskID, &w.Spec); err != nil {
		return w, err
	}
	if lease.Valid {
		t := store.FromMillis(lease.Int64)
		w.LeaseExpiresAt = &t
	}
	if claimBy.Valid {
		t := store.FromMillis(claimBy.Int64)
		w.ClaimDeadline = &t
	}
	w.CreatedAt = store.FromMillis(created)
	return w, nil
}

// getWorkerTask reads a worker task of environment env (any environment
// when env is ""); errNotFound when there is none.
func (s *Service) getWorkerTask(ctx context.Context, q store.Querier, env, id string) (workerTask, error) {
	w, err := s.seal.scanWorkerTask(q.QueryRowContext(ctx, `SELECT `+workerTaskCols+` FROM platform_worker_tasks
		WHERE task_id = ? AND (? = '' OR environment_id = ?)`, id, env, env))
	if errors.Is(err, sql.ErrNoRows) {
		return w, errNotFound
	}
	if err != nil {
		return w, fmt.Errorf("engine: read worker task: %w", err)
	}
	return w, nil
}

// insertWorkerTask stores attempt task of run r as a ready task of queue
// with its (sealed) spec and claim deadline; a second insert does nothing.
func insertWorkerTask(ctx context.Context, tx *sql.Tx, r *runRow, task, queue, spec string, deadline *int64) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_worker_tasks(task_id, run_id, tenant_id, project_id, environment_id,
		queue, spec, status, deadline_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'ready', ?, ?) ON CONFLICT(task_id) DO NOTHING`,
		task, r.ID, r.Tenant, r.Project, r.Environment, queue, spec, deadline, store.Millis(r.UpdatedAt)); err != nil {
		return fmt.Errorf("engine: queue worker task %s: %w", task, err)
	}
	return nil
}

// endWorkerTask deletes the row of task id (of run and env) and records how
// it ended, in tx. The first end recorded stays.
func endWorkerTask(ctx context.Context, tx *sql.Tx, id, run, env string, e taskEnd) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_worker_tasks WHERE task_id = ?`, id); err != nil {
		return fmt.Errorf("engine: end worker task %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_worker_task_ends(task_id, run_id, environment_id, outcome, reason,
		worker_id, principal_id, request_hash, response, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(task_id) DO NOTHING`,
		id, run, env, e.Outcome, e.Reason, optional(e.WorkerID), optional(e.PrincipalID), e.Hash, optional(e.Response),
		store.Millis(e.EndedAt)); err != nil {
		return fmt.Errorf("engine: record end of worker task %s: %w", id, err)
	}
	return nil
}

// getTaskEnd reads how task id of environment env ended; errNotFound when
// it has not (or never existed).
func getTaskEnd(ctx context.Context, q store.Querier, env, id string) (taskEnd, error) {
	var e taskEnd
	var response sql.NullString
	var ended int64
	err := q.QueryRowContext(ctx, `SELECT outcome, reason, COALESCE(worker_id, ''), COALESCE(principal_id, ''), request_hash,
		response, ended_at FROM platform_worker_task_ends WHERE task_id = ? AND environment_id = ?`, id, env).
		Scan(&e.Outcome, &e.Reason, &e.WorkerID, &e.PrincipalID, &e.Hash, &response, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return e, errNotFound
	}
	if err != nil {
		return e, fmt.Errorf("engine: read end of worker task: %w", err)
	}
	e.Response, e.EndedAt = response.String, store.FromMillis(ended)
	return e, nil
}

// workerTaskHolder reads the status and lease holder of task id
// (errNotFound when it is not a stored worker task).
func workerTaskHolder(ctx context.Context, tx *sql.Tx, id string) (status, worker, principal string, err error) {
	err = tx.QueryRowContext(ctx, `SELECT status, COALESCE(worker_id, ''), COALESCE(principal_id, '') FROM platform_worker_tasks
		WHERE task_id = ?`, id).Scan(&status, &worker, &principal)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", "", errNotFound
	}
	if err != nil {
		return "", "", "", fmt.Errorf("engine: read worker task: %w", err)
	}
	return status, worker, principal, nil
}

// expiredLeasesQuery lists leased tasks whose lease expired by ? (at most
// ?), earliest first (recoverLeases).
const expiredLeasesQuery = `SELECT task_id FROM platform_worker_tasks
		WHERE status = 'leased' AND lease_expires_at <= ? ORDER BY lease_expires_at, task_id LIMIT ?`

// unclaimedQuery lists ready tasks of runs not paused whose claim deadline
// passed by ? (at most ?), earliest first (expireReady).
const unclaimedQuery = `SELECT w.task_id FROM platform_worker_tasks w JOIN platform_runs r ON r.id = w.run_id
		WHERE w.status = 'ready' AND w.deadline_at <= ? AND r.paused = 0 ORDER BY w.deadline_at, w.task_id LIMIT ?`
