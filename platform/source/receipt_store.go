package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

const receiptCols = `id, source_id, environment_id, event_kind, event_id, account_id, payload, payload_digest, status, reason, attempts,
	received_at, updated_at, next_attempt_at, dispatched_at, run_id, signal_id`

func scanReceipt(sc interface{ Scan(...any) error }) (receiptRow, error) {
	var r receiptRow
	var reason, run, sig sql.NullString
	var received, updated int64
	var next, dispatched sql.NullInt64
	if err := sc.Scan(&r.ID, &r.SourceID, &r.Environment, &r.EventKind, &r.EventID, &r.AccountID, &r.sealed, &r.digest, &r.Status, &reason,
		&r.Attempts, &received, &updated, &next, &dispatched, &run, &sig); err != nil {
		return r, err
	}
	r.Reason, r.RunID, r.SignalID = optString(reason), optString(run), optString(sig)
	r.ReceivedAt, r.UpdatedAt = store.FromMillis(received), store.FromMillis(updated)
	if next.Valid {
		r.NextAttemptAt = store.OptFromMillis(next.Int64)
	}
	if dispatched.Valid {
		r.DispatchedAt = store.OptFromMillis(dispatched.Int64)
	}
	return r, nil
}

// getReceipt reads a receipt by id (errNotFound).
func getReceipt(ctx context.Context, q store.Querier, id string) (receiptRow, error) {
	r, err := scanReceipt(q.QueryRowContext(ctx, `SELECT `+receiptCols+` FROM platform_provider_receipts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("source: read receipt: %w", err)
	}
	return r, nil
}

// receiptByIdentity reads the receipt of an event identity (errNotFound).
func receiptByIdentity(ctx context.Context, q store.Querier, source, kind, event string) (receiptRow, error) {
	r, err := scanReceipt(q.QueryRowContext(ctx, `SELECT `+receiptCols+` FROM platform_provider_receipts
		WHERE source_id = ? AND event_kind = ? AND event_id = ?`, source, kind, event))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("source: read receipt: %w", err)
	}
	return r, nil
}

func insertReceipt(ctx context.Context, tx *sql.Tx, r receiptRow) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform_provider_receipts(`+receiptCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, 0, ?, ?, ?, NULL, NULL, NULL)`,
		r.ID, r.SourceID, r.Environment, r.EventKind, r.EventID, r.AccountID, r.sealed, r.digest,
		store.Millis(r.ReceivedAt), store.Millis(r.ReceivedAt), store.Millis(r.ReceivedAt))
	if err != nil {
		return fmt.Errorf("source: insert receipt: %w", err)
	}
	return nil
}

// settle moves a pending receipt that made attempts attempts to status
// (attempts + 1), unless it changed meanwhile (false). next is the due
// time of a receipt left pending.
func settle(ctx context.Context, tx *sql.Tx, id string, attempts int, status, reason string, next *time.Time, run, signal *string, at time.Time) (bool, error) {
	var dispatched, due, why any
	if status == StatusDispatched {
		dispatched = store.Millis(at)
	}
	if next != nil {
		due = store.Millis(*next)
	}
	if reason != "" {
		why = reason
	}
	res, err := tx.ExecContext(ctx, `UPDATE platform_provider_receipts SET status = ?, reason = ?, attempts = attempts + 1, updated_at = ?,
		next_attempt_at = ?, dispatched_at = ?, run_id = ?, signal_id = ? WHERE id = ? AND status = 'pending' AND attempts = ?`,
		status, why, store.Millis(at), due, dispatched, run, signal, id, attempts)
	if err != nil {
		return false, fmt.Errorf("source: update receipt: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// requeue makes a blocked or failed receipt pending again, due at at;
// false when it is in another status.
func requeue(ctx context.Context, tx *sql.Tx, id string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_provider_receipts SET status = 'pending', reason = NULL, updated_at = ?, next_attempt_at = ?
		WHERE id = ? AND status IN ('blocked', 'failed')`, store.Millis(at), store.Millis(at), id)
	if err != nil {
		return false, fmt.Errorf("source: retry receipt: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// listReceipts lists the environment's receipts in id order after after,
// optionally of one source and in one status.
func listReceipts(ctx context.Context, q store.Querier, env, source, status, after string, limit int) ([]Receipt, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+receiptCols+` FROM platform_provider_receipts WHERE environment_id = ? AND id > ?
		AND (? = '' OR source_id = ?) AND (? = '' OR status = ?) ORDER BY id LIMIT ?`, env, after, source, source, status, status, limit)
	if err != nil {
		return nil, fmt.Errorf("source: list receipts: %w", err)
	}
	defer rows.Close()
	var out []Receipt
	for rows.Next() {
		r, err := scanReceipt(rows)
		if err != nil {
			return nil, fmt.Errorf("source: list receipts: %w", err)
		}
		out = append(out, r.Receipt)
	}
	return out, rows.Err()
}

// dueEnvironments answers up to limit environments with a due pending receipt.
func dueEnvironments(ctx context.Context, q store.Querier, now time.Time, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT environment_id FROM platform_provider_receipts
		WHERE status = 'pending' AND next_attempt_at <= ? LIMIT ?`, store.Millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("source: due environments: %w", err)
	}
	return collect(rows)
}

// dueReceipts answers up to limit due pending receipts of env, oldest due first.
func dueReceipts(ctx context.Context, q store.Querier, env string, now time.Time, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM platform_provider_receipts
		WHERE status = 'pending' AND next_attempt_at <= ? AND environment_id = ? ORDER BY next_attempt_at, id LIMIT ?`,
		store.Millis(now), env, limit)
	if err != nil {
		return nil, fmt.Errorf("source: due receipts: %w", err)
	}
	return collect(rows)
}

func collect(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
