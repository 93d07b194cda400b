package activation

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// Options configures New.
type Options struct {
	DB     *store.DB
	Logger *slog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
	// NewID makes activation ids (a time-ordered random UUID when nil).
	NewID func() string
}

// Service serves the activations of environments.
type Service struct {
	db    *store.DB
	log   *slog.Logger
	now   func() time.Time
	newID func() string
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil {
		return nil, errors.New("activation: Options.DB is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = newUUID
	}
	return &Service{db: o.DB, log: o.Logger, now: o.Now, newID: o.NewID}, nil
}

// requireEnvironment answers 404 unless the path's environment exists in
// its project and tenant.
func requireEnvironment(ctx context.Context, q store.Querier, sc auth.Scope) error {
	ok, err := environmentExists(ctx, q, sc.Tenant, sc.Project, sc.Environment)
	if err != nil {
		return err
	}
	if !ok {
		return api.NotFound("environment")
	}
	return nil
}

// activationPath is the canonical path of an activation.
func activationPath(sc auth.Scope, id string) string {
	return api.Prefix + "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + "/activations/" + id
}

// timestamp is the clock's time at the stored precision (milliseconds).
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }
