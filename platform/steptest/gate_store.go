package steptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// Item statuses.
const (
	itemPending   = "pending"
	itemConfirmed = "confirmed"
	itemDeclined  = "declined"
)

// itemRow is a stored answerable item of a step test.
type itemRow struct {
	ID, StepTestID, Kind, NodeID, InstanceKey, TaskID string
	Detail                                            itemDetail
	Status                                            string
	CreatedAt                                         time.Time
	AnsweredAt                                        *time.Time
	AnsweredBy                                        string
}

// itemDetail is what the pending list shows of an item besides its kind
// and keys.
type itemDetail struct {
	Tool       string          `json:"tool,omitempty"`
	SideEffect string          `json:"side_effect,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
}

const itemCols = `id, step_test_id, kind, node_id, instance_key, task_id, detail, status, created_at, answered_at, answered_by`

func scanItem(sc interface{ Scan(...any) error }) (itemRow, error) {
	var r itemRow
	var detail string
	var created int64
	var answered sql.NullInt64
	var by sql.NullString
	if err := sc.Scan(&r.ID, &r.StepTestID, &r.Kind, &r.NodeID, &r.InstanceKey, &r.TaskID, &detail, &r.Status, &created, &answered, &by); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(detail), &r.Detail); err != nil {
		return r, fmt.Errorf("steptest: stored item detail: %w", err)
	}
	r.CreatedAt, r.AnsweredBy = store.FromMillis(created), by.String
	if answered.Valid {
		at := store.FromMillis(answered.Int64)
		r.AnsweredAt = &at
	}
	return r, nil
}

// insertItem stores r as pending under the first free instance key that
// key makes of the number of the step test's items of r's kind, and
// answers that key.
func insertItem(ctx context.Context, tx *sql.Tx, r itemRow, key func(n int) string) (string, error) {
	detail, err := json.Marshal(r.Detail)
	if err != nil {
		return "", fmt.Errorf("steptest: encode item detail: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM platform_step_test_items WHERE step_test_id = ? AND kind = ?`,
		r.StepTestID, r.Kind).Scan(&n); err != nil {
		return "", fmt.Errorf("steptest: count items: %w", err)
	}
	for i := n; i < n+maxItemKeyTries; i++ {
		k := key(i)
		res, err := tx.ExecContext(ctx, `INSERT INTO platform_step_test_items(`+itemCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
			ON CONFLICT (step_test_id, instance_key) DO NOTHING`,
			r.ID, r.StepTestID, r.Kind, r.NodeID, k, r.TaskID, string(detail), r.Status, store.Millis(r.CreatedAt))
		if err != nil {
			return "", fmt.Errorf("steptest: insert item: %w", err)
		}
		if k1, _ := res.RowsAffected(); k1 == 1 {
			return k, nil
		}
	}
	return "", fmt.Errorf("steptest: no free instance key for a %s item", r.Kind)
}

// maxItemKeyTries bounds the keys insertItem tries (taken keys are only
// ever those of earlier items of the same kind).
const maxItemKeyTries = 1000

// getItem reads the item of a step test with instance key (errNotFound
// when there is none).
func getItem(ctx context.Context, q store.Querier, stepTestID, key string) (itemRow, error) {
	r, err := scanItem(q.QueryRowContext(ctx, `SELECT `+itemCols+` FROM platform_step_test_items WHERE step_test_id = ? AND instance_key = ?`,
		stepTestID, key))
	return r, store.OneRow(err, errNotFound, "steptest: read item")
}

// itemByID reads an item by id.
func itemByID(ctx context.Context, q store.Querier, id string) (itemRow, error) {
	r, err := scanItem(q.QueryRowContext(ctx, `SELECT `+itemCols+` FROM platform_step_test_items WHERE id = ?`, id))
	return r, store.OneRow(err, errNotFound, "steptest: read item")
}

// reviewOf reads the review item of an agent task (errNotFound when none).
func reviewOf(ctx context.Context, q store.Querier, stepTestID, taskID string) (itemRow, error) {
	r, err := scanItem(q.QueryRowContext(ctx, `SELECT `+itemCols+` FROM platform_step_test_items
		WHERE step_test_id = ? AND kind = 'review' AND task_id = ?`, stepTestID, taskID))
	return r, store.OneRow(err, errNotFound, "steptest: read review item")
}

// pendingItems lists a step test's pending items in creation order.
func pendingItems(ctx context.Context, q store.Querier, stepTestID string) ([]itemRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+itemCols+` FROM platform_step_test_items WHERE step_test_id = ? AND status = 'pending'
		ORDER BY created_at, id`, stepTestID)
	if err != nil {
		return nil, fmt.Errorf("steptest: list items: %w", err)
	}
	defer rows.Close()
	var out []itemRow
	for rows.Next() {
		r, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("steptest: list items: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// declinedReview reports whether a step test has a declined review item.
func declinedReview(ctx context.Context, q store.Querier, stepTestID string) (itemRow, bool, error) {
	r, err := scanItem(q.QueryRowContext(ctx, `SELECT `+itemCols+` FROM platform_step_test_items
		WHERE step_test_id = ? AND kind = 'review' AND status = 'declined' ORDER BY answered_at LIMIT 1`, stepTestID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("steptest: read review items: %w", err)
	}
	return r, true, nil
}

// answerItem records the answer of a pending item once: it reports false
// when the item was no longer pending.
func answerItem(ctx context.Context, tx *sql.Tx, id, status, by string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE platform_step_test_items SET status = ?, answered_at = ?, answered_by = ?
		WHERE id = ? AND status = 'pending'`, status, store.Millis(at), by, id)
	if err != nil {
		return false, fmt.Errorf("steptest: answer item: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// insertAnswered stores an item answered at once (a person item answered
// through the step test): false when the key is taken.
func insertAnswered(ctx context.Context, tx *sql.Tx, r itemRow) (bool, error) {
	detail, err := json.Marshal(r.Detail)
	if err != nil {
		return false, fmt.Errorf("steptest: encode item detail: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO platform_step_test_items(`+itemCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (step_test_id, instance_key) DO NOTHING`,
		r.ID, r.StepTestID, r.Kind, r.NodeID, r.InstanceKey, r.TaskID, string(detail), r.Status, store.Millis(r.CreatedAt),
		store.Millis(*r.AnsweredAt), r.AnsweredBy)
	if err != nil {
		return false, fmt.Errorf("steptest: insert item: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// stepByRun reads the step test of a run (errNotFound: the run is not a
// step test's).
func stepByRun(ctx context.Context, q store.Querier, runID string) (stepRow, error) {
	r, err := scanStep(q.QueryRowContext(ctx, `SELECT `+stepCols+` FROM platform_step_tests WHERE run_id = ?`, runID))
	return r, store.OneRow(err, errNotFound, "steptest: read step test of run")
}

// stepByID reads a step test by id whoever created it.
func stepByID(ctx context.Context, q store.Querier, id string) (stepRow, error) {
	r, err := scanStep(q.QueryRowContext(ctx, `SELECT `+stepCols+` FROM platform_step_tests WHERE id = ?`, id))
	return r, store.OneRow(err, errNotFound, "steptest: read step test")
}
