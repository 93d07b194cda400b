package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Runs is what triggers need of the run engine (engine.Service implements
// it): a start of one activation in process, and the check of such a
// start when a schedule is saved.
type Runs interface {
	StartActivation(ctx context.Context, st engine.LocalStart) (engine.RunInfo, error)
	CheckStart(ctx context.Context, sc auth.Scope, activation string, input json.RawMessage) error
	// RedactInput hides the values the workflow marks secret.
	RedactInput(ctx context.Context, sc auth.Scope, activation string, input json.RawMessage) (json.RawMessage, error)
}

// Standing decides whether a principal currently holds a capability at a
// scope (identity.Standing on the reader pool): a schedule's execution
// principal must still hold run.start when it fires.
type Standing func(ctx context.Context, principal string, c auth.Capability, sc auth.Scope) (auth.Decision, error)

// Options configures New.
type Options struct {
	DB *store.DB
	// Box seals the signing secrets of webhook triggers.
	Box      *secretbox.Box
	Runs     Runs
	Standing Standing
	Logger   *slog.Logger
	// Now is the clock (time.Now); the scheduler phase reads it too.
	Now func() time.Time
	// NewID makes schedule ids (a time-ordered random UUID when nil).
	NewID func() string
}

// Service serves schedules.
type Service struct {
	db       *store.DB
	box      *secretbox.Box
	runs     Runs
	standing Standing
	log      *slog.Logger
	now      func() time.Time
	newID    func() string

	// keys caches the opened signing keys of triggers by id (a trigger's
	// secret never changes; disabled ones are forgotten).
	mu   sync.Mutex
	keys map[string][]byte
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil || o.Box == nil || o.Runs == nil || o.Standing == nil {
		return nil, errors.New("trigger: Options.DB, Box, Runs and Standing are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	return &Service{db: o.DB, box: o.Box, runs: o.Runs, standing: o.Standing, log: o.Logger, now: o.Now, newID: o.NewID,
		keys: map[string][]byte{}}, nil
}

// timestamp is the clock's time at the stored precision (milliseconds).
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// shown is sch as the routes show it: the input's secret values (as the
// workflow marks them) redacted, like a run's.
func (s *Service) shown(ctx context.Context, sc auth.Scope, sch Schedule) (Schedule, error) {
	in, err := s.runs.RedactInput(ctx, sc, sch.ActivationID, sch.Input)
	if err != nil {
		return Schedule{}, err
	}
	sch.Input = in
	return sch, nil
}

// maxCachedKeys bounds the key cache (cleared when full).
const maxCachedKeys = 10000

// key answers the HMAC key of an enabled trigger, opening its sealed
// secret once.
func (s *Service) key(t triggerRow) ([]byte, error) {
	s.mu.Lock()
	k, ok := s.keys[t.ID]
	s.mu.Unlock()
	if ok {
		return k, nil
	}
	secret, err := s.box.OpenString(t.sealed, t.ID)
	if err != nil {
		return nil, fmt.Errorf("trigger: open the secret of %s: %w", t.ID, err)
	}
	if k, err = secretKey(secret); err != nil {
		return nil, fmt.Errorf("trigger: the secret of %s: %w", t.ID, err)
	}
	s.mu.Lock()
	if len(s.keys) >= maxCachedKeys {
		clear(s.keys)
	}
	s.keys[t.ID] = k
	s.mu.Unlock()
	return k, nil
}

// forget drops a disabled trigger's cached key.
func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.keys, id)
	s.mu.Unlock()
}

// inputs seals and opens schedule inputs with the secret box.
func (s *Service) inputs() inputs { return inputs{s.box} }

// ErrNoTrigger: the environment has no trigger with that id.
var ErrNoTrigger = errors.New("trigger: no such trigger in the environment")

// SigningKey answers the HMAC key of trigger id of environment env
// (enabled or not): a test listen route may reuse a trigger's secret so
// that the trigger's sender can sign test deliveries unchanged.
func (s *Service) SigningKey(ctx context.Context, env, id string) ([]byte, error) {
	t, err := getTrigger(ctx, s.db.Reader(), id)
	if errors.Is(err, errNotFound) || (err == nil && t.Environment != env) {
		return nil, ErrNoTrigger
	}
	if err != nil {
		return nil, err
	}
	return s.key(t)
}
