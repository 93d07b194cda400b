package file

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// errNotFound is returned by reads that find no row.
var errNotFound = errors.New("file: not found")

// row is a stored file.
type row struct {
	File
	Tenant, Project string
	DeletedAt       *time.Time
}

const fileCols = `id, tenant_id, project_id, environment_id, name, media_type, size, sha256, chunk_size, status, received_chunks,
	origin_kind, origin_id, origin_run_id, created_by, created_at, updated_at, expires_at, finished_at, deleted_at`

func scanFile(sc interface{ Scan(...any) error }) (row, error) {
	var r row
	var originID, originRun sql.NullString
	var created, updated int64
	var expires, finished, deleted sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Project, &r.EnvironmentID, &r.Name, &r.MediaType, &r.Size, &r.SHA256, &r.ChunkSize,
		&r.Status, &r.ReceivedChunks, &r.Origin.Kind, &originID, &originRun, &r.CreatedBy, &created, &updated, &expires,
		&finished, &deleted); err != nil {
		return r, err
	}
	r.Origin.ID, r.Origin.RunID = originID.String, originRun.String
	r.CreatedAt, r.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	r.ExpiresAt, r.FinishedAt, r.DeletedAt = store.OptFromMillis(expires.Int64), store.OptFromMillis(finished.Int64), store.OptFromMillis(deleted.Int64)
	r.Chunks = chunks(r.Size, r.ChunkSize)
	r.ReceivedBytes = min(r.ReceivedChunks*r.ChunkSize, r.Size)
	return r, nil
}

// getFile reads file id of environment env (errNotFound).
func getFile(ctx context.Context, q store.Querier, env, id string) (row, error) {
	r, err := scanFile(q.QueryRowContext(ctx, `SELECT `+fileCols+` FROM platform_files WHERE id = ? AND environment_id = ?`, id, env))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("file: read file: %w", err)
	}
	return r, nil
}

// usage answers the count and declared bytes of env's live files.
func usage(ctx context.Context, q store.Querier, env string) (n, total int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM platform_files
		WHERE environment_id = ? AND status IN ('uploading', 'ready')`, env).Scan(&n, &total)
	if err != nil {
		return 0, 0, fmt.Errorf("file: read usage: %w", err)
	}
	return n, total, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// insertFile stores a new upload.
func insertFile(ctx context.Context, tx *sql.Tx, r row) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_files(`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Tenant, r.Project, r.EnvironmentID, r.Name, r.MediaType, r.Size, r.SHA256, r.ChunkSize, r.Status, r.ReceivedChunks,
		r.Origin.Kind, nullable(r.Origin.ID), nullable(r.Origin.RunID), r.CreatedBy, store.Millis(r.CreatedAt), store.Millis(r.UpdatedAt),
		store.OptMillis(r.ExpiresAt), store.OptMillis(r.FinishedAt), nil)
	if err != nil {
		return fmt.Errorf("file: insert file: %w", err)
	}
	return nil
}

// countChunk records chunk index of an upload as stored, provided it was
// the next one; it answers false when the upload changed meanwhile.
func countChunk(ctx context.Context, tx *sql.Tx, id string, index int64, now, expires time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_files SET received_chunks = ?, updated_at = ?, expires_at = ?
		WHERE id = ? AND status = 'uploading' AND received_chunks = ?`, index+1, store.Millis(now), store.Millis(expires), id, index)
	return affected(res, err, "count chunk")
}

// resetChunks forgets the chunks of an upload whose bytes are gone.
func resetChunks(ctx context.Context, tx *sql.Tx, id string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE platform_files SET received_chunks = 0, updated_at = ? WHERE id = ? AND status = 'uploading'`,
		store.Millis(now), id)
	if err != nil {
		return fmt.Errorf("file: reset upload: %w", err)
	}
	return nil
}

// markReady shows a finished upload.
func markReady(ctx context.Context, tx *sql.Tx, id string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_files SET status = 'ready', finished_at = ?, updated_at = ?, expires_at = NULL
		WHERE id = ? AND status = 'uploading'`, store.Millis(now), store.Millis(now), id)
	return affected(res, err, "finish file")
}

// markDeleted hides a ready file that a live run still refers to.
func markDeleted(ctx context.Context, tx *sql.Tx, id, by string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE platform_files SET status = 'deleted', deleted_at = ?, deleted_by = ?, updated_at = ?
		WHERE id = ?`, store.Millis(now), by, store.Millis(now), id)
	if err != nil {
		return fmt.Errorf("file: delete file: %w", err)
	}
	return nil
}

// deleteFile removes a file's row (and its references).
func deleteFile(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_files WHERE id = ?`, id); err != nil {
		return fmt.Errorf("file: delete file: %w", err)
	}
	return nil
}

func affected(res sql.Result, err error, what string) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("file: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("file: %s: %w", what, err)
	}
	return n == 1, nil
}

// terminalRun is the SQL condition of a run that ended (kernel statuses).
const terminalRun = `status IN ('succeeded', 'failed', 'cancelled', 'timed_out')`

// liveRefs counts the runs that refer to file id and have not ended.
func liveRefs(ctx context.Context, q store.Querier, id string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_file_refs f JOIN platform_runs r ON r.id = f.run_id
		WHERE f.file_id = ? AND NOT r.`+terminalRun, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("file: count references: %w", err)
	}
	return n, nil
}

// referenced reports whether run refers to file id.
func referenced(ctx context.Context, q store.Querier, id, run string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_file_refs WHERE file_id = ? AND run_id = ?`, id, run).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("file: read reference: %w", err)
	}
	return n > 0, nil
}

// addRef records that run refers to file id.
func addRef(ctx context.Context, tx *sql.Tx, id, run string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_file_refs(file_id, run_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT (file_id, run_id) DO NOTHING`, id, run, store.Millis(now))
	if err != nil {
		return fmt.Errorf("file: record reference: %w", err)
	}
	return nil
}

// blobInUse reports whether a row still needs the blob of digest: a
// ready or deleted (kept) file, or an upload declaring it (whose finish a
// crash may have interrupted after the blob was moved into place).
func blobInUse(ctx context.Context, q store.Querier, digest string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_files WHERE sha256 = ?`, digest).Scan(&n); err != nil {
		return false, fmt.Errorf("file: read blob use: %w", err)
	}
	return n > 0, nil
}

// listFiles lists env's visible files (status uploading or ready, or
// only status) in id order after after.
func listFiles(ctx context.Context, q store.Querier, env, status, after string, limit int) ([]File, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+fileCols+` FROM platform_files WHERE environment_id = ? AND id > ?
		AND status IN ('uploading', 'ready') AND (? = '' OR status = ?) ORDER BY id LIMIT ?`, env, after, status, status, limit)
	if err != nil {
		return nil, fmt.Errorf("file: list files: %w", err)
	}
	defer rows.Close()
	out := []File{}
	for rows.Next() {
		r, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("file: list files: %w", err)
		}
		out = append(out, r.File)
	}
	return out, rows.Err()
}

// idDigest names a file and its content.
type idDigest struct{ ID, SHA256, Status string }

func scanIDs(rows *sql.Rows, err error) ([]idDigest, error) {
	if err != nil {
		return nil, fmt.Errorf("file: list files to reclaim: %w", err)
	}
	defer rows.Close()
	var out []idDigest
	for rows.Next() {
		var x idDigest
		if err := rows.Scan(&x.ID, &x.SHA256, &x.Status); err != nil {
			return nil, fmt.Errorf("file: list files to reclaim: %w", err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// expiredUploads lists up to limit uploads whose time ran out.
func expiredUploads(ctx context.Context, q store.Querier, now time.Time, limit int) ([]idDigest, error) {
	return scanIDs(q.QueryContext(ctx, `SELECT id, sha256, status FROM platform_files WHERE status = 'uploading' AND expires_at <= ?
		ORDER BY expires_at LIMIT ?`, store.Millis(now), limit))
}

// releasedFiles lists up to limit deleted files that no live run needs.
func releasedFiles(ctx context.Context, q store.Querier, limit int) ([]idDigest, error) {
	return scanIDs(q.QueryContext(ctx, `SELECT f.id, f.sha256, f.status FROM platform_files f WHERE f.status = 'deleted'
		AND NOT EXISTS (SELECT 1 FROM platform_file_refs x JOIN platform_runs r ON r.id = x.run_id
			WHERE x.file_id = f.id AND NOT r.`+terminalRun+`) LIMIT ?`, limit))
}

// uploadStatus answers the status of file id in any environment ("" when
// there is no such file).
func uploadStatus(ctx context.Context, q store.Querier, id string) (status string, received int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT status, received_chunks FROM platform_files WHERE id = ?`, id).Scan(&status, &received)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("file: read upload: %w", err)
	}
	return status, received, nil
}
