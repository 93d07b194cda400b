package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// Scheduler limits (spec 2, "Limits"): how often the loop looks for due
// timers without being woken, and how many runs it advances per turn.
const (
	PollInterval = 200 * time.Millisecond
	BatchSize    = 10
	// maxInlineSteps bounds the events fed to one run in one turn; the rest
	// waits for the next turn (needs_work stays set).
	maxInlineSteps = 1000
)

// Options configures New.
type Options struct {
	DB     *store.DB
	Logger *slog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
	// NewID makes run ids (a time-ordered random UUID when nil).
	NewID func() string
}

// Service runs workflows: it owns runs, their events and timers.
type Service struct {
	db    *store.DB
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	wake  chan struct{}

	mu       sync.Mutex
	programs map[string]*program // by published version id
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil {
		return nil, errors.New("engine: Options.DB is required")
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
	return &Service{db: o.DB, log: o.Logger, now: o.Now, newID: o.NewID, wake: make(chan struct{}, 1),
		programs: map[string]*program{}}, nil
}

// timestamp is the clock's time at the stored precision (milliseconds).
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// notify wakes the loop without blocking.
func (s *Service) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// apply feeds e to run r with Seq = state.Seq+1 and At = now, and in tx
// appends the event and stores the new state, its timers and whether
// inline work is left. A refusal (*kernel.Error) writes nothing.
func (s *Service) apply(ctx context.Context, tx *sql.Tx, r *runRow, p *program, e kernel.Event) ([]kernel.Effect, error) {
	prev := r.State.Seq
	e.Seq, e.At = prev+1, s.timestamp()
	st, effects, err := kernel.Step(p.p, r.State, e)
	if err != nil {
		return nil, err
	}
	_, _, inline := p.inlineTask(&st)
	work := inline && !st.Status.Terminal()
	for _, ef := range effects {
		if ef.Kind == kernel.EffectContinue {
			work = true
		}
	}
	if err := saveStep(ctx, tx, r.ID, prev, st, e, effects, work); err != nil {
		return nil, err
	}
	if err := indexIncidents(ctx, tx, r.ID, r.Environment, effects); err != nil {
		return nil, err
	}
	r.State, r.UpdatedAt = st, e.At
	return effects, nil
}

// Run drives runs until ctx is cancelled: inline work (built-in tasks,
// continue) and due timers, woken by changes or every PollInterval.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		s.turn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// turn advances at most BatchSize runs with inline work and fires the
// timers of at most BatchSize runs, earliest due first.
func (s *Service) turn(ctx context.Context) {
	ids, err := idsWhere(ctx, s.db.Reader(), `SELECT id FROM platform_runs WHERE needs_work = 1 ORDER BY updated_at, id LIMIT ?`, BatchSize)
	if err != nil {
		s.logErr(ctx, "list runs with work", err)
		return
	}
	for _, id := range ids {
		if err := s.drive(ctx, id); err != nil {
			s.logErr(ctx, "advance run "+id, err)
		}
	}
	now := s.timestamp()
	ids, err = idsWhere(ctx, s.db.Reader(), `SELECT run_id FROM platform_run_timers WHERE due_at <= ?
		GROUP BY run_id ORDER BY min(due_at), run_id LIMIT ?`, now.UnixMilli(), BatchSize)
	if err != nil {
		s.logErr(ctx, "list due timers", err)
		return
	}
	for _, id := range ids {
		if err := s.fire(ctx, id); err != nil {
			s.logErr(ctx, "fire timer of run "+id, err)
		}
	}
}

func (s *Service) logErr(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		s.log.Warn("engine: "+what+" failed", "err", err)
	}
}

// load reads a run and its program inside tx.
func (s *Service) load(ctx context.Context, tx *sql.Tx, id string) (runRow, *program, error) {
	r, err := getRun(ctx, tx, "", id)
	if err != nil {
		return r, nil, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	return r, p, err
}

// drive completes a run's built-in tasks and feeds continue while its
// needs_work flag is set, one event per transaction.
func (s *Service) drive(ctx context.Context, id string) error {
	for range maxInlineSteps {
		more := false
		err := s.db.Write(ctx, func(tx *sql.Tx) error {
			r, p, err := s.load(ctx, tx, id)
			if err != nil {
				return err
			}
			var work int
			if err := tx.QueryRowContext(ctx, `SELECT needs_work FROM platform_runs WHERE id = ?`, id).Scan(&work); err != nil {
				return fmt.Errorf("engine: read work flag: %w", err)
			}
			if work == 0 {
				return nil
			}
			e := kernel.Event{Kind: kernel.EventContinue}
			if task, out, ok := p.inlineTask(&r.State); ok {
				e = kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: task, Output: out}
			}
			if r.State.Status.Terminal() {
				return clearWork(ctx, tx, id, r.State.Seq)
			}
			if _, err := s.apply(ctx, tx, &r, p, e); err != nil {
				if kernel.ErrorCode(err) != "" {
					// Refused (nothing to continue, a stale task): no work left.
					s.log.Warn("engine: inline event refused", "run", id, "kind", e.Kind, "err", err)
					return clearWork(ctx, tx, id, r.State.Seq)
				}
				return err
			}
			more = true
			return nil
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// fire feeds timer_fired for the run's first due timer in DueOrder; the
// kernel processes every timer due at that time. A timer the kernel no
// longer has (already processed) is dropped.
func (s *Service) fire(ctx context.Context, id string) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		r, p, err := s.load(ctx, tx, id)
		if err != nil {
			return err
		}
		due := kernel.DueOrder(r.State, s.timestamp())
		if len(due) == 0 {
			return dropStaleTimers(ctx, tx, r)
		}
		if _, err := s.apply(ctx, tx, &r, p, kernel.Event{Kind: kernel.EventTimerFired, TimerID: due[0].ID}); err != nil {
			if kernel.ErrorCode(err) == kernel.CodeRuntimeState {
				return dropStaleTimers(ctx, tx, r)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.drive(ctx, id)
}

// dropStaleTimers deletes the due-table rows of timers the state no longer
// has (all of them once the run has ended).
func dropStaleTimers(ctx context.Context, tx *sql.Tx, r runRow) error {
	rows, err := idsWhere(ctx, tx, `SELECT timer_id FROM platform_run_timers WHERE run_id = ?`, r.ID)
	if err != nil {
		return err
	}
	for _, t := range rows {
		if _, ok := r.State.Timers[t]; ok && !r.State.Status.Terminal() {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM platform_run_timers WHERE run_id = ? AND timer_id = ?`, r.ID, t); err != nil {
			return fmt.Errorf("engine: drop timer: %w", err)
		}
	}
	return nil
}

// refusal maps a kernel refusal to a problem response; other errors pass.
func refusal(err error) error {
	var ke *kernel.Error
	if !errors.As(err, &ke) {
		return err
	}
	status := http.StatusConflict
	switch ke.Code {
	case kernel.CodeValidation:
		status = http.StatusUnprocessableEntity
	case kernel.CodeCapacity:
		status = http.StatusTooManyRequests
	}
	return &api.Error{Status: status, Code: ke.Code, Message: ke.Msg}
}
