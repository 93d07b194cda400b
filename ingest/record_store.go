package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// Processing outcomes recorded in ingest_events.
const (
	StatusVerified   = "verified"
	StatusUnverified = "unverified" // processor type none
	StatusDuplicate  = "duplicate"
	StatusFailed     = "failed"
)

// Record is the outcome of processing one event.
type Record struct {
	EventID     string    `json:"event_id"`
	Provider    string    `json:"provider"`
	DeliveryID  string    `json:"delivery_id,omitempty"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	Topic       string    `json:"topic"`
	ReceivedAt  time.Time `json:"received_at"`
	ProcessedAt time.Time `json:"processed_at"`
	Attempts    int       `json:"attempts"`
}

// writeRecord upserts rec inside tx; reprocessing an event (a redelivery or
// a replay) updates its row and counts the attempt.
func writeRecord(tx *sql.Tx, rec Record) error {
	_, err := tx.Exec(`INSERT INTO ingest_events (event_id, provider, delivery_id, status, reason, topic, received_at, processed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (event_id) DO UPDATE SET delivery_id = excluded.delivery_id, status = excluded.status,
			reason = excluded.reason, topic = excluded.topic, processed_at = excluded.processed_at,
			attempts = ingest_events.attempts + 1`,
		rec.EventID, rec.Provider, rec.DeliveryID, rec.Status, rec.Reason, rec.Topic, store.Text(rec.ReceivedAt), store.Text(rec.ProcessedAt))
	if err != nil {
		return fmt.Errorf("ingest: record event %s: %w", rec.EventID, err)
	}
	return nil
}

// RecordFilter selects processed events.
type RecordFilter struct {
	Provider string
	Status   string
}

// listRecords returns records newest first, after the (processed_at,
// event_id) position when after is set.
func (s *Service) listRecords(ctx context.Context, f RecordFilter, after *pageKey, limit int) ([]Record, error) {
	q := `SELECT event_id, provider, delivery_id, status, reason, topic, received_at, processed_at, attempts
		FROM ingest_events WHERE (? = '' OR provider = ?) AND (? = '' OR status = ?)`
	args := []any{f.Provider, f.Provider, f.Status, f.Status}
	if after != nil {
		q += ` AND (processed_at, event_id) < (?, ?)`
		args = append(args, after.Time, after.ID)
	}
	q += ` ORDER BY processed_at DESC, event_id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ingest: list events: %w", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		var r Record
		var recv, proc string
		if err := rows.Scan(&r.EventID, &r.Provider, &r.DeliveryID, &r.Status, &r.Reason, &r.Topic, &recv, &proc, &r.Attempts); err != nil {
			return nil, fmt.Errorf("ingest: list events: %w", err)
		}
		r.ReceivedAt = store.FromText(recv)
		r.ProcessedAt = store.FromText(proc)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Record returns the processing outcome of eventID, or ok false.
func (s *Service) Record(ctx context.Context, eventID string) (Record, bool, error) {
	var r Record
	var recv, proc string
	err := s.db.Reader().QueryRowContext(ctx, `SELECT event_id, provider, delivery_id, status, reason, topic, received_at, processed_at, attempts
		FROM ingest_events WHERE event_id = ?`, eventID).Scan(&r.EventID, &r.Provider, &r.DeliveryID, &r.Status, &r.Reason, &r.Topic, &recv, &proc, &r.Attempts)
	if err == sql.ErrNoRows {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("ingest: read event %s: %w", eventID, err)
	}
	r.ReceivedAt = store.FromText(recv)
	r.ProcessedAt = store.FromText(proc)
	return r, true, nil
}
