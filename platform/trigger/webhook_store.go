package trigger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

const triggerCols = `id, tenant_id, project_id, environment_id, revision, status, name, activation_id, mapping, headers,
	tolerance_seconds, secret, principal_id, replaces, replaced_by, created_at, disabled_at, disabled_by`

func scanTrigger(sc interface{ Scan(...any) error }) (triggerRow, error) {
	var r triggerRow
	var headers string
	var replaces, replacedBy, disabledBy sql.NullString
	var created int64
	var disabled sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Tenant, &r.Project, &r.Environment, &r.Revision, &r.Status, &r.Name, &r.ActivationID, &r.Mapping,
		&headers, &r.Tolerance, &r.sealed, &r.PrincipalID, &replaces, &replacedBy, &created, &disabled, &disabledBy); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(headers), &r.Headers); err != nil {
		return r, fmt.Errorf("trigger: stored headers: %w", err)
	}
	r.URL = webhookPath(r.ID)
	r.CreatedAt = store.FromMillis(created)
	if replaces.Valid {
		r.Replaces = &replaces.String
	}
	if replacedBy.Valid {
		r.ReplacedBy = &replacedBy.String
	}
	if disabled.Valid {
		t := store.FromMillis(disabled.Int64)
		r.DisabledAt = &t
	}
	if disabledBy.Valid {
		r.DisabledBy = &disabledBy.String
	}
	return r, nil
}

// getTrigger reads a trigger by id in any environment (errNotFound).
func getTrigger(ctx context.Context, q store.Querier, id string) (triggerRow, error) {
	r, err := scanTrigger(q.QueryRowContext(ctx, `SELECT `+triggerCols+` FROM platform_triggers WHERE id = ?`, id))
	return r, store.OneRow(err, errNotFound, "trigger: read trigger")
}

func insertTrigger(ctx context.Context, tx *sql.Tx, r triggerRow) error {
	headers, err := json.Marshal(r.Headers)
	if err != nil {
		return fmt.Errorf("trigger: encode headers: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO platform_triggers(`+triggerCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, NULL)`,
		r.ID, r.Tenant, r.Project, r.Environment, r.Revision, r.Status, r.Name, r.ActivationID, r.Mapping, string(headers),
		r.Tolerance, r.sealed, r.PrincipalID, r.Replaces, store.Millis(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("trigger: insert trigger: %w", err)
	}
	return nil
}

// disableTrigger disables an enabled trigger at revision 1 (replacedBy:
// the trigger replacing it, or "").
func disableTrigger(ctx context.Context, tx *sql.Tx, id, by, replacedBy string, at time.Time) error {
	var rb any
	if replacedBy != "" {
		rb = replacedBy
	}
	res, err := tx.ExecContext(ctx, `UPDATE platform_triggers SET status = 'disabled', revision = 2, replaced_by = ?, disabled_at = ?, disabled_by = ?
		WHERE id = ? AND status = 'enabled' AND revision = 1`, rb, store.Millis(at), by, id)
	if err != nil {
		return fmt.Errorf("trigger: disable trigger: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("trigger: disable trigger %s: it changed concurrently (%v)", id, err)
	}
	return nil
}

// listTriggers lists the environment's triggers in id order after after.
func listTriggers(ctx context.Context, q store.Querier, env, after string, limit int) ([]Trigger, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+triggerCols+` FROM platform_triggers WHERE environment_id = ? AND id > ? ORDER BY id LIMIT ?`,
		env, after, limit)
	if err != nil {
		return nil, fmt.Errorf("trigger: list triggers: %w", err)
	}
	defer rows.Close()
	var out []Trigger
	for rows.Next() {
		r, err := scanTrigger(rows)
		if err != nil {
			return nil, fmt.Errorf("trigger: list triggers: %w", err)
		}
		out = append(out, r.Trigger)
	}
	return out, rows.Err()
}

// deliveryRun answers the run started for a delivery ("" when none).
func deliveryRun(ctx context.Context, q store.Querier, trigger, webhookID string) (string, error) {
	var run string
	err := q.QueryRowContext(ctx, `SELECT run_id FROM platform_trigger_deliveries WHERE trigger_id = ? AND webhook_id = ?`, trigger, webhookID).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("trigger: read delivery: %w", err)
	}
	return run, nil
}

// insertDelivery records an accepted delivery; false when the webhook-id
// was accepted already (by a concurrent request).
func insertDelivery(ctx context.Context, tx *sql.Tx, trigger, webhookID, run string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO platform_trigger_deliveries(trigger_id, webhook_id, run_id, received_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (trigger_id, webhook_id) DO NOTHING`, trigger, webhookID, run, store.Millis(at))
	if err != nil {
		return false, fmt.Errorf("trigger: record delivery: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
