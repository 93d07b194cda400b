package steptest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// environmentExists reports whether the environment is in the project and
// tenant.
func environmentExists(ctx context.Context, q store.Querier, tenant, project, env string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		env, project, tenant).Scan(&n); err != nil {
		return false, fmt.Errorf("steptest: read environment: %w", err)
	}
	return n > 0, nil
}

// getPolicy reads an environment's policy (disabled at revision 0 when
// none is stored).
func getPolicy(ctx context.Context, q store.Querier, env string) (Policy, error) {
	p := Policy{TestCalls: CallsDisabled}
	var at int64
	var by string
	err := q.QueryRowContext(ctx, `SELECT test_calls, revision, updated_at, updated_by FROM platform_test_policies WHERE environment_id = ?`,
		env).Scan(&p.TestCalls, &p.Revision, &at, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("steptest: read test policy: %w", err)
	}
	t := store.FromMillis(at)
	p.UpdatedAt, p.UpdatedBy = &t, &by
	return p, nil
}

// putPolicy stores p (its Revision is the new one) in tx.
func putPolicy(ctx context.Context, tx *sql.Tx, env string, p Policy) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_test_policies(environment_id, test_calls, revision, updated_at, updated_by)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT(environment_id) DO UPDATE SET test_calls = excluded.test_calls,
		revision = excluded.revision, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
		env, p.TestCalls, p.Revision, store.Millis(*p.UpdatedAt), *p.UpdatedBy)
	if err != nil {
		return fmt.Errorf("steptest: store test policy: %w", err)
	}
	return nil
}
