// Package callbacks is the outbound callback service of callbacks/README.md: it consumes
// events from broker topics through event subscriptions, and delivers them to
// the configurations subscribed to their type, at authorized domains only,
// signed, with retries, a circuit breaker per configuration, an SSRF check at
// dial time and every attempt recorded as an execution.
//
// See README.md for the API, the execution states, the signature scheme and
// the settings.
package callbacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

// Sealer encrypts secrets at rest; *secretbox.Box implements it.
type Sealer interface {
	SealString(plaintext, associatedData string) (string, error)
	OpenString(ciphertext, associatedData string) (string, error)
}

// Service is the callback service.
type Service struct {
	db       *store.DB
	box      Sealer
	broker   broker.Broker
	log      *slog.Logger
	isOwner  func(*http.Request) bool
	settings Settings

	reg       *registry
	listeners listeners
	disp      *dispatcher
	ssrf      *ssrfPolicy
	client    *http.Client
	cursors   *httpx.Cursors

	// now is the clock of recorded times; rnd draws backoff jitter.
	now func() time.Time
	rnd func() float64
	// onRecorded, when set (tests), is called after each outcome is committed.
	onRecorded func(*outcome)

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	bg      sync.WaitGroup
}

// New builds the service from the daemon's dependencies. It reads the
// platform.callbacks section of the configuration; Start begins the work.
func New(deps daemon.Deps, box Sealer) (*Service, error) {
	if deps.DB == nil {
		return nil, errors.New("callbacks: no database")
	}
	if deps.Broker == nil {
		return nil, errors.New("callbacks: no broker")
	}
	if box == nil {
		return nil, errors.New("callbacks: no secret box")
	}
	settings, err := LoadSettings(deps.Config)
	if err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	isOwner := deps.IsOwner
	if isOwner == nil {
		isOwner = func(*http.Request) bool { return false } // fail closed
	}
	s := &Service{
		db: deps.DB, box: box, broker: deps.Broker, log: log, isOwner: isOwner, settings: settings,
		reg: newRegistry(), now: time.Now, rnd: rand.Float64,
	}
	// The data directory's key keeps cursors valid across restarts.
	if s.cursors, err = httpx.LoadCursors(deps.DataDir, "callbacks"); err != nil {
		return nil, fmt.Errorf("callbacks: %w", err)
	}
	s.ssrf = newSSRFPolicy(&s.settings)
	s.client = s.newHTTPClient()
	s.disp = newDispatcher(s)
	return s, nil
}

// Settings returns the effective service settings.
func (s *Service) Settings() Settings { return s.settings }

// Start loads domains, configurations and subscriptions, registers the
// subscriptions as broker listeners, starts the dispatcher and reschedules
// every attempt left open by the previous run.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("callbacks: Start called twice or after Close")
	}
	ds, err := listDomains(ctx, s.db.Reader())
	if err != nil {
		return err
	}
	cs, err := listConfigs(ctx, s.db.Reader())
	if err != nil {
		return err
	}
	for i := range cs {
		if err := s.openSecrets(&cs[i]); err != nil {
			return err
		}
	}
	subs, err := listSubs(ctx, s.db.Reader())
	if err != nil {
		return err
	}
	open, err := s.loadOpenJobs(ctx)
	if err != nil {
		return err
	}
	s.reg.setDomains(ds)
	s.reg.setConfigs(cs)
	s.reg.setSubs(subs)

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.disp.start(runCtx)
	s.disp.schedule(open...)
	s.listeners.start(runCtx)
	if err := s.listeners.sync(s); err != nil {
		cancel()
		s.disp.stop()
		return err
	}
	s.bg.Add(1)
	go s.pruneLoop(runCtx)
	s.started = true
	s.log.Info("callbacks: started", "configurations", len(cs), "subscriptions", len(subs), "pending", len(open))
	return nil
}

// Close stops the listeners, aborts running attempts (they are retried after
// the next start) and records what is known. The caller closes the database
// and the broker afterwards.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if !s.started {
		return nil
	}
	err := s.listeners.stop()
	s.cancel()
	s.disp.stop()
	s.bg.Wait()
	s.client.CloseIdleConnections()
	return err
}

// enqueue stores ev and one PENDING attempt per configuration, then
// schedules the attempts that are new.
func (s *Service) enqueue(ctx context.Context, ev Event, cfgs []*Configuration, trigger, subID, retryOf string) ([]*job, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	now := s.nowMs()
	jobs := make([]*job, 0, len(cfgs))
	for _, c := range cfgs {
		jobs = append(jobs, &job{
			execID: newID(), deliveryID: newID(), configID: c.ID, configName: c.Name, subscriptionID: subID,
			eventID: ev.ID, eventType: ev.Type, trigger: trigger, retryOf: retryOf,
			attempt: 1, maxAttempts: c.maxAttempts(&s.settings), due: now, payload: ev.Payload,
		})
	}
	fresh, err := s.persistJobs(ctx, ev, jobs)
	if err != nil {
		return nil, err
	}
	s.disp.schedule(fresh...)
	return fresh, nil
}

// Dispatch delivers one event to one configuration: the event type must be
// one the configuration subscribes to, the event id a UUID and the payload
// JSON. It returns the PENDING execution's id; the delivery runs like any
// other (retries, breaker, recording). Dispatching the same event to the same
// configuration twice answers a conflict.
func (s *Service) Dispatch(ctx context.Context, configID, eventType, eventID string, payload json.RawMessage) (string, error) {
	id, err := uuid.Parse(eventID)
	if err != nil {
		return "", errorf(EInvalid, "event id must be a UUID")
	}
	if msg := checkEventType(eventType); msg != "" || eventType[len(eventType)-1] == '*' {
		return "", errorf(EInvalid, "event type %q is not valid", eventType)
	}
	if !json.Valid(payload) {
		return "", errorf(EInvalid, "payload must be JSON")
	}
	c, why := s.reg.deliverable(configID)
	if c == nil {
		if s.reg.config(configID) == nil {
			return "", errNotFound("callback configuration " + configID)
		}
		return "", errorf(EConflict, "%s", why.Message)
	}
	if !matchAny(c.SubscribedEventTypes, eventType) {
		return "", errorf(EInvalid, "configuration %s is not subscribed to %s", configID, eventType)
	}
	jobs, err := s.enqueue(ctx, Event{ID: id.String(), Type: eventType, Payload: payload}, []*Configuration{c}, TriggerDispatch, "", "")
	if err != nil {
		return "", err
	}
	if len(jobs) == 0 {
		return "", errorf(EConflict, "event %s was already dispatched to configuration %s", id, configID)
	}
	return jobs[0].execID, nil
}

// disable sets a configuration DISABLED and publishes the operational event
// callback.configuration.disabled on the operations topic. It reports
// false when the status could not be written.
func (s *Service) disable(id, reason string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	changed, err := s.setStatus(ctx, id, StatusDisabled, reason)
	if err != nil {
		s.log.Error("callbacks: disabling configuration", "configuration", id, "err", err)
		return false
	}
	if !changed {
		return true
	}
	s.log.Warn("callbacks: configuration disabled", "configuration", id, "reason", reason)
	evID := uuid.NewString()
	body, _ := json.Marshal(map[string]any{
		"id": evID, "type": OpsConfigurationDisabled, "configurationId": id, "reason": reason,
		"occurredAt": s.nowMs().Format(time.RFC3339Nano),
	})
	msg := broker.Message{
		Topic: s.settings.OperationsTopic, Key: id, Value: body,
		Headers: map[string]string{"event-type": OpsConfigurationDisabled, "event-id": evID},
	}
	if err := s.broker.Publish(ctx, msg); err != nil {
		s.log.Error("callbacks: publishing operational event", "type", OpsConfigurationDisabled, "err", err)
	}
	return true
}

// OpsConfigurationDisabled is the type of the operational event published
// when the service disables a configuration.
const OpsConfigurationDisabled = "callback.configuration.disabled"

// pruneLoop applies the retention period hourly.
func (s *Service) pruneLoop(ctx context.Context) {
	defer s.bg.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cutoff := s.now().Add(-s.settings.Retention.D())
			if execs, events, err := s.pruneBefore(ctx, cutoff); err != nil {
				s.log.Error("callbacks: retention", "err", err)
			} else if execs+events > 0 {
				s.log.Info("callbacks: retention removed old records", "executions", execs, "events", events)
			}
		}
	}
}
