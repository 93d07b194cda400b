package catalog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// errNotFound is returned by reads that find no row.
var errNotFound = errors.New("catalog: not found")

func projectExists(ctx context.Context, q store.Querier, tenant, project string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_projects WHERE id = ? AND tenant_id = ?`, project, tenant).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("catalog: read project: %w", err)
	}
	return n > 0, nil
}

const versionCols = `id, kind, definition_id, version, digest, artifact, source, catalog_digest, published_at, published_by`

func scanVersion(sc interface{ Scan(...any) error }) (Version, error) {
	var v Version
	var art string
	var at int64
	if err := sc.Scan(&v.ID, &v.Kind, &v.DefinitionID, &v.Version, &v.Digest, &art, &v.Source, &v.CatalogDigest, &at, &v.PublishedBy); err != nil {
		return v, err
	}
	v.Artifact = []byte(art)
	v.Format = FormatYAML
	v.PublishedAt = store.FromMillis(at)
	return v, nil
}

func insertVersion(ctx context.Context, tx *sql.Tx, tenant, project string, v Version) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_definition_versions(`+versionCols+`, tenant_id, project_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.Kind, v.DefinitionID, v.Version, v.Digest, string(v.Artifact), v.Source, v.CatalogDigest,
		store.Millis(v.PublishedAt), v.PublishedBy, tenant, project)
	if err != nil {
		return fmt.Errorf("catalog: insert published version: %w", err)
	}
	return nil
}

// versionExists reports the id of the published (kind, id, version), or "".
func versionExists(ctx context.Context, q store.Querier, project, kind, defID string, version int) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, `SELECT id FROM platform_definition_versions
		WHERE project_id = ? AND kind = ? AND definition_id = ? AND version = ?`+notTest, project, kind, defID, version).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("catalog: read published version: %w", err)
	}
	return id, nil
}

func getVersion(ctx context.Context, q store.Querier, project, kind, id string) (Version, error) {
	v, err := scanVersion(q.QueryRowContext(ctx, `SELECT `+versionCols+` FROM platform_definition_versions
		WHERE id = ? AND project_id = ? AND kind = ?`+notTest, id, project, kind))
	if errors.Is(err, sql.ErrNoRows) {
		return v, errNotFound
	}
	if err != nil {
		return v, fmt.Errorf("catalog: read published version: %w", err)
	}
	return v, nil
}

// listVersions lists a project's versions of kind (all kinds when "") in id
// order after after, optionally of one definition id.
func listVersions(ctx context.Context, q store.Querier, project, kind, defID, after string, limit int) ([]Version, error) {
	query := `SELECT ` + versionCols + ` FROM platform_definition_versions WHERE project_id = ? AND id > ?` + notTest
	args := []any{project, after}
	if kind != "" {
		query += ` AND kind = ?`
		args = append(args, kind)
	}
	if defID != "" {
		query += ` AND definition_id = ?`
		args = append(args, defID)
	}
	query += ` ORDER BY id`
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: list published versions: %w", err)
	}
	defer rows.Close()
	var out []Version
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: list published versions: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: list published versions: %w", err)
	}
	return out, nil
}

// draftRow is a draft's current state.
type draftRow struct {
	ID, Tenant, Project  string
	Kind                 sql.NullString
	Revision             int64
	Source               string
	CreatedAt, UpdatedAt int64
	CreatedBy, UpdatedBy string
	RetiredAt            sql.NullInt64
	RetiredBy            sql.NullString
}

const draftCols = `id, tenant_id, project_id, kind, revision, source, created_at, created_by, updated_at, updated_by, retired_at, retired_by`

func scanDraft(sc interface{ Scan(...any) error }) (draftRow, error) {
	var d draftRow
	err := sc.Scan(&d.ID, &d.Tenant, &d.Project, &d.Kind, &d.Revision, &d.Source, &d.CreatedAt, &d.CreatedBy,
		&d.UpdatedAt, &d.UpdatedBy, &d.RetiredAt, &d.RetiredBy)
	return d, err
}

// getDraft reads a draft by id in any project (callers check the scope).
func getDraft(ctx context.Context, q store.Querier, id string) (draftRow, error) {
	d, err := scanDraft(q.QueryRowContext(ctx, `SELECT `+draftCols+` FROM platform_drafts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, errNotFound
	}
	if err != nil {
		return d, fmt.Errorf("catalog: read draft: %w", err)
	}
	return d, nil
}

func listDrafts(ctx context.Context, q store.Querier, project, after string, includeRetired bool, limit int) ([]draftRow, error) {
	query := `SELECT ` + draftCols + ` FROM platform_drafts WHERE project_id = ? AND id > ?`
	if !includeRetired {
		query += ` AND retired_at IS NULL`
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY id LIMIT ?`, project, after, limit)
	if err != nil {
		return nil, fmt.Errorf("catalog: list drafts: %w", err)
	}
	defer rows.Close()
	var out []draftRow
	for rows.Next() {
		d, err := scanDraft(rows)
		if err != nil {
			return nil, fmt.Errorf("catalog: list drafts: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: list drafts: %w", err)
	}
	return out, nil
}

// draftRevision is one stored lifecycle revision.
type draftRevision struct {
	Revision int64
	Action   string
	Kind     sql.NullString
	Source   string
	At       int64
	By       string
}

func draftRevisions(ctx context.Context, q store.Querier, id string) ([]draftRevision, error) {
	rows, err := q.QueryContext(ctx, `SELECT revision, action, kind, source, at, by FROM platform_draft_revisions
		WHERE draft_id = ? ORDER BY revision`, id)
	if err != nil {
		return nil, fmt.Errorf("catalog: read draft revisions: %w", err)
	}
	defer rows.Close()
	var out []draftRevision
	for rows.Next() {
		var r draftRevision
		if err := rows.Scan(&r.Revision, &r.Action, &r.Kind, &r.Source, &r.At, &r.By); err != nil {
			return nil, fmt.Errorf("catalog: read draft revisions: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: read draft revisions: %w", err)
	}
	return out, nil
}

func insertDraftRevision(ctx context.Context, tx *sql.Tx, id string, r draftRevision) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_draft_revisions(draft_id, revision, action, kind, source, at, by)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, id, r.Revision, r.Action, r.Kind, r.Source, r.At, r.By)
	if err != nil {
		return fmt.Errorf("catalog: insert draft revision: %w", err)
	}
	return nil
}

// saveDraft inserts a draft's first revision or stores a new one.
func saveDraft(ctx context.Context, tx *sql.Tx, d draftRow, create bool) error {
	var err error
	if create {
		_, err = tx.ExecContext(ctx, `INSERT INTO platform_drafts(`+draftCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)`,
			d.ID, d.Tenant, d.Project, d.Kind, d.Revision, d.Source, d.CreatedAt, d.CreatedBy, d.UpdatedAt, d.UpdatedBy)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE platform_drafts SET kind = ?, revision = ?, source = ?, updated_at = ?, updated_by = ?,
			retired_at = ?, retired_by = ? WHERE id = ?`,
			d.Kind, d.Revision, d.Source, d.UpdatedAt, d.UpdatedBy, d.RetiredAt, d.RetiredBy, d.ID)
	}
	if err != nil {
		return fmt.Errorf("catalog: save draft: %w", err)
	}
	return nil
}

func sourceDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
