package steptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// errNotFound is returned by reads that find no row.
var errNotFound = errors.New("steptest: not found")

// stepRow is a stored step test.
type stepRow struct {
	ID, Tenant, Project, Environment string
	RunID, ActivationID              string
	DraftID                          string
	DraftRevision                    int64
	StepID, Kind, SideEffect         string
	Options                          options
	CreatedBy                        string
	CreatedAt, ExpiresAt             time.Time
	// Ended is the final status once recorded ("" while live).
	Ended string
}

const stepCols = `id, tenant_id, project_id, environment_id, run_id, activation_id, draft_id, draft_revision, step_id, kind,
	side_effect, options, created_by, created_at, expires_at, ended`

func scanStep(sc interface{ Scan(...any) error }) (stepRow, error) {
	var r stepRow
	var opts string
	var created, expires int64
	var ended sql.NullString
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Project, &r.Environment, &r.RunID, &r.ActivationID, &r.DraftID, &r.DraftRevision,
		&r.StepID, &r.Kind, &r.SideEffect, &opts, &r.CreatedBy, &created, &expires, &ended); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(opts), &r.Options); err != nil {
		return r, fmt.Errorf("steptest: stored options: %w", err)
	}
	r.CreatedAt, r.ExpiresAt, r.Ended = store.FromMillis(created), store.FromMillis(expires), ended.String
	return r, nil
}

func insertStep(ctx context.Context, tx *sql.Tx, r stepRow) error {
	opts, err := json.Marshal(r.Options)
	if err != nil {
		return fmt.Errorf("steptest: encode options: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_step_tests(`+stepCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
		r.ID, r.Tenant, r.Project, r.Environment, r.RunID, r.ActivationID, r.DraftID, r.DraftRevision, r.StepID, r.Kind,
		r.SideEffect, string(opts), r.CreatedBy, store.Millis(r.CreatedAt), store.Millis(r.ExpiresAt))
	if err != nil {
		return fmt.Errorf("steptest: insert step test: %w", err)
	}
	return nil
}

// getStep reads a step test of the environment created by principal
// (errNotFound for anyone else's: step tests belong to their creator).
func getStep(ctx context.Context, q store.Querier, env, id, principal string) (stepRow, error) {
	r, err := scanStep(q.QueryRowContext(ctx, `SELECT `+stepCols+` FROM platform_step_tests
		WHERE id = ? AND environment_id = ? AND created_by = ?`, id, env, principal))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("steptest: read step test: %w", err)
	}
	return r, nil
}

// liveSteps counts the step tests of the environment, and those of
// principal, whose run has not ended.
func liveSteps(ctx context.Context, q store.Querier, env, principal string) (mine, all int, err error) {
	err = q.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(s.created_by = ?), 0) FROM platform_step_tests s
		JOIN platform_runs r ON r.id = s.run_id
		WHERE s.environment_id = ? AND s.ended IS NULL AND r.status IN ('running', 'waiting', 'suspended')`, principal, env).Scan(&all, &mine)
	if err != nil {
		return 0, 0, fmt.Errorf("steptest: count live step tests: %w", err)
	}
	return mine, all, nil
}

// setEnded records a step test's final status once.
func setEnded(ctx context.Context, tx *sql.Tx, id, status string, at time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform_step_tests SET ended = ?, ended_at = ? WHERE id = ? AND ended IS NULL`,
		status, store.Millis(at), id); err != nil {
		return fmt.Errorf("steptest: end step test: %w", err)
	}
	return nil
}

// dueSteps lists up to limit live step tests whose time limit has passed.
func dueSteps(ctx context.Context, q store.Querier, now time.Time, limit int) ([]stepRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+stepCols+` FROM platform_step_tests WHERE ended IS NULL AND expires_at <= ?
		ORDER BY expires_at, id LIMIT ?`, store.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("steptest: list due step tests: %w", err)
	}
	defer rows.Close()
	var out []stepRow
	for rows.Next() {
		r, err := scanStep(rows)
		if err != nil {
			return nil, fmt.Errorf("steptest: list due step tests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
