package factory

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/store/broker"
)

// Topic is the broker topic of run and task state changes, which the
// callback service can deliver (docs/factory-api.md, "Events").
const Topic = "factory.runs"

// Event types published on Topic.
const (
	EventRunState  = "factory.run.state_changed"
	EventTaskState = "factory.task.state_changed"
)

// event is the payload of a published message.
type event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	RunID      string    `json:"runId"`
	Mode       string    `json:"mode"`
	Repo       string    `json:"repo"`
	State      string    `json:"state"` // the run's state, or the task's
	Task       int       `json:"task,omitempty"`
	TaskKind   string    `json:"taskKind,omitempty"`
	Error      *RunError `json:"error,omitempty"`
	OccurredAt time.Time `json:"occurredAt"`
}

func runEvent(r *Run, state string, rerr *RunError, now time.Time) event {
	return event{ID: uuid.NewString(), Type: EventRunState, RunID: r.ID, Mode: r.Mode, Repo: r.Repo, State: state, Error: rerr, OccurredAt: now.UTC()}
}

func taskEvent(r *Run, t Task, state string, now time.Time) event {
	return event{ID: uuid.NewString(), Type: EventTaskState, RunID: r.ID, Mode: r.Mode, Repo: r.Repo, State: state, Task: t.Index, TaskKind: t.Kind, OccurredAt: now.UTC()}
}

const outboxBatch = 100

// publishLoop moves queued events to the broker: events are written in the
// transaction of the state change (outbox), so none is lost across a crash;
// delivery is at least once.
func (s *Service) publishLoop(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		for {
			more, err := s.publishBatch(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("factory: publishing events", "err", err)
				break
			}
			if !more {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.outboxWake:
		case <-t.C:
		}
	}
}

func (s *Service) publishBatch(ctx context.Context) (bool, error) {
	rows, err := readOutbox(ctx, s.db.Reader(), outboxBatch)
	if err != nil || len(rows) == 0 {
		return false, err
	}
	msgs := make([]broker.Message, len(rows))
	for i, r := range rows {
		msgs[i] = broker.Message{Topic: Topic, Key: r.runID, Value: []byte(r.payload),
			Headers: map[string]string{"event-type": r.typ, "event-id": r.eventID, "content-type": "application/json"}}
	}
	if s.pub != nil {
		if err := s.pub.Publish(ctx, msgs...); err != nil {
			return false, err
		}
	}
	last := rows[len(rows)-1].id
	if err := s.db.Write(ctx, func(tx *sql.Tx) error { return deleteOutbox(ctx, tx, last) }); err != nil {
		return false, err
	}
	return len(rows) == outboxBatch, nil
}

func (s *Service) pokeOutbox() {
	select {
	case s.outboxWake <- struct{}{}:
	default:
	}
}
