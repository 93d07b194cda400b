package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// errNotFound: no row with that id.
var errNotFound = errors.New("source: not found")

// environmentExists reports whether the environment exists in its project and tenant.
func environmentExists(ctx context.Context, q store.Querier, tenant, project, env string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_environments WHERE id = ? AND project_id = ? AND tenant_id = ?`,
		env, project, tenant).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("source: read environment: %w", err)
	}
	return n > 0, nil
}

const connectionCols = `id, connection_id, revision, tenant_id, project_id, environment_id, name, provider, config, secret_keys, secrets,
	principal_id, created_at`

func scanConnection(sc interface{ Scan(...any) error }) (connectionRow, error) {
	var r connectionRow
	var config, keys string
	var created int64
	if err := sc.Scan(&r.ID, &r.ConnectionID, &r.Revision, &r.Tenant, &r.Project, &r.Environment, &r.Name, &r.Provider, &config, &keys,
		&r.sealed, &r.PrincipalID, &created); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(config), &r.Config); err != nil {
		return r, fmt.Errorf("source: stored config: %w", err)
	}
	if err := json.Unmarshal([]byte(keys), &r.SecretKeys); err != nil {
		return r, fmt.Errorf("source: stored secret keys: %w", err)
	}
	r.CreatedAt = store.FromMillis(created)
	return r, nil
}

// getConnection reads a revision by its id (errNotFound).
func getConnection(ctx context.Context, q store.Querier, id string) (connectionRow, error) {
	r, err := scanConnection(q.QueryRowContext(ctx, `SELECT `+connectionCols+` FROM platform_connections WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("source: read connection: %w", err)
	}
	return r, nil
}

// latestConnection reads the newest revision of a connection (errNotFound).
func latestConnection(ctx context.Context, q store.Querier, connection string) (connectionRow, error) {
	r, err := scanConnection(q.QueryRowContext(ctx, `SELECT `+connectionCols+` FROM platform_connections WHERE connection_id = ?
		ORDER BY revision DESC LIMIT 1`, connection))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("source: read connection: %w", err)
	}
	return r, nil
}

func insertConnection(ctx context.Context, tx *sql.Tx, r connectionRow) error {
	config, err := json.Marshal(r.Config)
	if err != nil {
		return fmt.Errorf("source: encode config: %w", err)
	}
	keys, err := json.Marshal(r.SecretKeys)
	if err != nil {
		return fmt.Errorf("source: encode secret keys: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_connections(`+connectionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.ConnectionID, r.Revision, r.Tenant, r.Project, r.Environment, r.Name, r.Provider, string(config), string(keys),
		r.sealed, r.PrincipalID, store.Millis(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("source: insert connection: %w", err)
	}
	return nil
}

// listConnections lists the newest revision of each connection of the
// environment in connection id order after after.
func listConnections(ctx context.Context, q store.Querier, env, after string, limit int) ([]Connection, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+connectionCols+` FROM platform_connections c WHERE environment_id = ? AND connection_id > ?
		AND revision = (SELECT max(revision) FROM platform_connections WHERE connection_id = c.connection_id)
		ORDER BY connection_id LIMIT ?`, env, after, limit)
	if err != nil {
		return nil, fmt.Errorf("source: list connections: %w", err)
	}
	defer rows.Close()
	var out []Connection
	for rows.Next() {
		r, err := scanConnection(rows)
		if err != nil {
			return nil, fmt.Errorf("source: list connections: %w", err)
		}
		out = append(out, r.Connection)
	}
	return out, rows.Err()
}
