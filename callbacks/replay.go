package callbacks

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// RetryRequest is the body of POST /callback-executions/retry.
type RetryRequest struct {
	ExecutionID string `json:"executionId" schema:"format=uuid"`
}

// ReplayRequest is the body of POST /callback-executions/replay: events
// received in [since, until] are delivered again, as new deliveries, to the
// active configurations subscribed to their type (or to one configuration).
type ReplayRequest struct {
	Since           string `json:"since" schema:"format=date-time" doc:"RFC 3339"`
	Until           string `json:"until,omitempty" schema:"format=date-time" doc:"RFC 3339; default now"`
	ConfigurationID string `json:"configurationId,omitempty" doc:"replay to this configuration only"`
	Limit           *int   `json:"limit,omitempty" schema:"minimum=1,maximum=10000" doc:"most events replayed, oldest first; default 1000"`
}

// ReplayResult says what a replay scheduled.
type ReplayResult struct {
	Events     int  `json:"events" doc:"events found in the window"`
	Deliveries int  `json:"deliveries" doc:"new deliveries scheduled"`
	Truncated  bool `json:"truncated" doc:"more events matched than limit; replay again from the last one"`
	// LastReceivedAt is when the last replayed event was received.
	LastReceivedAt *time.Time `json:"lastReceivedAt"`
}

const (
	defaultReplayLimit = 1000
	maxReplayLimit     = 10_000
)

// Retry makes a finished execution's delivery again, as a new delivery
// (attempt 1, trigger MANUAL_RETRY, retryOf set) with a full budget of
// attempts: POST /callback-executions/retry (callbacks/README.md). It
// reads the execution and the event's payload (execution_store.go) and
// stores the new attempt with the event (persistJobs).
func (s *Service) Retry(ctx context.Context, r RetryRequest) (Execution, error) {
	id, ok := canonicalID(r.ExecutionID)
	if !ok {
		return Execution{}, &Error{Code: EInvalid, Message: "executionId must be a UUID", Fields: []FieldError{{Field: "executionId", Message: "must be a UUID"}}}
	}
	ex, err := s.execution(ctx, id)
	if err != nil {
		return Execution{}, err
	}
	if isOpen(ex.State) {
		return Execution{}, errorf(EConflict, "execution %s is still %s; it will be attempted at %s", id, ex.State, ex.ScheduledAt.Format(time.RFC3339))
	}
	c, err := s.deliverableForAPI(ex.ConfigurationID)
	if err != nil {
		return Execution{}, err
	}
	payload, err := s.eventPayload(ctx, ex.EventID)
	if err != nil {
		return Execution{}, err
	}
	ev := Event{ID: ex.EventID, Type: ex.EventType, Payload: payload}
	jobs, err := s.enqueue(ctx, ev, []*Configuration{c}, TriggerManualRetry, "", ex.ID)
	if err != nil {
		return Execution{}, err
	}
	if len(jobs) == 0 {
		return Execution{}, fmt.Errorf("callbacks: retry of %s was not stored", id)
	}
	return s.execution(ctx, jobs[0].execID)
}

// deliverableForAPI explains, as an API error, why a configuration cannot
// take a delivery now.
func (s *Service) deliverableForAPI(id string) (*Configuration, error) {
	c, why := s.reg.deliverable(id)
	if c != nil {
		return c, nil
	}
	switch why.Code {
	case ErrCodeDeleted:
		return nil, errorf(EConflict, "configuration %s was deleted", id)
	case ErrCodeDomain:
		return nil, errorf(EDomainNotAuthorized, "%s", why.Message)
	default:
		return nil, errorf(EConflict, "%s", why.Message)
	}
}

func (r ReplayRequest) validate(now time.Time) (since, until time.Time, limit int, err error) {
	var v validation
	until = now
	since, perr := time.Parse(time.RFC3339Nano, r.Since)
	v.check(perr == nil, "since", "is required, as an RFC 3339 time such as 2025-01-02T15:04:05Z")
	if r.Until != "" {
		u, perr := time.Parse(time.RFC3339Nano, r.Until)
		v.check(perr == nil, "until", "must be an RFC 3339 time")
		if perr == nil {
			until = u
		}
	}
	v.check(perr != nil || !until.Before(since), "until", "must not be before since")
	limit = defaultReplayLimit
	if r.Limit != nil {
		limit = *r.Limit
		v.check(limit >= 1 && limit <= maxReplayLimit, "limit", "must be 1 to %d, got %d", maxReplayLimit, limit)
	}
	if r.ConfigurationID != "" {
		_, ok := canonicalID(r.ConfigurationID)
		v.check(ok, "configurationId", "must be a UUID")
	}
	return since, until, limit, v.err()
}

// Replay delivers the events received in a time window again.
func (s *Service) Replay(ctx context.Context, r ReplayRequest) (ReplayResult, error) {
	var res ReplayResult
	since, until, limit, err := r.validate(s.now())
	if err != nil {
		return res, err
	}
	var only *Configuration
	if r.ConfigurationID != "" {
		id, _ := canonicalID(r.ConfigurationID)
		if s.reg.config(id) == nil {
			return res, errNotFound("callback configuration " + id)
		}
		if only, err = s.deliverableForAPI(id); err != nil {
			return res, err
		}
	}
	events, seqs, last, truncated, err := s.eventsReceived(ctx, since, until, limit)
	if err != nil {
		return res, fmt.Errorf("callbacks: replay: %w", err)
	}
	res.Truncated = truncated
	res.Events = len(events)
	if len(events) > 0 {
		res.LastReceivedAt = store.OptFromMillis(last)
	}
	var jobs []*job
	now := s.nowMs()
	for i, ev := range events {
		targets := s.reg.matching(ev.Type)
		if only != nil {
			targets = nil
			if matchAny(only.SubscribedEventTypes, ev.Type) {
				targets = []*Configuration{only}
			}
		}
		for _, c := range targets {
			jobs = append(jobs, &job{
				execID: newID(), deliveryID: newID(), configID: c.ID, configName: c.Name,
				eventSeq: seqs[i], eventID: ev.ID, eventType: ev.Type, trigger: TriggerReplay,
				attempt: 1, maxAttempts: c.maxAttempts(&s.settings), due: now, payload: ev.Payload,
			})
		}
	}
	if len(jobs) == 0 {
		return res, nil
	}
	if err := s.insertJobs(ctx, jobs, now); err != nil {
		return res, fmt.Errorf("callbacks: replay: %w", err)
	}
	res.Deliveries = len(jobs)
	s.disp.schedule(jobs...)
	return res, nil
}
