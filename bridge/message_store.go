package bridge

import (
	"context"
	"database/sql"
	"errors"
	"github.com/agentbridge/bridge/store"
	"time"
)

// The SQL of a job's conversation (table bridge_messages).

func (s *Service) messages(ctx context.Context, jobID string) ([]Message, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT seq, attempt, role, text, status, created_at FROM bridge_messages WHERE job_id = ? ORDER BY seq`, jobID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		var m Message
		var created string
		if err := rows.Scan(&m.Seq, &m.Attempt, &m.Role, &m.Text, &m.Status, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = store.FromText(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// insertMessage appends a message to j's conversation in j's current
// attempt and returns it.
func insertMessage(tx *sql.Tx, j Job, role, text, status string, created time.Time) (Message, error) {
	seq, err := nextSeq(tx, "bridge_messages", j.ID)
	if err != nil {
		return Message{}, err
	}
	m := Message{Seq: seq, Attempt: j.Attempt, Role: role, Text: text, Status: status, CreatedAt: created}
	_, err = tx.Exec(`INSERT INTO bridge_messages(job_id, seq, attempt, role, text, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		j.ID, seq, j.Attempt, role, text, status, store.Text(created))
	return m, err
}

// cancelPendingMessages marks the messages no turn took cancelled.
func cancelPendingMessages(tx *sql.Tx, jobID string) error {
	_, err := tx.Exec(`UPDATE bridge_messages SET status = 'cancelled' WHERE job_id = ? AND status = 'pending'`, jobID)
	return err
}

// takeMessage marks the oldest pending message of the current attempt
// delivered and returns its text.
func takeMessage(tx *sql.Tx, job Job) (string, bool, error) {
	var seq int
	var text string
	err := tx.QueryRow(`SELECT seq, text FROM bridge_messages WHERE job_id = ? AND attempt = ? AND role = 'user' AND status = 'pending' ORDER BY seq LIMIT 1`,
		job.ID, job.Attempt).Scan(&seq, &text)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	_, err = tx.Exec(`UPDATE bridge_messages SET status = 'delivered' WHERE job_id = ? AND seq = ?`, job.ID, seq)
	return text, err == nil, err
}

// undeliverLastMessage makes the last message a turn took pending again.
func undeliverLastMessage(tx *sql.Tx, job Job) error {
	_, err := tx.Exec(`UPDATE bridge_messages SET status = 'pending' WHERE job_id = ? AND attempt = ? AND seq =
		(SELECT MAX(seq) FROM bridge_messages WHERE job_id = ? AND attempt = ? AND role = 'user' AND status = 'delivered')`,
		job.ID, job.Attempt, job.ID, job.Attempt)
	return err
}

// pendingMessages counts the user messages of j's attempt no turn took yet.
func pendingMessages(tx *sql.Tx, j Job) (int, error) {
	var n int
	err := tx.QueryRow(`SELECT count(*) FROM bridge_messages WHERE job_id = ? AND attempt = ? AND role = 'user' AND status = 'pending'`, j.ID, j.Attempt).Scan(&n)
	return n, err
}
