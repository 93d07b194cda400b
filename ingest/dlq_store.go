package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/agentbridge/bridge/store"
	"time"
)

// upsertDeadLetter stores one row per dead-lettered event (indexDeadLetter);
// a redelivered dead letter (same dlq-id) changes nothing.
func (s *Service) upsertDeadLetter(ctx context.Context, eventID string, h map[string]string, hdrs string, payload any, status, size int, received, failed string) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO ingest_dlq (event_id, dlq_id, provider, stage, reason, detail, status, topic, headers, payload, payload_size, received_at, failed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (event_id) DO UPDATE SET dlq_id = excluded.dlq_id, stage = excluded.stage, reason = excluded.reason,
				detail = excluded.detail, status = excluded.status, topic = excluded.topic, headers = excluded.headers,
				payload = excluded.payload, payload_size = excluded.payload_size, failed_at = excluded.failed_at,
				failures = ingest_dlq.failures + 1, replayed_at = NULL
			WHERE ingest_dlq.dlq_id <> excluded.dlq_id`,
			eventID, h[hDLQID], h[hProvider], h[hDLQStage], h[hDLQReason], h[hDLQDetail], status, h[hDLQTopic],
			hdrs, payload, size, received, failed)
		if err != nil {
			return fmt.Errorf("ingest: index dead letter %s: %w", eventID, err)
		}
		return nil
	})
}

const dlqColumns = `event_id, dlq_id, provider, stage, reason, detail, status, topic, payload IS NOT NULL, payload_size,
	received_at, failed_at, failures, replayed_at, replays`

func scanDLQ(sc interface{ Scan(...any) error }, extra ...any) (DLQEntry, error) {
	var e DLQEntry
	var recv, failed string
	var replayed sql.NullString
	dest := append([]any{&e.EventID, &e.DLQID, &e.Provider, &e.Stage, &e.Reason, &e.Detail, &e.Status, &e.Topic, &e.hasPayload,
		&e.PayloadSize, &recv, &failed, &e.Failures, &replayed, &e.Replays}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return DLQEntry{}, err
	}
	e.ReceivedAt = store.FromText(recv)
	e.FailedAt = store.FromText(failed)
	if replayed.Valid {
		t := store.FromText(replayed.String)
		e.ReplayedAt = &t
	}
	return e, nil
}

// listDLQ returns dead letters, most recently failed first.
func (s *Service) listDLQ(ctx context.Context, f DLQFilter, after *pageKey, limit int) ([]DLQEntry, error) {
	q := `SELECT ` + dlqColumns + ` FROM ingest_dlq WHERE (? = '' OR provider = ?)`
	args := []any{f.Provider, f.Provider}
	if f.Pending {
		q += ` AND replayed_at IS NULL`
	}
	if after != nil {
		q += ` AND (failed_at, event_id) < (?, ?)`
		args = append(args, after.Time, after.ID)
	}
	q += ` ORDER BY failed_at DESC, event_id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ingest: list dead letters: %w", err)
	}
	defer rows.Close()
	out := []DLQEntry{}
	for rows.Next() {
		e, err := scanDLQ(rows)
		if err != nil {
			return nil, fmt.Errorf("ingest: list dead letters: %w", err)
		}
		s.markReplayable(&e)
		out = append(out, e)
	}
	return out, rows.Err()
}

// readDeadLetter reads one dead letter with its stored headers (JSON) and
// payload; errNotFound when there is none.
func (s *Service) readDeadLetter(ctx context.Context, eventID string) (DLQEntry, string, []byte, error) {
	var hdrs string
	var payload []byte
	row := s.db.Reader().QueryRowContext(ctx, `SELECT `+dlqColumns+`, headers, payload FROM ingest_dlq WHERE event_id = ?`, eventID)
	e, err := scanDLQ(row, &hdrs, &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return DLQEntry{}, "", nil, errNotFound
	}
	if err != nil {
		return DLQEntry{}, "", nil, fmt.Errorf("ingest: read dead letter %s: %w", eventID, err)
	}
	return e, hdrs, payload, nil
}

// markReplayed records a replay of a dead letter at now.
func (s *Service) markReplayed(ctx context.Context, eventID string, now time.Time) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE ingest_dlq SET replayed_at = ?, replays = replays + 1 WHERE event_id = ?`, store.Text(now), eventID)
		return err
	})
}
