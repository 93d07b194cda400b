package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// The dispatcher's rows (platform_task_dispatches): the calls the engine
// makes itself (dispatch.go), queued by the effects that issue them
// (effects.go), and the events held for paused runs.

// insertDispatch queues task of run r for executor with its (sealed)
// spec; a second insert does nothing.
func insertDispatch(ctx context.Context, tx *sql.Tx, r *runRow, task, executor, spec string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_task_dispatches(task_id, run_id, environment_id, executor, spec, status, created_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT(task_id) DO NOTHING`,
		task, r.ID, r.Environment, executor, spec, store.Millis(now)); err != nil {
		return fmt.Errorf("engine: queue task %s: %w", task, err)
	}
	return nil
}

// deleteDispatch deletes the dispatch of task id (withdrawn or finished).
func deleteDispatch(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_task_dispatches WHERE task_id = ?`, id); err != nil {
		return fmt.Errorf("engine: delete dispatch of task %s: %w", id, err)
	}
	return nil
}

// startedDispatches lists the tasks whose dispatch is marked started.
func startedDispatches(ctx context.Context, q store.Querier) ([]string, error) {
	return idsWhere(ctx, q, `SELECT task_id FROM platform_task_dispatches WHERE status = 'started'`)
}

// pendingDispatches reads up to limit pending dispatches of runs that are
// not paused, oldest first, their specs opened.
func (s *Service) pendingDispatches(ctx context.Context, tx *sql.Tx, limit int) ([]dispatchRow, error) {
	var out []dispatchRow
	err := eachRow(ctx, tx, "list dispatches", `SELECT d.task_id, d.run_id, d.executor, d.spec FROM platform_task_dispatches d
		JOIN platform_runs r ON r.id = d.run_id
		WHERE d.status = 'pending' AND r.paused = 0 ORDER BY d.created_at, d.task_id LIMIT ?`, []any{limit}, func(rows *sql.Rows) error {
		var d dispatchRow
		var spec string
		if err := rows.Scan(&d.TaskID, &d.RunID, &d.Executor, &spec); err != nil {
			return err
		}
		if err := s.seal.openTaskSpec(spec, d.TaskID, &d.Spec); err != nil {
			return fmt.Errorf("dispatch %s: %w", d.TaskID, err)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// markDispatchStarted marks the dispatch of task id started at now.
func markDispatchStarted(ctx context.Context, tx *sql.Tx, id string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_task_dispatches SET status = 'started', started_at = ? WHERE task_id = ?`,
		store.Millis(now), id); err != nil {
		return fmt.Errorf("engine: start dispatch: %w", err)
	}
	return nil
}

// readDispatch reads the run and stored spec of the dispatch of task id
// (errNotFound when it is gone).
func readDispatch(ctx context.Context, tx *sql.Tx, id string) (run, spec string, err error) {
	err = tx.QueryRowContext(ctx, `SELECT run_id, spec FROM platform_task_dispatches WHERE task_id = ?`, id).Scan(&run, &spec)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", errNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("engine: read dispatch: %w", err)
	}
	return run, spec, nil
}

// dispatchGone answers whether the dispatch of task id was deleted (the
// task withdrawn). It is polled outside any request, without a context.
func dispatchGone(q store.Querier, id string) (bool, error) {
	var n int
	if err := q.QueryRowContext(context.Background(), `SELECT count(*) FROM platform_task_dispatches WHERE task_id = ?`, id).Scan(&n); err != nil {
		return false, err
	}
	return n == 0, nil
}

// holdEvent holds sealed, an event for run id, in its inbox and flags the
// run for the loop.
func holdEvent(ctx context.Context, tx *sql.Tx, id string, sealed string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_inbox(run_id, event, created_at) VALUES (?, ?, ?)`,
		id, sealed, store.Millis(now)); err != nil {
		return fmt.Errorf("engine: hold event for run %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET needs_work = 1 WHERE id = ?`, id); err != nil {
		return fmt.Errorf("engine: flag run %s: %w", id, err)
	}
	return nil
}
