package steptest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// taRow is a stored test activation.
type taRow struct {
	TestActivation
	Tenant, Project, Environment string
	EndedAt                      *time.Time
}

const taCols = `id, tenant_id, project_id, environment_id, activation_id, draft_id, draft_revision, artifact_digest, side_effect,
	created_by, created_at, expires_at, ended, ended_at`

func scanTA(sc interface{ Scan(...any) error }) (taRow, error) {
	var r taRow
	var created, expires int64
	var ended sql.NullString
	var endedAt sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Project, &r.Environment, &r.ActivationID, &r.DraftID, &r.DraftRevision, &r.ArtifactDigest,
		&r.SideEffect, &r.CreatedBy, &created, &expires, &ended, &endedAt); err != nil {
		return r, err
	}
	r.CreatedAt, r.ExpiresAt = store.FromMillis(created), store.FromMillis(expires)
	r.Status = ActivationActive
	if ended.Valid {
		r.Status = ended.String
	}
	if endedAt.Valid {
		r.EndedAt = store.OptFromMillis(endedAt.Int64)
	}
	return r, nil
}

func insertTA(ctx context.Context, tx *sql.Tx, r taRow) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_test_activations(`+taCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)`,
		r.ID, r.Tenant, r.Project, r.Environment, r.ActivationID, r.DraftID, r.DraftRevision, r.ArtifactDigest, r.SideEffect,
		r.CreatedBy, store.Millis(r.CreatedAt), store.Millis(r.ExpiresAt))
	if err != nil {
		return fmt.Errorf("steptest: insert test activation: %w", err)
	}
	return nil
}

// getTA reads a test activation of the environment created by principal
// (errNotFound for anyone else's).
func getTA(ctx context.Context, q store.Querier, env, id, principal string) (taRow, error) {
	r, err := scanTA(q.QueryRowContext(ctx, `SELECT `+taCols+` FROM platform_test_activations
		WHERE id = ? AND environment_id = ? AND created_by = ?`, id, env, principal))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("steptest: read test activation: %w", err)
	}
	return r, nil
}

// endTA records the end of a live test activation (deleted or expired)
// and removes its listen routes; it answers false when it had ended.
func endTA(ctx context.Context, tx *sql.Tx, id, how string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_test_activations SET ended = ?, ended_at = ? WHERE id = ? AND ended IS NULL`,
		how, store.Millis(at), id)
	if err != nil {
		return false, fmt.Errorf("steptest: end test activation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_test_listens WHERE test_activation_id = ?`, id); err != nil {
		return false, fmt.Errorf("steptest: remove listen routes: %w", err)
	}
	return true, nil
}

// dueTAs lists up to limit live test activations that have expired.
func dueTAs(ctx context.Context, q store.Querier, now time.Time, limit int) ([]taRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+taCols+` FROM platform_test_activations WHERE ended IS NULL AND expires_at <= ?
		ORDER BY expires_at, id LIMIT ?`, store.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("steptest: list expired test activations: %w", err)
	}
	defer rows.Close()
	var out []taRow
	for rows.Next() {
		r, err := scanTA(rows)
		if err != nil {
			return nil, fmt.Errorf("steptest: list expired test activations: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// listenRow is a stored listen route with its test activation.
type listenRow struct {
	ID, TestActivationID string
	sealed               []byte
	MaxBody, Tolerance   int
	CreatedAt            time.Time
	TA                   taRow
}

func insertListen(ctx context.Context, tx *sql.Tx, l listenRow) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_test_listens(id, test_activation_id, sealed_key, max_body_bytes, tolerance_seconds, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, l.ID, l.TestActivationID, l.sealed, l.MaxBody, l.Tolerance, store.Millis(l.CreatedAt))
	if err != nil {
		return fmt.Errorf("steptest: insert listen route: %w", err)
	}
	return nil
}

// getListen reads a listen route with its test activation.
func getListen(ctx context.Context, q store.Querier, id string) (listenRow, error) {
	var l listenRow
	var created int64
	err := q.QueryRowContext(ctx, `SELECT id, test_activation_id, sealed_key, max_body_bytes, tolerance_seconds, created_at
		FROM platform_test_listens WHERE id = ?`, id).Scan(&l.ID, &l.TestActivationID, &l.sealed, &l.MaxBody, &l.Tolerance, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return l, errNotFound
	}
	if err != nil {
		return l, fmt.Errorf("steptest: read listen route: %w", err)
	}
	l.CreatedAt = store.FromMillis(created)
	l.TA, err = scanTA(q.QueryRowContext(ctx, `SELECT `+taCols+` FROM platform_test_activations WHERE id = ?`, l.TestActivationID))
	if err != nil {
		return l, fmt.Errorf("steptest: read test activation of listen route: %w", err)
	}
	return l, nil
}

// insertDelivery records an accepted test delivery; false when the
// webhook-id was accepted before.
func insertDelivery(ctx context.Context, tx *sql.Tx, listen, webhook, run string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO platform_test_deliveries(listen_id, webhook_id, run_id, at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, listen, webhook, run, store.Millis(at))
	if err != nil {
		return false, fmt.Errorf("steptest: insert test delivery: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// deliveryRun answers the run a test delivery started ("" when none).
func deliveryRun(ctx context.Context, q store.Querier, listen, webhook string) (string, error) {
	var run string
	err := q.QueryRowContext(ctx, `SELECT run_id FROM platform_test_deliveries WHERE listen_id = ? AND webhook_id = ?`, listen, webhook).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("steptest: read test delivery: %w", err)
	}
	return run, nil
}
