package sim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// readDocument answers the stored editor document, or nil.
func readDocument(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, project, draft, kind string) (*Document, error) {
	var d Document
	var envs string
	var updated int64
	var run int
	err := q.QueryRowContext(ctx, `SELECT revision, draft_revision, document, contains_run_data, source_environment_ids, updated_at, updated_by
		FROM platform_studio_documents WHERE project_id = ? AND draft_id = ? AND kind = ?`, project, draft, kind).
		Scan(&d.Revision, &d.DraftRevision, &d.Document, &run, &envs, &updated, &d.UpdatedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sim: read document: %w", err)
	}
	d.DraftID, d.Kind, d.ContainsRunData, d.UpdatedAt = draft, kind, run == 1, store.FromMillis(updated)
	if err := json.Unmarshal([]byte(envs), &d.SourceEnvironmentIDs); err != nil {
		return nil, fmt.Errorf("sim: document environments: %w", err)
	}
	return &d, nil
}

// upsertDocument stores d (created or replaced).
func upsertDocument(ctx context.Context, tx *sql.Tx, project string, d *Document) error {
	envJSON, err := json.Marshal(d.SourceEnvironmentIDs)
	if err != nil {
		return err
	}
	flag := 0
	if d.ContainsRunData {
		flag = 1
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_studio_documents
		(project_id, draft_id, kind, revision, draft_revision, document, contains_run_data, source_environment_ids, updated_at, updated_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (project_id, draft_id, kind) DO UPDATE SET revision = excluded.revision, draft_revision = excluded.draft_revision,
		document = excluded.document, contains_run_data = excluded.contains_run_data,
		source_environment_ids = excluded.source_environment_ids, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
		project, d.DraftID, d.Kind, d.Revision, d.DraftRevision, []byte(d.Document), flag, string(envJSON), store.Millis(d.UpdatedAt), d.UpdatedBy); err != nil {
		return fmt.Errorf("sim: save document: %w", err)
	}
	return nil
}
