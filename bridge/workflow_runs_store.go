package bridge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// The SQL of the bridge's workflow-run records (table
// bridge_workflow_runs); the runs themselves are the platform's.

const workflowCols = `id, client_id, template_id, platform_run_id, request_hash, created_at`

func scanWorkflowRecord(row scanner) (workflowRecord, error) {
	var rec workflowRecord
	var created string
	err := row.Scan(&rec.ID, &rec.Client, &rec.TemplateID, &rec.PlatformRunID, &rec.Hash, &created)
	rec.CreatedAt = store.FromText(created)
	return rec, err
}

// recordByKey finds the run a client started with an Idempotency-Key.
func recordByKey(ctx context.Context, q store.Querier, client, key string) (*workflowRecord, error) {
	rec, err := scanWorkflowRecord(q.QueryRowContext(ctx, `SELECT `+workflowCols+` FROM bridge_workflow_runs
		WHERE client_id = ? AND idempotency_key = ?`, client, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read workflow run: %w", err)
	}
	return &rec, nil
}

// insertWorkflowRecord stores rec with its Idempotency-Key (none when empty).
func insertWorkflowRecord(ctx context.Context, tx *sql.Tx, rec workflowRecord, key string) error {
	var idem any
	if key != "" {
		idem = key
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO bridge_workflow_runs(id, client_id, template_id, idempotency_key, request_hash, platform_run_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, rec.ID, rec.Client, rec.TemplateID, idem, rec.Hash, rec.PlatformRunID, store.Text(rec.CreatedAt))
	return err
}

// workflowRecords reads up to limit records p may see, newest first.
func (s *Service) workflowRecords(ctx context.Context, p Principal, limit int) ([]workflowRecord, error) {
	cond, args := visible(p)
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+workflowCols+` FROM bridge_workflow_runs WHERE `+cond+
		` ORDER BY seq DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var recs []workflowRecord
	for rows.Next() {
		rec, err := scanWorkflowRecord(rows)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, rows.Err()
}

// workflowRecord reads the record id p may see; sql.ErrNoRows when none.
func (s *Service) workflowRecord(ctx context.Context, p Principal, id string) (workflowRecord, error) {
	cond, args := visible(p)
	return scanWorkflowRecord(s.db.Reader().QueryRowContext(ctx, `SELECT `+workflowCols+` FROM bridge_workflow_runs
		WHERE id = ? AND `+cond, append([]any{id}, args...)...))
}
