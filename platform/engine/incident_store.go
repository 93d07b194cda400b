package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// indexIncidents records in tx the incidents that the effects of a step
// opened or closed.
func indexIncidents(ctx context.Context, tx *sql.Tx, run, env string, effects []kernel.Effect) error {
	for _, ef := range effects {
		if (ef.Kind != kernel.EffectOpenIncident && ef.Kind != kernel.EffectResolveIncident) || ef.Incident == nil {
			continue
		}
		inc := ef.Incident
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_incidents(incident_id, run_id, environment_id, status, opened_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT(incident_id) DO UPDATE SET status = excluded.status, opened_at = excluded.opened_at`,
			inc.ID, run, env, string(inc.Status), store.Millis(inc.OpenedAt)); err != nil {
			return fmt.Errorf("engine: index incident: %w", err)
		}
	}
	return nil
}

// incidentRef is an entry of the incident index.
type incidentRef struct {
	incident, run, status string
	opened                int64
}

// listIncidentRefs reads a page of f's environment's incident index.
func listIncidentRefs(ctx context.Context, q store.Querier, f IncidentFilter) ([]incidentRef, error) {
	var refs []incidentRef
	err := eachRow(ctx, q, "list incidents", `SELECT incident_id, run_id, status, opened_at FROM platform_run_incidents
		WHERE environment_id = ? AND incident_id > ? AND (? = '' OR status = ?) ORDER BY incident_id LIMIT ?`,
		[]any{f.Scope.Environment, f.After, f.Status, f.Status, f.Limit}, func(rows *sql.Rows) error {
			var x incidentRef
			if err := rows.Scan(&x.incident, &x.run, &x.status, &x.opened); err != nil {
				return err
			}
			refs = append(refs, x)
			return nil
		})
	return refs, err
}

// incidentRun answers the run of incident id of environment env.
func incidentRun(ctx context.Context, q store.Querier, env, id string) (string, error) {
	var runID string
	err := q.QueryRowContext(ctx, `SELECT run_id FROM platform_run_incidents WHERE incident_id = ? AND environment_id = ?`,
		id, env).Scan(&runID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("incident")
	} else if err != nil {
		return "", fmt.Errorf("engine: find incident: %w", err)
	}
	return runID, nil
}

// receipt is a stored resolution receipt.
type receipt struct {
	principal string
	hash      []byte
	revision  int64
	body      string
}

// receiptOf reads receipt id (found false when there is none).
func receiptOf(ctx context.Context, q store.Querier, id string) (receipt, bool, error) {
	var r receipt
	err := q.QueryRowContext(ctx, `SELECT principal_id, request_hash, revision, body FROM platform_incident_receipts WHERE receipt_id = ?`,
		id).Scan(&r.principal, &r.hash, &r.revision, &r.body)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("engine: read receipt: %w", err)
	}
	return r, true, nil
}

// storeReceipt records the committed answer of a resolution under its
// receipt id.
func storeReceipt(ctx context.Context, tx *sql.Tx, id, incident, principal string, hash []byte, revision int, body []byte, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform_incident_receipts(receipt_id, incident_id, principal_id, request_hash,
		revision, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, id, incident, principal, hash, revision, string(body),
		store.Millis(now)); err != nil {
		return fmt.Errorf("engine: store receipt: %w", err)
	}
	return nil
}
