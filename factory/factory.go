// Package factory runs the software factory of docs/factory-api.md ("Factory run
// inspection"): build, maintenance and test runs of the user's own coding
// agent against a local git repository, in a fresh clone in the data
// directory, followed by independent verification with the project's own
// checks, repairs, a checkpoint commit, a diff and a changes.zip export.
// Every step that changes the world is journalled (intent, then receipt) in
// a hash chain; an intent left without a receipt by a crash puts the run in
// needs_reconciliation. See docs/factory-api.md.
package factory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/bridge/provider"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

// Settings is the factory section of config.yaml; each value also has the
// environment variable named in its tag (docs/factory-api.md, "Settings").
type Settings struct {
	RepairAttempts int             `yaml:"repair-attempts" env:"FACTORY_REPAIR_ATTEMPTS"`
	MaxActiveRuns  int             `yaml:"max-active-runs" env:"FACTORY_MAX_ACTIVE_RUNS"`
	CommandTimeout config.Duration `yaml:"command-timeout" env:"FACTORY_COMMAND_TIMEOUT"`
	AgentTimeout   config.Duration `yaml:"agent-timeout" env:"FACTORY_AGENT_TIMEOUT"`
	// RateLimitBackoff is the first wait after a provider rate limit.
	RateLimitBackoff config.Duration `yaml:"rate-limit-backoff" env:"FACTORY_RATE_LIMIT_BACKOFF"`
}

// DefaultSettings are the spec's defaults (docs/factory-api.md, "Factory limits").
func DefaultSettings() Settings {
	return Settings{
		RepairAttempts:   DefaultRepairAttempts,
		MaxActiveRuns:    2,
		CommandTimeout:   config.Duration(10 * time.Minute),
		AgentTimeout:     config.Duration(30 * time.Minute),
		RateLimitBackoff: config.Duration(time.Minute),
	}
}

// Validate checks the bounds.
func (s Settings) Validate() error {
	var errs []error
	if s.RepairAttempts < 0 || s.RepairAttempts > MaxRepairAttempts {
		errs = append(errs, fmt.Errorf("repair-attempts (FACTORY_REPAIR_ATTEMPTS) must be 0 to %d, got %d", MaxRepairAttempts, s.RepairAttempts))
	}
	if s.MaxActiveRuns < 1 || s.MaxActiveRuns > 64 {
		errs = append(errs, fmt.Errorf("max-active-runs must be 1 to 64, got %d", s.MaxActiveRuns))
	}
	if d := s.CommandTimeout.D(); d < time.Second || d > 24*time.Hour {
		errs = append(errs, fmt.Errorf("command-timeout must be 1s to 24h, got %s", d))
	}
	if d := s.AgentTimeout.D(); d < time.Second || d > 24*time.Hour {
		errs = append(errs, fmt.Errorf("agent-timeout must be 1s to 24h, got %s", d))
	}
	if d := s.RateLimitBackoff.D(); d < time.Millisecond || d > time.Hour {
		errs = append(errs, fmt.Errorf("rate-limit-backoff must be 1ms to 1h, got %s", d))
	}
	return errors.Join(errs...)
}

// LoadSettings reads the factory section of a config file.
func LoadSettings(f *config.File) (Settings, error) {
	s := DefaultSettings()
	if f == nil {
		return s, s.Validate()
	}
	err := f.Decode("factory", &s)
	return s, err
}

// Options are the factory's dependencies beyond daemon.Deps.
type Options struct {
	// LookPath finds git and the agent executables; default exec.LookPath.
	LookPath func(string) (string, error)
	// Now is the clock of recorded times; default time.Now.
	Now func() time.Time
	// Readers lets platform principals read runs bound to a project; nil
	// keeps every route owner-only.
	Readers Readers
}

// Service is the factory subsystem.
type Service struct {
	db       *store.DB
	pub      broker.Publisher
	log      *slog.Logger
	isOwner  func(*http.Request) bool
	readers  Readers
	settings Settings
	profiles map[string]bridge.Profile
	lookPath func(string) (string, error)
	now      func() time.Time
	dataDir  string
	git      gitTool
	cursors  *httpx.Cursors

	mu      sync.Mutex
	active  map[string]*activeRun // by run id
	repos   map[string]bool       // repositories with an active run
	started bool
	closed  bool

	docOnce sync.Once
	doc     map[string]any // the OpenAPI document, built on first request

	ctx        context.Context
	cancel     context.CancelCauseFunc
	wg         sync.WaitGroup
	outboxWake chan struct{}
}

// activeRun is a run being executed.
type activeRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errCancelled and errShutdown are the causes of an executor's context.
var (
	errCancelled = errors.New("the run was cancelled")
	errShutdown  = errors.New("the daemon is shutting down")
)

// New builds the factory from the daemon's dependencies; Start begins work.
func New(deps daemon.Deps, opts Options) (*Service, error) {
	if deps.DB == nil {
		return nil, errors.New("factory: no database")
	}
	settings, err := LoadSettings(deps.Config)
	if err != nil {
		return nil, err
	}
	bcfg := bridge.DefaultConfig()
	if deps.Config != nil {
		if bcfg, err = bridge.LoadConfig(deps.Config); err != nil {
			return nil, err
		}
	}
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	if opts.Now == nil {
		opts.Now = time.Now
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
		db: deps.DB, log: log.With("subsystem", "factory"), isOwner: isOwner, readers: opts.Readers, settings: settings,
		profiles: bcfg.Profiles, lookPath: opts.LookPath, now: opts.Now, dataDir: deps.DataDir,
		active: map[string]*activeRun{}, repos: map[string]bool{}, outboxWake: make(chan struct{}, 1),
	}
	if deps.Broker != nil {
		s.pub = deps.Broker
	}
	if deps.DataDir == "" {
		return nil, errors.New("factory: no data directory")
	}
	if s.cursors, err = httpx.LoadCursors(deps.DataDir, "factory"); err != nil {
		return nil, fmt.Errorf("factory: %w", err)
	}
	// git is looked up when needed, so a daemon without git still serves
	// the recorded runs.
	return s, nil
}

// Settings returns the effective settings.
func (s *Service) Settings() Settings { return s.settings }

// Start recovers the runs the previous process left and starts the queue
// and the event publisher.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("factory: Start called twice or after Close")
	}
	s.started = true
	s.ctx, s.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	s.mu.Unlock()
	if err := s.recover(ctx); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.publishLoop(s.ctx)
	s.schedule()
	return nil
}

// Close stops every active run (each ends failed with code interrupted and
// a receipt for its step) and the publisher.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel := s.cancel
	var waits []chan struct{}
	for _, a := range s.active {
		a.cancel(errShutdown)
		waits = append(waits, a.done)
	}
	s.mu.Unlock()
	for _, w := range waits {
		<-w
	}
	if cancel != nil {
		cancel(errShutdown)
	}
	s.wg.Wait()
	return nil
}

func (s *Service) gitTool() (gitTool, error) {
	if s.git.bin != "" {
		return s.git, nil
	}
	bin, err := s.lookPath("git")
	if err != nil {
		return gitTool{}, errorf(EUnavailable, "git was not found on PATH: the factory clones repositories with it")
	}
	return gitTool{bin: bin}, nil
}

// runDir is the directory of a run's workspace, logs and artifacts.
func (s *Service) runDir(id string) string { return filepath.Join(s.dataDir, "factory", id) }

// CreateRequest is the body of POST /api/v1/runs.
type CreateRequest struct {
	Repo           string   `json:"repo"`
	Mode           string   `json:"mode"`
	Instruction    string   `json:"instruction,omitempty"`
	Provider       string   `json:"provider,omitempty"`
	Profile        string   `json:"profile,omitempty"`
	Verify         []string `json:"verify,omitempty"`
	VerifyTimeout  string   `json:"verify_timeout,omitempty"`
	RepairAttempts *int     `json:"repair_attempts,omitempty"`
	// Project binds the run to a platform project whose readers may read it.
	Project *Project `json:"project,omitempty"`
}

// Bounds of a create request.
const (
	maxInstruction = 32 << 10
	maxVerifyLine  = 4096
)

// providerFor resolves the coding provider of a run from the bridge's
// profiles (config.yaml bridge.profiles): a profile names a provider and
// its command; a provider alone (claude, codex) uses its default settings.
func (s *Service) providerFor(name, profile string) (provider.Provider, string, string, error) {
	if profile == "" && name == "" {
		profile = "default"
	}
	var cfg provider.Config
	cfg.LookPath = s.lookPath
	if profile != "" {
		p, ok := s.profiles[profile]
		if !ok && profile == "default" {
			p, ok = bridge.Profile{Provider: provider.NameAuto}, true
		}
		if !ok {
			return nil, "", "", fieldErr("profile", "unknown profile %q (profiles are configured in config.yaml under bridge.profiles)", profile)
		}
		pn := p.Provider
		if pn == "" {
			pn = provider.NameAuto
		}
		if name != "" && name != pn {
			return nil, "", "", fieldErr("provider", "profile %q uses provider %q, not %q", profile, pn, name)
		}
		name = pn
		cfg.Path, cfg.Args, cfg.Env = p.Command, p.Args, p.Env
		cfg.PermissionMode, cfg.Sandbox = p.PermissionMode, p.Sandbox
	} else if name == provider.NameCommand {
		return nil, "", "", fieldErr("provider", "the command provider needs a profile naming its command (config.yaml bridge.profiles.<name>.command)")
	}
	prov, err := provider.New(name, cfg)
	if err != nil {
		return nil, "", "", fieldErr("provider", "%v", err)
	}
	if err := prov.Available(); err != nil {
		return nil, "", "", fieldErr("provider", "%v", err)
	}
	if prov.Demo() {
		return nil, "", "", fieldErr("provider", "no coding agent is available (%s is a built-in demo that cannot change code); install claude or codex, or name a command profile", prov.Name())
	}
	return prov, prov.Name(), profile, nil
}

// Create validates a request, records the source's HEAD and queues a run.
func (s *Service) Create(ctx context.Context, req CreateRequest) (Run, error) {
	return s.create(ctx, req, "")
}

func (s *Service) create(ctx context.Context, req CreateRequest, retryOf string) (Run, error) {
	policy, err := s.policyFor(req)
	if err != nil {
		return Run{}, err
	}
	if err := req.Project.validate(); err != nil {
		return Run{}, err
	}
	var provName, profile string
	if req.Mode == ModeTest {
		if req.Instruction != "" || req.Provider != "" || req.Profile != "" {
			return Run{}, fieldErr("mode", "a test run verifies the existing source without an agent: instruction, provider and profile must be empty")
		}
	} else {
		if strings.TrimSpace(req.Instruction) == "" {
			return Run{}, fieldErr("instruction", "is required for a %s run", req.Mode)
		}
		if _, provName, profile, err = s.providerFor(req.Provider, req.Profile); err != nil {
			return Run{}, err
		}
	}
	g, err := s.gitTool()
	if err != nil {
		return Run{}, err
	}
	src, err := g.resolveSource(ctx, req.Repo)
	if err != nil {
		return Run{}, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return Run{}, errorf(EUnavailable, "the factory is shutting down")
	}
	now := s.now()
	r := Run{
		ID: uuid.Must(uuid.NewV7()).String(), Mode: req.Mode, State: StateQueued, Repo: src.Root, Subdir: src.Subdir,
		Instruction: req.Instruction, Provider: provName, Profile: profile, Policy: policy,
		SourceRevision: src.Revision, SourceTree: src.Tree, PlanRevision: 1, RetryOf: retryOf, ChangedFiles: []string{},
		Project: req.Project,
	}
	r.Workspace = filepath.Join(s.runDir(r.ID), "workspace")
	tasks := initialTasks(r)
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := insertRun(ctx, tx, &r, now); err != nil {
			return err
		}
		if err := updateRun(ctx, tx, r.ID, runUpdate{SourceRevision: &r.SourceRevision, SourceTree: &r.SourceTree, Workspace: &r.Workspace}, now); err != nil {
			return err
		}
		for _, t := range tasks {
			if err := insertTask(ctx, tx, r.ID, t); err != nil {
				return err
			}
		}
		return insertOutbox(ctx, tx, runEvent(&r, StateQueued, nil, now))
	})
	if err != nil {
		return Run{}, err
	}
	s.pokeOutbox()
	// The answer is the run as created (queued), whether or not the
	// scheduler starts it at once.
	created, err := s.get(ctx, r.ID, false)
	s.schedule()
	return created, err
}

// policyFor validates the request's fields that freeze into the policy.
func (s *Service) policyFor(req CreateRequest) (Policy, error) {
	p := Policy{
		RepairAttempts: s.settings.RepairAttempts, CommandTimeout: Duration(s.settings.CommandTimeout.D()),
		AgentTimeout: Duration(s.settings.AgentTimeout.D()), MaxCommands: MaxCommands, DiffLimit: DiffLimit,
		RateLimitBackoff: Duration(s.settings.RateLimitBackoff.D()), RateLimitRetries: RateLimitRetries,
		Runner: "local: fresh git clone in the data directory; agent and checks in process groups of their own",
	}
	switch {
	case req.Mode == "":
		return p, fieldErr("mode", "is required (build, maintenance or test)")
	case req.Mode != ModeBuild && req.Mode != ModeMaintenance && req.Mode != ModeTest:
		return p, fieldErr("mode", "must be build, maintenance or test, got %q", req.Mode)
	case req.Repo == "":
		return p, fieldErr("repo", "is required: the path of a local git repository (or a directory inside one)")
	case !filepath.IsAbs(req.Repo):
		return p, fieldErr("repo", "must be an absolute path, got %q", req.Repo)
	case len(req.Instruction) > maxInstruction:
		return p, fieldErr("instruction", "is %d bytes; at most %d", len(req.Instruction), maxInstruction)
	case len(req.Verify) > MaxCommands:
		return p, fieldErr("verify", "names %d commands; at most %d", len(req.Verify), MaxCommands)
	}
	for i, v := range req.Verify {
		if strings.TrimSpace(v) == "" || len(v) > maxVerifyLine {
			return p, fieldErr(fmt.Sprintf("verify[%d]", i), "must be a non-blank command of at most %d bytes", maxVerifyLine)
		}
	}
	p.Verify = req.Verify
	if req.VerifyTimeout != "" {
		d, err := time.ParseDuration(req.VerifyTimeout)
		if err != nil || d < time.Second || d > 24*time.Hour {
			return p, fieldErr("verify_timeout", "must be a duration from 1s to 24h, got %q", req.VerifyTimeout)
		}
		p.CommandTimeout = Duration(d)
	}
	if req.RepairAttempts != nil {
		if *req.RepairAttempts < 0 || *req.RepairAttempts > MaxRepairAttempts {
			return p, fieldErr("repair_attempts", "must be 0 to %d, got %d", MaxRepairAttempts, *req.RepairAttempts)
		}
		p.RepairAttempts = *req.RepairAttempts
	}
	if req.Mode == ModeTest {
		p.RepairAttempts = 0 // repairs need a model
	}
	return p, nil
}

// initialTasks is revision 1 of a run's plan.
func initialTasks(r Run) []Task {
	verify := Task{Kind: TaskVerify, Role: RoleVerifier, Title: "verify (attempt 1)", State: TaskPending, Revision: 1, Attempt: 1}
	switch r.Mode {
	case ModeTest:
		verify.Index = 1
		return []Task{verify}
	case ModeMaintenance:
		verify.Index = 2
		return []Task{{Index: 1, Kind: TaskAgent, Role: RoleMaintainer, Title: "maintain", Instruction: r.Instruction, State: TaskPending, Revision: 1}, verify}
	default:
		verify.Index = 2
		return []Task{{Index: 1, Kind: TaskAgent, Role: RoleImplementer, Title: "implement", Instruction: r.Instruction, State: TaskPending, Revision: 1}, verify}
	}
}

// Get returns a run with its tasks, agent turns, verification, journal
// check and diff (at most DiffLimit bytes).
func (s *Service) Get(ctx context.Context, id string) (Run, error) {
	return s.get(ctx, id, true)
}

func (s *Service) get(ctx context.Context, id string, withDiff bool) (Run, error) {
	q := s.db.Reader()
	row, err := s.readRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	r := row.Run
	if r.Tasks, err = listTasks(ctx, q, id); err != nil {
		return r, err
	}
	if r.Turns, err = listTurns(ctx, q, id); err != nil {
		return r, err
	}
	if r.Verification, err = listVerification(ctx, q, id); err != nil {
		return r, err
	}
	// Only a succeeded run has checks supporting success; the attempts of
	// any other stay in verification as evidence.
	if n := len(r.Verification); n > 0 && r.Verification[n-1].Passed && r.State == StateSucceeded {
		r.FinalVerification = &r.Verification[n-1]
	}
	entries, err := listJournal(ctx, q, id)
	if err != nil {
		return r, err
	}
	sum := VerifyJournal(id, entries, row.journalCount, row.journalHead)
	r.Journal = &sum
	if r.State == StateRunning && row.currentTask > 0 {
		r.Progress = &Progress{Task: row.currentTask, Command: row.currentCmd}
		for _, t := range r.Tasks {
			if t.Index == row.currentTask {
				r.Progress.Title = t.Title
				if t.State == TaskPaused {
					r.Progress.Paused = t.Error
				}
			}
		}
	}
	if withDiff && r.DiffBytes > 0 {
		if data, err := readFileLimit(filepath.Join(s.runDir(id), "artifacts", "changes.patch"), DiffLimit); err == nil {
			d := string(data)
			r.Diff = &d
		}
	}
	return r, nil
}

func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return fmt.Sprintf("%q", s)
}
