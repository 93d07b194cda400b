package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/source/provider"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Runs is what sources need of the run engine (engine.Service implements
// it).
type Runs interface {
	StartActivation(ctx context.Context, st engine.LocalStart) (engine.RunInfo, error)
	InputSchema(ctx context.Context, sc auth.Scope, activation string) (json.RawMessage, error)
	SignalSchemas(ctx context.Context, sc auth.Scope, run, name string) ([]json.RawMessage, error)
	SignalLocal(ctx context.Context, sc auth.Scope, run, name, id string, payload json.RawMessage, commit func(tx *sql.Tx) error) (int64, error)
	Notify()
}

// Standing decides whether a principal currently holds a capability at a
// scope (identity.Standing): a source's owner must still hold its
// capabilities when its receipts are dispatched.
type Standing func(ctx context.Context, principal string, c auth.Capability, sc auth.Scope) (auth.Decision, error)

// Options configures New.
type Options struct {
	DB *store.DB
	// Box seals connection secrets and receipt payloads.
	Box      *secretbox.Box
	Runs     Runs
	Standing Standing
	Logger   *slog.Logger
	// Now is the clock (time.Now); the dispatcher reads it too.
	Now func() time.Time
	// NewID makes ids (a time-ordered random UUID when nil).
	NewID func() string
	// Packages are the provider packages (provider.Builtin() when nil).
	Packages *provider.Registry
}

// Service serves connections, provider sources, ingress and receipts.
type Service struct {
	db       *store.DB
	box      *secretbox.Box
	runs     Runs
	standing Standing
	log      *slog.Logger
	now      func() time.Time
	newID    func() string
	packages *provider.Registry
	// deadline bounds one dispatch (DispatchDeadline; tests shorten it).
	deadline time.Duration
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil || o.Box == nil || o.Runs == nil || o.Standing == nil {
		return nil, errors.New("source: Options.DB, Box, Runs and Standing are required")
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
	if o.Packages == nil {
		o.Packages = provider.Builtin()
	}
	return &Service{db: o.DB, box: o.Box, runs: o.Runs, standing: o.Standing, log: o.Logger, now: o.Now, newID: o.NewID,
		packages: o.Packages, deadline: DispatchDeadline}, nil
}

// timestamp is the clock's time at the stored precision (milliseconds).
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }
