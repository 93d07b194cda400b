package steptest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Runs is what step tests need of the run engine (engine.Service).
type Runs interface {
	StartActivation(ctx context.Context, st engine.LocalStart) (engine.RunInfo, error)
	ReadRun(ctx context.Context, id string) (engine.RunInfo, error)
	CancelRun(ctx context.Context, sc auth.Scope, runID, reason string) error
	PendingPeople(ctx context.Context, env, runID string) ([]engine.PendingPerson, error)
	CompleteHuman(ctx context.Context, sc auth.Scope, id, by, decision string) error
	CheckToolOutput(ctx context.Context, project, versionID, node, tool string, output json.RawMessage) error
}

// Keys answers the signing key of a webhook trigger of an environment
// (trigger.Service.SigningKey), for listen routes that reuse its secret.
type Keys func(ctx context.Context, env, id string) ([]byte, error)

// Options configures New.
type Options struct {
	DB   *store.DB
	Box  *secretbox.Box
	Runs Runs
	Keys Keys
	// Log is the logger (discarded when nil).
	Logger *slog.Logger
	// Now is the clock (time.Now): expiries and time limits follow it.
	Now func() time.Time
	// NewID makes ids (a time-ordered random UUID when nil).
	NewID func() string
}

// Service serves test policies, step tests and draft test activations.
type Service struct {
	db    *store.DB
	box   *secretbox.Box
	runs  Runs
	keys  Keys
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	waits *waiters
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil || o.Box == nil || o.Runs == nil || o.Keys == nil {
		return nil, errors.New("steptest: Options.DB, Box, Runs and Keys are required")
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
	return &Service{db: o.DB, box: o.Box, runs: o.Runs, keys: o.Keys, log: o.Logger, now: o.Now, newID: o.NewID, waits: newWaiters()}, nil
}

// timestamp is the clock's time at the stored precision (milliseconds).
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// Register adds the routes.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	for _, rt := range append(append(s.policyRoutes(), s.stepTestRoutes()...), s.activationRoutes()...) {
		a.Handle(r, rt)
	}
}

// envBase is E relative to api.Prefix.
const envBase = "/tenants/{tenant}/projects/{project}/environments/{environment}"

// Problem codes (docs/platform-api.md, "Errors").
const (
	CodeDisabled       = "PF-STEPTEST-DISABLED"
	CodeConfirm        = "PF-STEPTEST-CONFIRM"
	CodeBusy           = "PF-STEPTEST-BUSY"
	CodeRevision       = "PF-REVISION"
	CodeDraft          = "PF-STEPTEST-DRAFT"
	CodeStep           = "PF-STEPTEST-STEP"
	CodeKind           = "PF-STEPTEST-KIND"
	CodeTools          = "PF-STEPTEST-TOOLS"
	CodeAnswer         = "PF-STEPTEST-ANSWER"
	CodeAnswered       = "PF-STEPTEST-ANSWERED"
	CodeEnded          = "PF-STEPTEST-ENDED"
	CodeExpired        = "PF-TESTACTIVATION-EXPIRED"
	CodeActivationRef  = "PF-TESTACTIVATION-SECRET"
	CodeActivationDraf = "PF-TESTACTIVATION-DRAFT"
)

// refused is a coded problem.
func refused(code, format string, args ...any) *api.Error {
	return api.Errorf(code, format, args...)
}

// at422 is code (a 422 one) with a diagnostic at path.
func at422(code, path, format string, args ...any) *api.Error {
	e := api.Errorf(code, format, args...)
	e.Diagnostics = []api.Diagnostic{{Code: "invalid", Path: path, Message: e.Message}}
	return e
}

// object reports whether raw is a JSON object (absent counts as {}).
func object(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &m) == nil && m != nil
}
