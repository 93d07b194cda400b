package compat

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// CodeCompatibility refuses new work in a restricted project.
const CodeCompatibility = "PF-COMPATIBILITY"

// DefaultInterval spaces the automatic rescans of a project.
const DefaultInterval = 5 * time.Minute

// rescanBatch bounds the projects rescanned per scheduler turn.
const rescanBatch = 10

// Options configures New.
type Options struct {
	DB *store.DB
	// Load is the engine's check of a published workflow
	// (engine.Service.CanRun).
	Load   Loader
	Logger *slog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
	// Interval spaces automatic rescans (DefaultInterval when 0).
	Interval time.Duration
}

// Service keeps the compatibility verdict of every project.
type Service struct {
	db       *store.DB
	load     Loader
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration

	// verdicts caches each project's verdict and next rescan: every
	// verdict is written through this service, so admission needs no
	// query per run start.
	mu       sync.Mutex
	verdicts map[string]Report
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil || o.Load == nil {
		return nil, errors.New("compat: Options.DB and Load are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	return &Service{db: o.DB, load: o.Load, log: o.Logger, now: o.Now, interval: o.Interval, verdicts: map[string]Report{}}, nil
}

// Scan checks a project now and stores the verdict: a scan that fails
// (not for cancellation) is a restricted verdict, authority missing.
func (s *Service) Scan(ctx context.Context, project string) (Report, error) {
	r, err := scan(ctx, s.db.Reader(), s.load, project)
	if err != nil {
		if ctx.Err() != nil {
			return Report{}, err
		}
		s.log.Warn("compat: scan failed; the project is restricted", "project", project, "err", err)
		reason := ReasonAuthorityMissing
		r.Verdict, r.Reason = Restricted, &reason
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	r.CheckedAt, r.NextScanAt = now, now.Add(s.interval)
	if err := s.db.Write(ctx, func(tx *sql.Tx) error { return putReport(ctx, tx, r) }); err != nil {
		return Report{}, err
	}
	s.mu.Lock()
	s.verdicts[project] = r
	s.mu.Unlock()
	return r, nil
}

// Report answers a project's verdict, scanning it first when it has none.
func (s *Service) Report(ctx context.Context, project string) (Report, error) {
	s.mu.Lock()
	r, ok := s.verdicts[project]
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := getReport(ctx, s.db.Reader(), project)
	if errors.Is(err, errNotFound) {
		return s.Scan(ctx, project)
	}
	if err != nil {
		return Report{}, err
	}
	s.mu.Lock()
	s.verdicts[project] = r
	s.mu.Unlock()
	return r, nil
}

// Admit refuses new work in a restricted project with 503
// PF-COMPATIBILITY and Retry-After, the whole seconds (at least 1) until
// the next automatic rescan (engine.Service.SetAdmission).
func (s *Service) Admit(ctx context.Context, sc auth.Scope) error {
	r, err := s.Report(ctx, sc.Project)
	if err != nil {
		return err
	}
	if r.Verdict != Restricted {
		return nil
	}
	wait := int64(max(1, (r.NextScanAt.Sub(s.now())+time.Second-1)/time.Second))
	return &api.Error{Code: CodeCompatibility,
		Message: "this server cannot run every published definition of the project (GET P/operations/compatibility); new work is refused until a check passes",
		Headers: map[string]string{"Retry-After": strconv.FormatInt(wait, 10)}}
}

// Rescan is the scheduler phase (engine.Service.AddPhase) that rescans up
// to 10 projects whose rescan is due or that were never scanned.
func (s *Service) Rescan(ctx context.Context) (bool, error) {
	ids, err := dueProjects(ctx, s.db.Reader(), s.now(), rescanBatch)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, id := range ids {
		_, err := s.Scan(ctx, id)
		errs = append(errs, err)
	}
	return len(ids) == rescanBatch, errors.Join(errs...)
}

// ErrRestricted is the readiness refusal while a project is restricted.
var ErrRestricted = errors.New("compat: a project's compatibility verdict is restricted")

// Ready answers ErrRestricted while any project is restricted (docs/platform-api.md:
// readiness stays restricted when compatibility authority is missing or
// incompatible).
func (s *Service) Ready(ctx context.Context) error {
	n, err := restricted(ctx, s.db.Reader())
	if err != nil {
		return err
	}
	if n > 0 {
		return ErrRestricted
	}
	return nil
}
