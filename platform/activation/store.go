package activation

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// errNotFound is returned by reads that find no row.
var errNotFound = errors.New("activation: not found")

// environmentExists reports whether the environment exists in the project
// and tenant.
func environmentExists(ctx context.Context, q store.Querier, tenant, project, env string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		env, project, tenant).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("activation: read environment: %w", err)
	}
	return n > 0, nil
}

const activationCols = `id, environment_id, project_id, published_version_id, workflow_id, workflow_version, digest, name,
	input_defaults, connection_bindings, status, revision, created_at, created_by, retired_at, retired_by, retirement_reason`

func scanActivation(sc interface{ Scan(...any) error }) (Activation, error) {
	var a Activation
	var name, retiredBy, reason sql.NullString
	var defaults, bindings string
	var created int64
	var retired sql.NullInt64
	if err := sc.Scan(&a.ID, &a.EnvironmentID, &a.ProjectID, &a.PublishedVersionID, &a.WorkflowID, &a.WorkflowVersion, &a.Digest,
		&name, &defaults, &bindings, &a.Status, &a.Revision, &created, &a.CreatedBy, &retired, &retiredBy, &reason); err != nil {
		return a, err
	}
	a.InputDefaults = json.RawMessage(defaults)
	if err := json.Unmarshal([]byte(bindings), &a.ConnectionBindings); err != nil {
		return a, fmt.Errorf("activation: stored connection bindings: %w", err)
	}
	a.CreatedAt = store.FromMillis(created)
	if name.Valid {
		a.Name = &name.String
	}
	if retired.Valid {
		t := store.FromMillis(retired.Int64)
		a.RetiredAt = &t
	}
	if retiredBy.Valid {
		a.RetiredBy = &retiredBy.String
	}
	if reason.Valid {
		a.RetirementReason = &reason.String
	}
	return a, nil
}

func insertActivation(ctx context.Context, tx *sql.Tx, tenant string, a Activation) error {
	bindings, err := json.Marshal(a.ConnectionBindings)
	if err != nil {
		return fmt.Errorf("activation: encode connection bindings: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_activations(tenant_id, `+activationCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)`,
		tenant, a.ID, a.EnvironmentID, a.ProjectID, a.PublishedVersionID, a.WorkflowID, a.WorkflowVersion, a.Digest,
		a.Name, string(a.InputDefaults), string(bindings), a.Status, a.Revision, store.Millis(a.CreatedAt), a.CreatedBy)
	if err != nil {
		return fmt.Errorf("activation: insert activation: %w", err)
	}
	return nil
}

// getActivation reads an activation of the environment.
func getActivation(ctx context.Context, q store.Querier, env, id string) (Activation, error) {
	a, err := scanActivation(q.QueryRowContext(ctx, `SELECT `+activationCols+` FROM platform_activations
		WHERE id = ? AND environment_id = ?`, id, env))
	if errors.Is(err, sql.ErrNoRows) {
		return a, errNotFound
	}
	if err != nil {
		return a, fmt.Errorf("activation: read activation: %w", err)
	}
	return a, nil
}

// activeFor reads the active activation of a workflow id in the
// environment (errNotFound when there is none).
func activeFor(ctx context.Context, q store.Querier, env, workflowID string) (Activation, error) {
	a, err := scanActivation(q.QueryRowContext(ctx, `SELECT `+activationCols+` FROM platform_activations
		WHERE environment_id = ? AND workflow_id = ? AND status = 'active'`, env, workflowID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, errNotFound
	}
	if err != nil {
		return a, fmt.Errorf("activation: read active activation: %w", err)
	}
	return a, nil
}

// listActivations lists the environment's activations in id order after
// after, optionally of one status ("" for all).
func listActivations(ctx context.Context, q store.Querier, env, status, after string, limit int) ([]Activation, error) {
	query := `SELECT ` + activationCols + ` FROM platform_activations WHERE environment_id = ? AND id > ?` + notTest
	args := []any{env, after}
	if status != "" {
		query += ` AND status = ?`
		args = append(args, status)
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("activation: list activations: %w", err)
	}
	defer rows.Close()
	var out []Activation
	for rows.Next() {
		a, err := scanActivation(rows)
		if err != nil {
			return nil, fmt.Errorf("activation: list activations: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("activation: list activations: %w", err)
	}
	return out, nil
}

// retireActivation stores a's retirement (its new revision and retirement
// fields); it fails unless a is still at revision-1 and active.
func retireActivation(ctx context.Context, tx *sql.Tx, a Activation) error {
	res, err := tx.ExecContext(ctx, `UPDATE platform_activations SET status = ?, revision = ?, retired_at = ?, retired_by = ?, retirement_reason = ?
		WHERE id = ? AND status = 'active' AND revision = ?`,
		StatusRetired, a.Revision, store.Millis(*a.RetiredAt), a.RetiredBy, a.RetirementReason, a.ID, a.Revision-1)
	if err != nil {
		return fmt.Errorf("activation: retire activation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("activation: retire activation: %w", err)
	} else if n != 1 {
		return fmt.Errorf("activation: retire activation %s: it changed concurrently", a.ID)
	}
	return nil
}
