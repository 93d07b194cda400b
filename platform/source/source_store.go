package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

const sourceCols = `id, tenant_id, project_id, environment_id, name, provider, package, package_version, adapter_version, schema_digest,
	connection_revision_id, policy, kind, activation_id, run_id, signal, mapping, binding_id, principal_id, disabled, created_at,
	disabled_at, disabled_by`

func scanSource(sc interface{ Scan(...any) error }) (Source, error) {
	var r Source
	var policy string
	var created int64
	var disabledAt sql.NullInt64
	var act, run, sig, by sql.NullString
	if err := sc.Scan(&r.ID, &r.Scope.TenantID, &r.Scope.ProjectID, &r.Scope.EnvironmentID, &r.Name, &r.Provider, &r.Package,
		&r.PackageVersion, &r.AdapterVersion, &r.SchemaDigest, &r.ConnectionRevisionID, &policy, &r.Kind, &act, &run, &sig, &r.Mapping,
		&r.BindingID, &r.PrincipalID, &r.Disabled, &created, &disabledAt, &by); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(policy), &r.Policy); err != nil {
		return r, fmt.Errorf("source: stored policy: %w", err)
	}
	r.ActivationID, r.RunID, r.Signal, r.DisabledBy = optString(act), optString(run), optString(sig), optString(by)
	r.CreatedAt = store.FromMillis(created)
	if disabledAt.Valid {
		r.DisabledAt = store.OptFromMillis(disabledAt.Int64)
	}
	r.IngressURL = ingressPath(r.ID)
	return r, nil
}

func optString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// getSource reads a source by id in any environment (errNotFound).
func getSource(ctx context.Context, q store.Querier, id string) (Source, error) {
	r, err := scanSource(q.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM platform_provider_sources WHERE id = ?`, id))
	return r, store.OneRow(err, errNotFound, "source: read provider source")
}

func insertSource(ctx context.Context, tx *sql.Tx, r Source) error {
	policy, err := json.Marshal(r.Policy)
	if err != nil {
		return fmt.Errorf("source: encode policy: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_provider_sources(`+sourceCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, NULL)`,
		r.ID, r.Scope.TenantID, r.Scope.ProjectID, r.Scope.EnvironmentID, r.Name, r.Provider, r.Package, r.PackageVersion, r.AdapterVersion,
		r.SchemaDigest, r.ConnectionRevisionID, string(policy), r.Kind, r.ActivationID, r.RunID, r.Signal, r.Mapping, r.BindingID,
		r.PrincipalID, store.Millis(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("source: insert provider source: %w", err)
	}
	return nil
}

// disableSource disables an enabled source; false when it was disabled already.
func disableSource(ctx context.Context, tx *sql.Tx, id, by string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_provider_sources SET disabled = 1, disabled_at = ?, disabled_by = ? WHERE id = ? AND disabled = 0`,
		store.Millis(at), by, id)
	if err != nil {
		return false, fmt.Errorf("source: disable provider source: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// listSources lists the environment's sources in id order after after.
func listSources(ctx context.Context, q store.Querier, env, after string, limit int) ([]Source, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+sourceCols+` FROM platform_provider_sources WHERE environment_id = ? AND id > ? ORDER BY id LIMIT ?`,
		env, after, limit)
	if err != nil {
		return nil, fmt.Errorf("source: list provider sources: %w", err)
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		r, err := scanSource(rows)
		if err != nil {
			return nil, fmt.Errorf("source: list provider sources: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
