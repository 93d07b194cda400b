package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store/broker"
)

// OutboxTopic is the broker topic of run lifecycle events.
const OutboxTopic = "platform.runs"

// Lifecycle event types. A run's end is "platform.run." + its terminal
// status (succeeded, failed, cancelled, timed_out).
const (
	EventRunStarted       = "platform.run.started"
	EventRunPaused        = "platform.run.paused"
	EventRunResumed       = "platform.run.resumed"
	EventIncidentOpened   = "platform.incident.opened"
	EventIncidentResolved = "platform.incident.resolved"
)

// outboxBatch bounds the events one relay turn publishes.
const outboxBatch = 100

// LifecycleEvent is the value of an outbox message.
type LifecycleEvent struct {
	ID         string          `json:"id" format:"uuid"`
	Type       string          `json:"type"`
	OccurredAt time.Time       `json:"occurred_at"`
	Run        RunRef          `json:"run"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// RunRef identifies a run in a lifecycle event.
type RunRef struct {
	ID            string  `json:"id" format:"uuid"`
	TenantID      string  `json:"tenant_id"`
	ProjectID     string  `json:"project_id"`
	EnvironmentID string  `json:"environment_id"`
	ActivationID  string  `json:"activation_id"`
	Workflow      string  `json:"workflow"`
	Status        string  `json:"status"`
	Sequence      int64   `json:"accepted_sequence"`
	CallerRunID   *string `json:"caller_run_id,omitempty"`
}

// emitOutbox writes a lifecycle event of run r in tx.
func (s *Service) emitOutbox(ctx context.Context, tx *sql.Tx, r *runRow, typ string, data any) error {
	return s.emitTo(ctx, tx, r, typ, data, nil)
}

// emitTo is emitOutbox; with rows, the event is added to them instead
// (the cursor's flush writes it).
func (s *Service) emitTo(ctx context.Context, tx *sql.Tx, r *runRow, typ string, data any, rows *pendingRows) error {
	ev := LifecycleEvent{ID: s.newID(), Type: typ, OccurredAt: s.timestamp(), Run: RunRef{ID: r.ID, TenantID: r.Tenant,
		ProjectID: r.Project, EnvironmentID: r.Environment, ActivationID: r.ActivationID, Workflow: r.State.Workflow,
		Status: string(r.State.Status), Sequence: r.State.Seq, CallerRunID: r.CallerRunID}}
	if data != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("engine: encode %s: %w", typ, err)
		}
		ev.Data = raw
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("engine: encode %s: %w", typ, err)
	}
	entry := outboxEntry{id: ev.ID, typ: typ, payload: raw, at: ev.OccurredAt}
	s.outboxPending.Store(true)
	if rows != nil {
		rows.outbox = append(rows.outbox, entry)
		return nil
	}
	return insertOutbox(ctx, tx, r.ID, []outboxEntry{entry})
}

// relay publishes up to outboxBatch outbox events in order and deletes
// them. It answers whether it published a full batch (more may wait). A
// crash between the publication and the delete publishes them again with
// the same event ids.
func (s *Service) relay(ctx context.Context) (bool, error) {
	rows, err := readOutbox(ctx, s.db.Reader(), outboxBatch)
	if err != nil {
		return false, err
	}
	var msgs []broker.Message
	var last int64
	for _, o := range rows {
		last = o.id
		msgs = append(msgs, broker.Message{Topic: OutboxTopic, Key: o.run, Value: []byte(o.payload),
			Headers: map[string]string{"event-type": o.typ, "event-id": o.eventID, "content-type": "application/json"}})
	}
	if len(msgs) == 0 {
		return false, nil
	}
	if s.pub != nil {
		if err := s.pub.Publish(ctx, msgs...); err != nil {
			return false, fmt.Errorf("engine: publish run events: %w", err)
		}
	}
	if err := s.db.Write(ctx, func(tx *sql.Tx) error { return clearOutbox(ctx, tx, last) }); err != nil {
		return false, err
	}
	return len(msgs) == outboxBatch, nil
}
