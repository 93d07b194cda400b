package compat

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// errNotFound: the project has no verdict yet.
var errNotFound = errors.New("compat: no verdict")

func getReport(ctx context.Context, q store.Querier, project string) (Report, error) {
	var raw string
	err := q.QueryRowContext(ctx, `SELECT report FROM platform_compatibility WHERE project_id = ?`, project).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return Report{}, errNotFound
	}
	if err != nil {
		return Report{}, fmt.Errorf("compat: read verdict: %w", err)
	}
	var r Report
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Report{}, fmt.Errorf("compat: stored report: %w", err)
	}
	return r, nil
}

func putReport(ctx context.Context, tx *sql.Tx, r Report) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("compat: encode report: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_compatibility(project_id, verdict, report, checked_at, next_scan_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT(project_id) DO UPDATE SET verdict = excluded.verdict, report = excluded.report,
		checked_at = excluded.checked_at, next_scan_at = excluded.next_scan_at`,
		r.ProjectID, r.Verdict, string(raw), store.Millis(r.CheckedAt), store.Millis(r.NextScanAt))
	if err != nil {
		return fmt.Errorf("compat: store verdict: %w", err)
	}
	return nil
}

// dueProjects lists up to limit projects whose rescan is due or that were
// never scanned.
func dueProjects(ctx context.Context, q store.Querier, now time.Time, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT p.id FROM platform_projects p LEFT JOIN platform_compatibility c ON c.project_id = p.id
		WHERE c.project_id IS NULL OR c.next_scan_at <= ? ORDER BY coalesce(c.next_scan_at, 0), p.id LIMIT ?`, store.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("compat: list due projects: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("compat: list due projects: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// restricted counts the projects whose verdict is restricted.
func restricted(ctx context.Context, q store.Querier) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_compatibility WHERE verdict = 'restricted'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("compat: count restricted projects: %w", err)
	}
	return n, nil
}

func projectExists(ctx context.Context, q store.Querier, tenant, project string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_projects WHERE id = ? AND tenant_id = ?`, project, tenant).Scan(&n); err != nil {
		return false, fmt.Errorf("compat: read project: %w", err)
	}
	return n > 0, nil
}
