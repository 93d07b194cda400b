// Package platform is the workflow platform subsystem of the daemon (spec
// 2). This file wires its foundation: configuration, the built-in identity
// provider, token verification for every configured provider, the shared
// API rules (platform/api), identity and provisioning routes
// (platform/identity), definitions, catalog and compiler routes
// (platform/catalog), environment activations (platform/activation), runs
// (platform/engine), schedules and signed webhook triggers
// (platform/trigger, whose "due schedules" phase runs in the engine's
// loop), test policies, step tests and draft test activations
// (platform/steptest), compatibility verdicts (platform/compat),
// connections, provider sources and receipts (platform/source, whose "due
// provider receipts" phase runs in the engine's loop), the access audit
// and the local workspace bootstrap.
//
// Authentication on the services listener: every platform route except
// GET /api/v1/client-configuration, /docs (when enabled) and the health
// probes needs a bearer token of a configured provider linked to an
// enabled principal. The /admin routes also accept the daemon owner token,
// which authenticates the built-in system principal: it holds platform
// administration only (no business access), so the owner can provision
// tenants and bootstrap their administrators, including the local
// operator, without ever holding business capabilities itself.
package platform

import (
	"context"
	"crypto/rsa"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/activation"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/compat"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/file"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/sim"
	"github.com/agentbridge/bridge/platform/source"
	"github.com/agentbridge/bridge/platform/steptest"
	"github.com/agentbridge/bridge/platform/trigger"
	"github.com/agentbridge/bridge/store"
)

// Options tune the platform for tests.
type Options struct {
	// SigningKey is used as the built-in provider's key when the data
	// directory has none yet (tests skip RSA key generation with it).
	SigningKey *rsa.PrivateKey
	// Now is the clock (time.Now).
	Now func() time.Time
	// SimLimits replace the simulator's documented limits (tests).
	SimLimits *sim.Limits
}

// IdPPath is where the built-in identity provider is mounted on the
// services listener; its issuer is <services URL>/idp.
const IdPPath = "/idp"

// APIVersion is the documented API package version.
const APIVersion = "0.1.0a14"

// Service is the platform subsystem.
type Service struct {
	cfg      Config
	db       *store.DB
	log      *slog.Logger
	now      func() time.Time
	api      *api.API
	identity *identity.Service
	catalog  *catalog.Service
	activate *activation.Service
	engine   *engine.Service
	trigger  *trigger.Service
	tests    *steptest.Service
	sim      *sim.Service
	files    *file.Service
	source   *source.Service
	compat   *compat.Service
	audit    *identity.AuditLog
	idp      *auth.IdP
	verifier *auth.Verifier
	local    identity.LocalWorkspace

	wg sync.WaitGroup
}

// Factory builds the platform for the daemon (see package wire).
func Factory(o Options) daemon.Factory {
	return func(d daemon.Deps) (daemon.Subsystem, error) { return New(context.Background(), d, o) }
}

// New builds the platform: it reads its configuration, loads (or creates)
// its sealed secrets, bootstraps the local workspace and prepares the
// routes.
func New(ctx context.Context, d daemon.Deps, o Options) (*Service, error) {
	cfg, err := LoadConfig(d.Config)
	if err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("subsystem", "platform")
	now := o.Now
	if now == nil {
		now = time.Now
	}
	s := &Service{cfg: cfg, db: d.DB, log: log, now: now}

	var issuers []auth.Issuer
	localIssuer := ""
	if cfg.Identity.Embedded.Enabled {
		base, ok := localBaseURL(d.ServicesAddr)
		if !ok {
			log.Warn("the built-in identity provider is disabled: the services listener is not on a loopback address", "addr", d.ServicesAddr)
		} else {
			key, err := signingKey(ctx, d.DB, d.Box, o.SigningKey)
			if err != nil {
				return nil, err
			}
			e := cfg.Identity.Embedded
			s.idp, err = auth.NewIdP(auth.IdPOptions{
				Issuer: base + IdPPath, Key: key, Audience: e.Audience, ClientID: e.ClientID, TokenTTL: e.TokenTTL.D(),
				Approver: func(r *http.Request) (string, bool) {
					return identity.LocalOperatorSubject, d.IsOwner != nil && d.IsOwner(r)
				},
				Now: now,
			})
			if err != nil {
				return nil, fmt.Errorf("platform: built-in identity provider: %w", err)
			}
			localIssuer = s.idp.Issuer()
			issuers = append(issuers, s.idp.VerifierIssuer())
		}
	}
	ids := make([]string, 0, len(cfg.Identity.Providers))
	for id := range cfg.Identity.Providers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var external []string
	for _, id := range ids {
		p := cfg.Identity.Providers[id]
		clients := make([]string, 0, len(p.Clients))
		for c := range p.Clients {
			clients = append(clients, c)
		}
		sort.Strings(clients)
		issuers = append(issuers, auth.Issuer{Issuer: p.Issuer, JWKSURL: p.JWKSURL, Audience: p.Audience,
			ClientIDs: clients, Algorithms: p.Algorithms, Leeway: p.Leeway.D()})
		external = append(external, p.Issuer)
	}
	if len(issuers) > 0 {
		if s.verifier, err = auth.NewVerifier(auth.VerifierOptions{Issuers: issuers, Now: now}); err != nil {
			return nil, fmt.Errorf("config: platform.identity: %w", err)
		}
	}

	ck, err := cursorKey(ctx, d.DB, d.Box)
	if err != nil {
		return nil, err
	}
	if s.local, _, err = identity.Bootstrap(ctx, d.DB, now()); err != nil {
		return nil, err
	}
	s.audit = identity.NewAuditLog(d.DB, log)
	s.identity = identity.New(identity.Options{
		DB: d.DB, Verifier: s.verifier, LocalIssuer: localIssuer, ExternalIssuers: external, IsOwner: d.IsOwner,
		ClientConfiguration: s.clientConfiguration(localIssuer), Logger: log, Now: now,
	})
	s.api = api.New(api.Options{
		DB: d.DB, Authenticator: s.identity, Auditor: s.audit, Cursors: httpx.NewCursors(ck), Logger: log,
		MaxBodyBytes: cfg.API.MaxBodyBytes, Now: now, IdempotencyRetention: cfg.API.IdempotencyRetention.D(),
	})
	if s.catalog, err = catalog.New(catalog.Options{DB: d.DB, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	if s.activate, err = activation.New(activation.Options{DB: d.DB, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	if s.engine, err = engine.New(engine.Options{DB: d.DB, Box: d.Box, Logger: log, Now: now, Publisher: d.Broker}); err != nil {
		return nil, err
	}
	standing := func(ctx context.Context, principal string, c auth.Capability, sc auth.Scope) (auth.Decision, error) {
		return identity.Standing(ctx, d.DB.Reader(), principal, c, sc)
	}
	if s.trigger, err = trigger.New(trigger.Options{DB: d.DB, Box: d.Box, Runs: s.engine, Standing: standing, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	s.engine.AddPhase("fire due schedules", s.trigger.DueSchedules)
	if s.tests, err = steptest.New(steptest.Options{DB: d.DB, Box: d.Box, Runs: s.engine, Keys: s.trigger.SigningKey, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	s.engine.AddPhase("end expired step tests and test activations", s.tests.Expire)
	s.engine.SetTestGate(s.tests)
	if s.sim, err = sim.New(sim.Options{DB: d.DB, Logger: log, Now: now, Limits: o.SimLimits}); err != nil {
		return nil, err
	}
	if s.files, err = file.New(file.Options{DB: d.DB, Dir: filepath.Join(d.DataDir, "files"), Limits: cfg.Files.limits(),
		Tasks: s.engine, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	if err := s.files.Recover(ctx); err != nil {
		return nil, err
	}
	s.engine.AddPhase("reclaim files", s.files.Sweep)
	s.engine.UseFiles(s.files)
	if s.source, err = source.New(source.Options{DB: d.DB, Box: d.Box, Runs: s.engine, Standing: standing, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	s.engine.AddPhase("dispatch due provider receipts", s.source.DueReceipts)
	if s.compat, err = compat.New(compat.Options{DB: d.DB, Load: s.engine.CanRun, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	s.engine.SetAdmission(s.compat.Admit)
	s.engine.AddPhase("rescan compatibility", s.compat.Rescan)
	s.engine.AddPhase("archive and purge runs", s.engine.Retention(cfg.Runs.retention()))
	return s, nil
}

// localBaseURL is the services listener's URL as the daemon reaches itself:
// loopback, or loopback for an unspecified (all interfaces) address.
func localBaseURL(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		if !httpx.IsLoopbackHost(host) {
			return "", false
		}
	case ip.IsUnspecified():
		host = "127.0.0.1"
	case !ip.IsLoopback():
		return "", false
	}
	return "http://" + net.JoinHostPort(host, port), true
}

// clientConfiguration builds the published sign-in settings.
func (s *Service) clientConfiguration(localIssuer string) identity.ClientConfiguration {
	cc := identity.ClientConfiguration{DisplayName: s.cfg.Identity.DisplayName, SignIn: []identity.SignInEntry{}}
	if s.idp != nil {
		base := localIssuer
		cc.SignIn = append(cc.SignIn, identity.SignInEntry{
			ProviderID: LocalProviderID, DisplayName: "This machine (local operator)", ClientID: s.cfg.Identity.Embedded.ClientID,
			Scopes: []string{}, Issuer: localIssuer, Flow: identity.FlowDevice,
			DeviceAuthorizationEndpoint: base + auth.PathDeviceCode, TokenEndpoint: base + auth.PathToken,
		})
	}
	ids := make([]string, 0, len(s.cfg.Identity.SignIn))
	for id := range s.cfg.Identity.SignIn {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := s.cfg.Identity.SignIn[id]
		p := s.cfg.Identity.Providers[e.Provider]
		flow, _ := signInFlow(e.Flow) // validated
		name := e.DisplayName
		if name == "" {
			name = p.DisplayName
		}
		if name == "" {
			name = e.Provider
		}
		scopes := e.Scopes
		if scopes == nil {
			scopes = []string{}
		}
		cc.SignIn = append(cc.SignIn, identity.SignInEntry{
			ProviderID: e.Provider, DisplayName: name, ClientID: e.Client, Scopes: scopes, Issuer: p.Issuer, Flow: flow,
			DeviceAuthorizationEndpoint: p.DeviceAuthorizationEndpoint, AuthorizationEndpoint: p.AuthorizationEndpoint,
			TokenEndpoint: p.TokenEndpoint,
		})
	}
	return cc
}

// LocalWorkspace is the workspace bootstrapped for the local operator.
func (s *Service) LocalWorkspace() identity.LocalWorkspace { return s.local }

// API is the route toolkit, for later platform routes and tests.
func (s *Service) API() *api.API { return s.api }

// Authenticator resolves platform principals with their current grants, for
// subsystems that admit them (the factory's read routes, docs/factory-api.md).
func (s *Service) Authenticator() api.Authenticator { return s.identity }

// Ready restricts the daemon's readiness while a project's compatibility
// verdict is restricted (daemon.Readiness).
func (s *Service) Ready(ctx context.Context) error { return s.compat.Ready(ctx) }

// FlushAudit waits until every recorded access decision is written.
func (s *Service) FlushAudit(ctx context.Context) error { return s.audit.Flush(ctx) }

// Routes registers the platform routes on the services listener, the
// built-in identity provider under IdPPath, /docs when enabled, and the
// unknown-route rule (401 without a valid token under the platform's
// paths, 404 with one). Health probes are the daemon's.
func (s *Service) Routes(_, services *httprouter.Router) {
	s.identity.Register(s.api, services)
	s.catalog.Register(s.api, services)
	s.activate.Register(s.api, services)
	s.engine.Register(s.api, services)
	s.trigger.Register(s.api, services)
	s.tests.Register(s.api, services)
	s.sim.Register(s.api, services)
	s.files.Register(s.api, services)
	s.source.Register(s.api, services)
	s.compat.Register(s.api, services)
	if s.idp != nil {
		h := api.WithPlatformHeaders(http.StripPrefix(IdPPath, s.idp.Handler()))
		services.Handler(http.MethodGet, IdPPath+"/*path", h)
		services.Handler(http.MethodPost, IdPPath+"/*path", h)
	}
	s.api.Describe(api.Route{Method: http.MethodGet, Path: "/health/live", Layout: api.Root, Access: api.AccessPublic,
		OperationID: "getLiveness", Tag: "Health", Summary: "Liveness: {status: up} while the process runs", Response: map[string]string{}})
	s.api.Describe(api.Route{Method: http.MethodGet, Path: "/health/ready", Layout: api.Root, Access: api.AccessPublic,
		OperationID: "getReadiness", Tag: "Health", Summary: "Readiness: {status: ready}, or 503 with a problem body", Response: map[string]string{}})
	if s.cfg.Docs.Enabled {
		s.api.ServeDocs(services, api.Info{Title: "Agent Bridge platform API", Version: APIVersion,
			Description: "Workflow platform HTTP API (spec 2). Canonical paths are under /api/v1; unprefixed compatibility paths serve the same handlers."})
	}
	services.NotFound = s.api.NotFound(services.NotFound)
	services.MethodNotAllowed = s.api.NotFound(services.MethodNotAllowed)
}

// Start runs the maintenance loop (retention of idempotency records and
// access decisions) and the run engine's loop (built-in tasks, timers)
// until ctx is cancelled.
func (s *Service) Start(ctx context.Context) error {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.maintain(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.engine.Run(ctx)
	}()
	return nil
}

// Close stops the loop and writes the access decisions still queued.
func (s *Service) Close() error {
	s.wg.Wait()
	return s.audit.Close()
}

// maintenanceInterval spaces retention runs.
const maintenanceInterval = time.Hour

func (s *Service) maintain(ctx context.Context) {
	t := time.NewTicker(maintenanceInterval)
	defer t.Stop()
	for {
		if err := s.prune(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("platform: retention run failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune applies platform.api.idempotency-retention and platform.audit.retention.
func (s *Service) prune(ctx context.Context) error {
	now := s.now()
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := api.PruneIdempotency(ctx, tx, now.Add(-s.cfg.API.IdempotencyRetention.D())); err != nil {
			return err
		}
		if r := s.cfg.Audit.Retention.D(); r > 0 {
			if _, err := s.audit.Prune(ctx, tx, now.Add(-r)); err != nil {
				return err
			}
		}
		return nil
	})
}
