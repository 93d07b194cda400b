package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// dedupeStore is the idempotency store: the delivery ids each provider has
// sent within the window. It lives in SQLite rather than bbolt because bbolt
// belongs to the broker and the CLI-facing reads want SQL; SQLite's group
// commit makes a claim durable at the cost of a shared fsync. One store is
// shared by every consumer of the process.
type dedupeStore struct {
	db     *store.DB
	window time.Duration
}

// claimOrFirst claims provider's deliveryID for eventID and returns "", or
// returns the event that holds an unexpired claim on it: eventID is then a
// duplicate.
func (d *dedupeStore) claimOrFirst(ctx context.Context, provider, deliveryID, eventID string, now time.Time) (string, error) {
	var first string
	err := d.db.Write(ctx, func(tx *sql.Tx) error {
		first = ""
		ok, err := d.claim(tx, provider, deliveryID, eventID, now)
		if err != nil || ok {
			return err
		}
		err = tx.QueryRow(`SELECT event_id FROM ingest_idempotency WHERE provider = ? AND delivery_id = ?`, provider, deliveryID).Scan(&first)
		if err != nil {
			return fmt.Errorf("ingest: idempotency lookup: %w", err)
		}
		return nil
	})
	return first, err
}

// claim records deliveryID for eventID inside tx. It reports false when
// another event holds an unexpired claim: the delivery is a duplicate.
// A claim by the same event (a redelivery) succeeds again.
func (d *dedupeStore) claim(tx *sql.Tx, provider, deliveryID, eventID string, now time.Time) (bool, error) {
	res, err := tx.Exec(`INSERT INTO ingest_idempotency (provider, delivery_id, event_id, seen_at, expires_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (provider, delivery_id) DO UPDATE SET
			event_id = excluded.event_id, seen_at = excluded.seen_at, expires_at = excluded.expires_at
		WHERE ingest_idempotency.expires_at <= ? OR ingest_idempotency.event_id = excluded.event_id`,
		provider, deliveryID, eventID, store.Text(now), store.Millis(now.Add(d.window)), store.Millis(now))
	if err != nil {
		return false, fmt.Errorf("ingest: idempotency claim: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("ingest: idempotency claim: %w", err)
	}
	return n == 1, nil
}

// purge deletes expired claims and event records older than retention.
func (d *dedupeStore) purge(ctx context.Context, now time.Time, retention time.Duration) error {
	return d.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM ingest_idempotency WHERE expires_at <= ?`, store.Millis(now)); err != nil {
			return fmt.Errorf("ingest: purge idempotency: %w", err)
		}
		if _, err := tx.Exec(`DELETE FROM ingest_events WHERE processed_at < ?`, store.Text(now.Add(-retention))); err != nil {
			return fmt.Errorf("ingest: purge events: %w", err)
		}
		return nil
	})
}
