// Package bridge runs AI coding-agent jobs for local apps and IDE panels: it
// drives the user's own agent CLI (Claude Code, Codex, any command) through
// package provider, records everything that happens to a job, streams events
// over SSE and offers an OpenAI-compatible Chat Completions surface. It never
// holds provider credentials.
package bridge

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentbridge/bridge/bridge/provider"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/ring"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations are the bridge's tables (versions 0100-0199).
func Migrations() []store.Migration { return store.MustLoad(migrationFS, "migrations") }

// Config is the `bridge:` section of config.yaml.
type Config struct {
	// MaxConcurrentJobs is how many agent processes run at once; more jobs queue.
	MaxConcurrentJobs int `yaml:"max-concurrent-jobs" env:"BRIDGE_MAX_CONCURRENT_JOBS"`
	// JobTimeout is the wall-clock limit of one turn of a job.
	JobTimeout config.Duration `yaml:"job-timeout" env:"BRIDGE_JOB_TIMEOUT"`
	// InactivityTimeout fails a turn whose agent prints nothing for this long
	// (agent CLIs are known to hang without a final event).
	InactivityTimeout config.Duration `yaml:"inactivity-timeout" env:"BRIDGE_INACTIVITY_TIMEOUT"`
	// StallTimeout fails a turn whose agent reports only transport errors
	// (retries, reconnects) for this long: Codex offline retries forever.
	StallTimeout config.Duration `yaml:"stall-timeout" env:"BRIDGE_STALL_TIMEOUT"`
	// Heartbeat is the interval of SSE comment heartbeats (at most 15s).
	Heartbeat config.Duration `yaml:"heartbeat" env:"BRIDGE_SSE_HEARTBEAT"`
	// IdempotencyRetention is how long an Idempotency-Key's stored answer to
	// a job or message is replayed (docs/bridge-api.md, "Retention").
	IdempotencyRetention config.Duration `yaml:"idempotency-retention" env:"BRIDGE_IDEMPOTENCY_RETENTION"`
	// Profiles name agent configurations; "default" always exists.
	Profiles map[string]Profile `yaml:"profiles" env:"-"`
}

// Profile selects a provider and its settings.
type Profile struct {
	// Provider is claude, codex, command, echo, or auto (claude if on PATH,
	// else codex, else echo, looked up again at each job).
	Provider string `yaml:"provider"`
	// Command is the executable; with auto its name must say claude or codex.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Env holds KEY=value entries added to the agent's environment.
	Env     []string `yaml:"env"`
	WorkDir string   `yaml:"work-dir"`
	// PermissionMode is Claude Code's --permission-mode (default
	// acceptEdits); Sandbox is Codex's --sandbox (default workspace-write).
	// See README "Agent providers".
	PermissionMode string `yaml:"permission-mode"`
	Sandbox        string `yaml:"sandbox"`
}

// DefaultConfig is the bridge's configuration when config.yaml says nothing.
func DefaultConfig() Config {
	return Config{
		MaxConcurrentJobs: 2,
		JobTimeout:        config.Duration(30 * time.Minute),
		InactivityTimeout: config.Duration(5 * time.Minute),
		StallTimeout:      config.Duration(provider.DefaultStallTimeout),
		Heartbeat:         config.Duration(15 * time.Second),

		IdempotencyRetention: config.Duration(DefaultIdempotencyRetention),
	}
}

// Validate checks bounds.
func (c *Config) Validate() error {
	switch {
	case c.MaxConcurrentJobs < 1 || c.MaxConcurrentJobs > 64:
		return fmt.Errorf("bridge.max-concurrent-jobs %d is outside 1..64", c.MaxConcurrentJobs)
	case c.JobTimeout.D() < time.Second:
		return fmt.Errorf("bridge.job-timeout must be at least 1s")
	case c.InactivityTimeout.D() < 100*time.Millisecond:
		return fmt.Errorf("bridge.inactivity-timeout must be at least 100ms")
	case c.StallTimeout.D() < 100*time.Millisecond:
		return fmt.Errorf("bridge.stall-timeout must be at least 100ms")
	case c.Heartbeat.D() < 10*time.Millisecond || c.Heartbeat.D() > 15*time.Second:
		return fmt.Errorf("bridge.heartbeat must be between 10ms and 15s")
	case c.IdempotencyRetention.D() < MinIdempotencyRetention || c.IdempotencyRetention.D() > MaxIdempotencyRetention:
		return fmt.Errorf("bridge.idempotency-retention %s is outside 1h..8760h", c.IdempotencyRetention.D())
	}
	for name, p := range c.Profiles {
		if !clientIDPattern.MatchString(name) {
			return fmt.Errorf("bridge.profiles: invalid profile name %q", name)
		}
		switch p.Provider {
		case "", "auto", provider.NameClaude, provider.NameCodex, provider.NameEcho:
		case provider.NameCommand:
			if p.Command == "" {
				return fmt.Errorf("bridge.profiles.%s: provider command needs command", name)
			}
		default:
			return fmt.Errorf("bridge.profiles.%s: unknown provider %q (want auto, claude, codex, command, echo)", name, p.Provider)
		}
		if err := p.validatePermissions(); err != nil {
			return fmt.Errorf("bridge.profiles.%s: %w", name, err)
		}
	}
	return nil
}

// validatePermissions checks permission-mode and sandbox against the
// values the CLIs accept, and that the profile's provider has them.
func (p Profile) validatePermissions() error {
	if p.PermissionMode != "" {
		if !slices.Contains(provider.PermissionModes, p.PermissionMode) {
			return fmt.Errorf("permission-mode %q is not one of %v", p.PermissionMode, provider.PermissionModes)
		}
		if !slices.Contains([]string{"", "auto", provider.NameClaude}, p.Provider) {
			return fmt.Errorf("permission-mode is a Claude Code setting; provider %s has none", p.Provider)
		}
	}
	if p.Sandbox != "" {
		if !slices.Contains(provider.SandboxModes, p.Sandbox) {
			return fmt.Errorf("sandbox %q is not one of %v", p.Sandbox, provider.SandboxModes)
		}
		if !slices.Contains([]string{"", "auto", provider.NameCodex}, p.Provider) {
			return fmt.Errorf("sandbox is a Codex setting; provider %s has none", p.Provider)
		}
	}
	return nil
}

// LoadConfig reads the bridge section of a config file.
func LoadConfig(f *config.File) (Config, error) {
	cfg := DefaultConfig()
	if err := f.Decode("bridge", &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// ProfileNames lists the configured profiles, "default" included.
func (c Config) ProfileNames() []string {
	names := []string{"default"}
	for n := range c.Profiles {
		if n != "default" {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	return names
}

type profileRT struct {
	name     string
	provider provider.Provider
	workDir  string
}

// Options are the bridge's dependencies beyond daemon.Deps.
type Options struct {
	Ring *ring.Ring
	// LookPath finds agent executables (tests point it at the fake agent).
	LookPath func(string) (string, error)
	Now      func() time.Time
}

// Service is the bridge subsystem.
type Service struct {
	db        *store.DB
	ring      *ring.Ring
	cfg       Config
	log       *slog.Logger
	build     daemon.BuildInfo
	ownerHash [32]byte
	profiles  map[string]*profileRT
	cursors   *httpx.Cursors
	idem      *httpx.Idempotency
	now       func() time.Time

	sched   *scheduler
	pub     *publisher
	hub     *hub
	live    *liveRegistry
	waiters *waiterRegistry
	// agentTools serves the tools of workflow agent steps to their jobs.
	agentTools *toolRegistry
	routes     []httpx.Route
	addr       func() string
	// ownerRevoke ends the console's sessions (`bridge revoke --id owner`);
	// set while the daemon assembles, before any request.
	ownerRevoke func() int

	ctx     context.Context
	stopped chan struct{}
	wg      sync.WaitGroup
}

// New builds the bridge from the daemon's dependencies.
func New(deps daemon.Deps, opts Options) (*Service, error) {
	cfg, err := LoadConfig(deps.Config)
	if err != nil {
		return nil, err
	}
	if opts.Ring == nil {
		return nil, errors.New("bridge: an event ring is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{
		db: deps.DB, ring: opts.Ring, cfg: cfg, log: deps.Logger.With("subsystem", "bridge"),
		build: deps.Build, ownerHash: deps.OwnerHash, now: opts.Now,
		live: newLiveRegistry(), waiters: newWaiterRegistry(), agentTools: newToolRegistry(), stopped: make(chan struct{}),
		addr: func() string { return deps.BridgeAddr },
	}
	if s.profiles, err = buildProfiles(cfg, opts.LookPath); err != nil {
		return nil, err
	}
	key, err := s.setting(context.Background(), "cursor_key", 32)
	if err != nil {
		return nil, err
	}
	s.cursors = httpx.NewCursors(key)
	s.idem = s.newIdemStore()
	s.sched = newScheduler(s, cfg.MaxConcurrentJobs)
	s.pub = newPublisher(s)
	s.hub = newHub(opts.Ring)
	go s.pub.loop()
	return s, nil
}

func buildProfiles(cfg Config, lookPath func(string) (string, error)) (map[string]*profileRT, error) {
	out := map[string]*profileRT{}
	profiles := map[string]Profile{}
	for k, v := range cfg.Profiles {
		profiles[k] = v
	}
	if _, ok := profiles["default"]; !ok {
		profiles["default"] = Profile{Provider: "auto"}
	}
	for name, p := range profiles {
		// Every provider, auto included, gets the whole profile: an auto
		// profile's command, args and env apply to the CLI it finds.
		pc := provider.Config{
			Path: p.Command, Args: p.Args, Env: p.Env, LookPath: lookPath,
			StallTimeout: cfg.StallTimeout.D(), PermissionMode: p.PermissionMode, Sandbox: p.Sandbox,
		}
		kind := p.Provider
		if kind == "" {
			kind = provider.NameAuto
		}
		prov, err := provider.New(kind, pc)
		if err != nil {
			return nil, fmt.Errorf("bridge.profiles.%s: %w", name, err)
		}
		out[name] = &profileRT{name: name, provider: prov, workDir: p.WorkDir}
	}
	return out, nil
}

// profileNames lists the profile names in order, default first.
func (s *Service) profileNames() []string {
	names := make([]string, 0, len(s.profiles))
	for n := range s.profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	if i := slices.Index(names, "default"); i > 0 {
		names = append([]string{"default"}, slices.Delete(names, i, i+1)...)
	}
	return names
}

// Start recovers jobs a previous daemon left running and starts the scheduler.
func (s *Service) Start(ctx context.Context) error {
	s.ctx = ctx
	if err := s.recover(ctx); err != nil {
		return err
	}
	revoked := s.revokedCount(ctx)
	s.wg.Add(4)
	go func() {
		defer s.wg.Done()
		s.pruneLoop(ctx, pruneInterval)
	}()
	go func() {
		defer s.wg.Done()
		s.sched.loop(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.watchRevocations(ctx, 500*time.Millisecond, revoked)
	}()
	go func() {
		defer s.wg.Done()
		s.hub.run(ctx)
	}()
	return nil
}

// Close waits for the scheduler and running jobs to stop. Running jobs are
// killed by the daemon's context; a restart marks them interrupted.
func (s *Service) Close() error {
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
	s.wg.Wait()
	s.sched.wait()
	s.pub.close()
	return nil
}

// workDirOK checks that a requested working directory exists.
func workDirOK(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return errf(CodeInvalidRequest, "workDir %q is not an existing directory", dir)
	}
	return nil
}
