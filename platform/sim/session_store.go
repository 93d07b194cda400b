package sim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// sessionRow is a stored session's columns.
type sessionRow struct {
	ID, Tenant, Project, Creator string
	Revision                     int64
	Status                       Status
	CreatedAt, ExpiresAt         time.Time
	Body                         []byte
}

var errNoSession = errors.New("sim: no such session")

func readSession(ctx context.Context, q *sql.DB, id string) (sessionRow, error) {
	var r sessionRow
	var created, expires int64
	err := q.QueryRowContext(ctx, `SELECT id, tenant_id, project_id, creator_id, revision, status, created_at, expires_at, body
		FROM platform_debug_sessions WHERE id = ?`, id).
		Scan(&r.ID, &r.Tenant, &r.Project, &r.Creator, &r.Revision, &r.Status, &created, &expires, &r.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNoSession
	}
	if err != nil {
		return r, fmt.Errorf("sim: read session: %w", err)
	}
	r.CreatedAt, r.ExpiresAt = store.FromMillis(created), store.FromMillis(expires)
	return r, nil
}

// capacity counts what bounds a creation: the creator's and the
// project's live sessions (unexpired, not ended) and the project's stored
// ones.
func capacity(ctx context.Context, tx *sql.Tx, creator, project string, now time.Time) (byCreator, byProject, retained int, err error) {
	ended := `('succeeded','failed','cancelled','timed_out')`
	ms := store.Millis(now)
	if err = tx.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM platform_debug_sessions WHERE creator_id = ? AND expires_at > ? AND status NOT IN `+ended+`),
		(SELECT COUNT(*) FROM platform_debug_sessions WHERE project_id = ? AND expires_at > ? AND status NOT IN `+ended+`),
		(SELECT COUNT(*) FROM platform_debug_sessions WHERE project_id = ?)`,
		creator, ms, project, ms, project).Scan(&byCreator, &byProject, &retained); err != nil {
		err = fmt.Errorf("sim: count sessions: %w", err)
	}
	return
}

// pruneSessions deletes a project's sessions that expired before cutoff.
func pruneSessions(ctx context.Context, tx *sql.Tx, project string, cutoff time.Time) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_debug_sessions WHERE project_id = ? AND expires_at <= ?`,
		project, store.Millis(cutoff)); err != nil {
		return fmt.Errorf("sim: prune sessions: %w", err)
	}
	return nil
}

func insertSession(ctx context.Context, tx *sql.Tx, r sessionRow) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_debug_sessions
		(id, tenant_id, project_id, creator_id, revision, status, created_at, expires_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Tenant, r.Project, r.Creator, r.Revision, string(r.Status), store.Millis(r.CreatedAt), store.Millis(r.ExpiresAt), r.Body); err != nil {
		return fmt.Errorf("sim: insert session: %w", err)
	}
	return nil
}

// updateSession stores r if the stored revision is still prev; it answers
// false when another command got there first.
func updateSession(ctx context.Context, tx *sql.Tx, r sessionRow, prev int64) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_debug_sessions SET revision = ?, status = ?, body = ? WHERE id = ? AND revision = ?`,
		r.Revision, string(r.Status), r.Body, r.ID, prev)
	if err != nil {
		return false, fmt.Errorf("sim: update session: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func projectExists(ctx context.Context, q *sql.DB, tenant, project string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM platform_projects WHERE id = ? AND tenant_id = ?`, project, tenant).Scan(&n); err != nil {
		return false, fmt.Errorf("sim: read project: %w", err)
	}
	return n == 1, nil
}
