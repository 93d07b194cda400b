package engine

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// insertOutbox appends lifecycle events of run to the outbox in tx,
// outboxRowsPerInsert rows a statement.
func insertOutbox(ctx context.Context, tx *sql.Tx, run string, entries []outboxEntry) error {
	for len(entries) > 0 {
		n := min(len(entries), outboxRowsPerInsert)
		args := make([]any, 0, 5*n)
		for _, o := range entries[:n] {
			args = append(args, o.id, o.typ, run, string(o.payload), store.Millis(o.at))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_outbox(event_id, event_type, run_id, payload, created_at) VALUES `+
			rowsText(`(?, ?, ?, ?, ?)`, n), args...); err != nil {
			return fmt.Errorf("engine: write outbox: %w", err)
		}
		entries = entries[n:]
	}
	return nil
}

// outboxEntry is a lifecycle event to write.
type outboxEntry struct {
	id, typ string
	payload []byte
	at      time.Time
}

// outboxRow is a stored outbox event.
type outboxRow struct {
	id                         int64
	eventID, typ, run, payload string
}

// readOutbox reads the oldest limit outbox events in order.
func readOutbox(ctx context.Context, q store.Querier, limit int) ([]outboxRow, error) {
	var out []outboxRow
	err := eachRow(ctx, q, "read outbox", `SELECT id, event_id, event_type, run_id, payload FROM platform_outbox ORDER BY id LIMIT ?`,
		[]any{limit}, func(rows *sql.Rows) error {
			var o outboxRow
			if err := rows.Scan(&o.id, &o.eventID, &o.typ, &o.run, &o.payload); err != nil {
				return err
			}
			out = append(out, o)
			return nil
		})
	return out, err
}

// clearOutbox deletes the outbox events up to id (published).
func clearOutbox(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_outbox WHERE id <= ?`, id); err != nil {
		return fmt.Errorf("engine: clear outbox: %w", err)
	}
	return nil
}
