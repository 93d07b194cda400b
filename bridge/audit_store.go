package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"github.com/agentbridge/bridge/store"
)

// The SQL of a job's append-only audit log (table bridge_audit).

// audit appends one entry to a job's audit log.
func (s *Service) audit(tx *sql.Tx, jobID string, attempt int, kind string, summary, payload any) error {
	seq, err := nextSeq(tx, "bridge_audit", jobID)
	if err != nil {
		return err
	}
	sj, _ := json.Marshal(summary)
	var pj any
	if payload != nil {
		b, _ := json.Marshal(payload)
		pj = string(b)
	}
	_, err = tx.Exec(`INSERT INTO bridge_audit(job_id, seq, attempt, kind, summary, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		jobID, seq, attempt, kind, string(sj), pj, store.Text(s.now()))
	return err
}

// auditHead is the seq of a job's last audit entry (0 without any).
func (s *Service) auditHead(ctx context.Context, jobID string) (int64, error) {
	var n int64
	err := s.db.Reader().QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM bridge_audit WHERE job_id = ?`, jobID).Scan(&n)
	return n, err
}

// auditEntries reads entries after..through in order, with their payloads
// when asked, until limit entries or (with at least one entry) maxBytes of
// summaries and payloads; more reports whether entries were left.
func (s *Service) auditEntries(ctx context.Context, jobID string, after, through int64, limit int, payloads bool, maxBytes int) (entries []AuditEntry, more bool, err error) {
	cols := "seq, attempt, kind, summary, created_at, NULL"
	if payloads {
		cols = "seq, attempt, kind, summary, created_at, payload"
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+cols+` FROM bridge_audit WHERE job_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
		jobID, after, through, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	entries = []AuditEntry{}
	size := 0
	for rows.Next() {
		var e AuditEntry
		var summary, created string
		var payload sql.NullString
		if err := rows.Scan(&e.Seq, &e.Attempt, &e.Kind, &summary, &created, &payload); err != nil {
			return nil, false, err
		}
		e.Summary = json.RawMessage(summary)
		if payload.Valid {
			e.Payload = json.RawMessage(payload.String)
		}
		e.CreatedAt = store.FromText(created)
		n := len(summary) + len(payload.String) + 128
		if len(entries) == limit || (len(entries) > 0 && size+n > maxBytes) {
			more = true
			break
		}
		size += n
		entries = append(entries, e)
	}
	return entries, more, rows.Err()
}
