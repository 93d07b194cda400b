package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Scheduler limits (docs/platform-api.md, "Limits"): how often the loop looks for due
// timers without being woken, and how many runs it advances per turn.
const (
	PollInterval = 200 * time.Millisecond
	BatchSize    = 10
	// maxInlineSteps bounds the events fed to one run in one turn; the rest
	// waits for the next turn (needs_work stays set).
	maxInlineSteps = 1024
	// eventsPerCommit bounds the events one transaction feeds one run.
	eventsPerCommit = 32
	// driveParallel runs are advanced at once, so their commits share
	// fsyncs (group commit).
	driveParallel = 4
)

// Options configures New.
type Options struct {
	DB     *store.DB
	Logger *slog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
	// NewID makes run ids (a time-ordered random UUID when nil).
	NewID func() string
	// Publisher receives the outbox's lifecycle events (nil: they are
	// dropped).
	Publisher broker.Publisher
	// HTTPClient makes the http adapter's requests (nil: a client that
	// follows no redirects and uses no proxy).
	HTTPClient *http.Client
	// Box seals the run values that hold secrets at rest (required).
	Box *secretbox.Box
}

// Service runs workflows: it owns runs, their events and timers.
type Service struct {
	db    *store.DB
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	wake  chan struct{}
	pub   broker.Publisher
	http  *http.Client
	seal  sealer

	mu       sync.Mutex
	programs map[string]*program // by published version id
	agents   AgentRunner
	gate     TestGate // agent steps of step tests (SetTestGate)
	// inFlight holds the cancel functions of dispatched calls, by task id.
	inFlight      map[string]context.CancelFunc
	inFlightCount atomic.Int64
	calls         sync.WaitGroup
	// dispatchPending and outboxPending are hints that a turn has work for
	// the dispatcher or the relay without querying.
	dispatchPending, outboxPending atomic.Bool

	// phases are the scheduler phases added by AddPhase.
	phases []namedPhase
	// admit decides whether new runs may start in a scope (SetAdmission).
	admit Admission
	// files checks the file references of run values (UseFiles).
	files FileRefs
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DB == nil {
		return nil, errors.New("engine: Options.DB is required")
	}
	if o.Box == nil {
		return nil, errors.New("engine: Options.Box is required")
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
	if o.HTTPClient == nil {
		o.HTTPClient = defaultHTTPClient()
	}
	s := &Service{db: o.DB, log: o.Logger, now: o.Now, newID: o.NewID, wake: make(chan struct{}, 1),
		pub: o.Publisher, http: o.HTTPClient, seal: sealer{o.Box}, programs: map[string]*program{}, inFlight: map[string]context.CancelFunc{}}
	s.dispatchPending.Store(true)
	s.outboxPending.Store(true)
	return s, nil
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
// appends the event, stores the new state, its timers and whether work is
// left for the loop (inline tasks, continue, held events), and performs the
// effects durably (perform). A refusal (*kernel.Error) writes nothing.
func (s *Service) apply(ctx context.Context, tx *sql.Tx, r *runRow, p *program, e kernel.Event) ([]kernel.Effect, error) {
	effects, _, err := s.applyWork(ctx, tx, r, p, e)
	return effects, err
}

// applyWork is apply, also answering the needs_work flag it stored.
func (s *Service) applyWork(ctx context.Context, tx *sql.Tx, r *runRow, p *program, e kernel.Event) ([]kernel.Effect, bool, error) {
	return s.applyEvent(ctx, tx, r, p, e, nil)
}

// applyEvent is applyWork; with a cursor c (r is then &c.r), the run's row
// and timers may be left for c's flush (runCursor).
func (s *Service) applyEvent(ctx context.Context, tx *sql.Tx, r *runRow, p *program, e kernel.Event, c *runCursor) ([]kernel.Effect, bool, error) {
	prev := r.State
	e.Seq, e.At = prev.Seq+1, s.timestamp()
	if e.ID == "" {
		e.ID = s.newID()
	}
	st, effects, err := kernel.Step(p.p, r.State, e)
	if err != nil {
		return nil, false, err
	}
	_, _, inline := p.inlineTask(&st)
	work := inline && !st.Status.Terminal()
	for _, ef := range effects {
		if ef.Kind == kernel.EffectContinue {
			work = true
		}
	}
	if !work && (c == nil || !c.noInbox) {
		held, err := hasInbox(ctx, tx, r.ID)
		if err != nil {
			return nil, false, err
		}
		work = held
	}
	sealed := !p.sec.none
	entry, err := s.encodeEvent(r.ID, e, effects, sealed)
	if err != nil {
		return nil, false, err
	}
	if c == nil {
		if err := insertKeyedEvents(ctx, tx, r.ID, r.Key, []eventEntry{entry}); err != nil {
			return nil, false, err
		}
	} else {
		if !c.dirty {
			c.dirty, c.rowSeq, c.rowTimers = true, prev.Seq, prev.Timers
		}
		c.work = work
		c.rows.events = append(c.rows.events, entry)
	}
	r.State, r.UpdatedAt = st, e.At
	var rows *pendingRows
	switch {
	case c == nil:
		if err := s.storeRow(ctx, tx, r.ID, prev.Seq, prev.Timers, st, work, e.At, sealed); err != nil {
			return nil, false, err
		}
	case !ownRowOnly(p, effects):
		// The effects may read or flag this run's row (a child that
		// fails at once holds child_completed for it): stored first.
		if err := s.flush(ctx, tx, c); err != nil {
			return nil, false, err
		}
		c.noInbox = false
	default:
		rows = &c.rows
	}
	if err := indexIncidents(ctx, tx, r.ID, r.Environment, effects); err != nil {
		return nil, false, err
	}
	if err := s.perform(ctx, tx, r, p, e, effects, rows); err != nil {
		return nil, false, err
	}
	return effects, work, nil
}

// ownRowOnly reports whether performing effects leaves the run's own row
// and inbox alone and writes no row that refers to it but through the
// cursor's rows: records, timers (saveTimers), continue, built-in echo
// and noop tasks and the run's end (outbox, log, and the caller's inbox,
// another run's). Incidents are indexed in a table that refers to the
// run's row, which a new run's cursor has not inserted yet.
func ownRowOnly(p *program, effects []kernel.Effect) bool {
	for _, ef := range effects {
		switch ef.Kind {
		case kernel.EffectRecord, kernel.EffectStartTimer, kernel.EffectCancelTimer, kernel.EffectContinue,
			kernel.EffectRunCompleted:
		case kernel.EffectStartTask:
			if ef.Task == nil || ef.Task.Executor != kernel.ExecutorConnector {
				return false
			}
			if a := p.adapters[ef.Task.Ref]; a != adapterEcho && a != adapterNoop {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Run drives runs until ctx is cancelled: held events, inline work
// (built-in tasks, continue), due timers, dispatched calls and the outbox,
// woken by changes or every PollInterval. It returns once in-flight calls
// have stopped.
func (s *Service) Run(ctx context.Context) {
	defer s.calls.Wait()
	if err := s.recoverDispatches(ctx); err != nil {
		s.logErr(ctx, "recover dispatched calls", err)
	}
	t := time.NewTimer(PollInterval)
	defer t.Stop()
	for {
		s.turn(ctx)
		t.Reset(s.untilNextDue(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.dispatchPending.Store(true)
			s.outboxPending.Store(true)
		case <-s.wake:
		}
	}
}

// untilNextDue is how long the loop may sleep: until the earliest timer,
// claim deadline or lease expiry of a run that is not paused, at most
// PollInterval (which also bounds how late the other phases notice work).
// A wait step fires close to its due time rather than up to a poll late.
func (s *Service) untilNextDue(ctx context.Context) time.Duration {
	next, err := nextDue(ctx, s.db.Reader())
	if err != nil || !next.Valid {
		return PollInterval
	}
	d := time.Until(store.FromMillis(next.Int64))
	if d <= 0 {
		// Due already but not handled by the turn that just ran (its
		// batch was full and the loop is woken anyway, or it keeps
		// failing): look again soon, without spinning.
		return pastDueRetry
	}
	return min(d, PollInterval)
}

// pastDueRetry is the loop's sleep when work is already due.
const pastDueRetry = 20 * time.Millisecond

// turn is one scheduler cycle. Each phase handles a bounded batch (docs/platform-api.md,
// "Limits"): runs with work, runs with due timers, pending dispatches,
// recoverable leases and expired ready tasks, and the outbox; a phase
// that filled its batch wakes the loop again at once.
func (s *Service) turn(ctx context.Context) {
	var more bool
	// Expired ready tasks go first: their attempt timers are due too.
	phase(ctx, func(ctx context.Context) {
		if n, err := s.expireReady(ctx); err != nil {
			s.logErr(ctx, "expire unclaimed worker tasks", err)
		} else if n == BatchSize {
			more = true
		}
	})
	phase(ctx, func(ctx context.Context) { more = s.advance(ctx) || more })
	if s.dispatchPending.Swap(false) {
		// Not a phase: the dispatched calls outlive the turn.
		full, err := s.dispatch(ctx)
		if err != nil {
			s.logErr(ctx, "dispatch tasks", err)
		}
		if full {
			s.dispatchPending.Store(true)
			more = true
		}
	}
	phase(ctx, func(ctx context.Context) {
		if n, err := s.recoverLeases(ctx); err != nil {
			s.logErr(ctx, "recover worker leases", err)
		} else if n == BatchSize {
			more = true
		}
	})
	more = s.runPhases(ctx) || more
	if s.outboxPending.Swap(false) {
		phase(ctx, func(ctx context.Context) {
			full, err := s.relay(ctx)
			if err != nil {
				s.outboxPending.Store(true)
				s.logErr(ctx, "relay run events", err)
			}
			if full {
				s.outboxPending.Store(true)
				more = true
			}
		})
	}
	if more {
		s.notify()
	}
}

// PhaseLimit bounds one phase of a scheduler turn (docs/platform-api.md, "Limits"); work
// left when it expires waits for the next turn, its transaction rolled back.
const PhaseLimit = 5 * time.Second

func phase(ctx context.Context, f func(context.Context)) {
	ctx, cancel := context.WithTimeout(ctx, PhaseLimit)
	defer cancel()
	f(ctx)
}

// advance drives the runs with work and fires the due timers of the runs
// the scheduler cycle picks (pickRuns): at most MaxTenantsPerTurn tenants,
// one environment each, BatchSize runs per environment. It answers whether
// a batch was full.
func (s *Service) advance(ctx context.Context) bool {
	ids, err := runsWithWork(ctx, s.db.Reader(), MaxTenantsPerTurn, BatchSize)
	if err != nil {
		s.logErr(ctx, "list runs with work", err)
		return false
	}
	s.each(ids, func(id string) {
		if err := s.drive(ctx, id); err != nil {
			s.logErr(ctx, "advance run "+id, err)
		}
	})
	more := len(ids) >= BatchSize
	ids, err = runsWithDueTimers(ctx, s.db.Reader(), s.timestamp(), MaxTenantsPerTurn, BatchSize)
	if err != nil {
		s.logErr(ctx, "list due timers", err)
		return more
	}
	s.each(ids, func(id string) {
		if err := s.fire(ctx, id); err != nil {
			s.logErr(ctx, "fire timer of run "+id, err)
		}
	})
	return more || len(ids) >= BatchSize
}

// MaxTenantsPerTurn is how many tenants one scheduler cycle serves, one
// environment each (docs/platform-api.md, "Limits"): a tenant with a backlog cannot
// starve the others, and the environment whose work is oldest goes first.
const MaxTenantsPerTurn = 16

// each calls f for every id, driveParallel at a time (distinct runs never
// touch each other's rows, and the writer serializes transactions).
func (s *Service) each(ids []string, f func(string)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, driveParallel)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(id)
		}()
	}
	wg.Wait()
}

func (s *Service) logErr(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		s.log.Warn("engine: "+what+" failed", "err", err)
	}
}

// load reads a run and its program inside tx.
func (s *Service) load(ctx context.Context, tx *sql.Tx, id string) (runRow, *program, error) {
	r, err := s.getRun(ctx, tx, "", id)
	if err != nil {
		return r, nil, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	return r, p, err
}

// drive advances a run while its needs_work flag is set: first the events
// held in its inbox (oldest first), then built-in tasks and continue. Up
// to eventsPerCommit events share one transaction (each is still appended
// with its own sequence number). A paused run is left alone.
func (s *Service) drive(ctx context.Context, id string) error {
	for range maxInlineSteps / eventsPerCommit {
		more := false
		err := s.db.Write(ctx, func(tx *sql.Tx) error {
			more = false
			var c runCursor
			for range eventsPerCommit {
				var err error
				if more, err = s.step1(ctx, tx, id, &c); err != nil {
					return err
				}
				if !more {
					break
				}
			}
			return s.flush(ctx, tx, &c)
		})
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// inline does up to eventsPerCommit events of r's inline work in tx (the
// transaction that started it: c holds r just after its started event),
// so a run of built-in steps usually ends in one commit; the loop does the
// rest. c's row is stored (flush) before it returns.
func (s *Service) inline(ctx context.Context, tx *sql.Tx, c *runCursor) error {
	for range eventsPerCommit {
		more, err := s.step1(ctx, tx, c.r.ID, c)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return s.flush(ctx, tx, c)
}

// runCursor is a run being advanced by one transaction: its row and
// program as this transaction last stored them, so that each next event
// does not read and decode the whole row again (BENCHMARKS.md, "Run start
// and transitions"). The zero value is not loaded yet. Only this
// transaction's own events (apply, which updates r) change a run's state
// in it; the effects of an event change other runs, and hold events for
// the run at most, which only sets its needs_work flag.
//
// The events are appended one by one, but the run's row (state, flags)
// and its timers are stored once, by flush, when the transaction is done
// with the run or before an effect that may touch the run's own row
// (ownRowOnly): a 3-step run started in one transaction writes its row
// once instead of three times (BENCHMARKS.md, "Runs/s: CPU per run").
type runCursor struct {
	r      runRow
	p      *program
	loaded bool
	// flagged: this transaction stored needs_work = 1 with r's state,
	// so the flag is still set.
	flagged bool
	// noInbox: no event is held for the run: the inbox was found empty
	// (or the run was created) in this transaction, and no effect since
	// could hold one for it.
	noInbox bool
	// dirty: r's state, the flag work and the state's timers are not
	// stored yet; the row holds rowSeq and the due-timer table the
	// timers of rowTimers.
	dirty bool
	// unstored: the run is new and its row not inserted yet (flush
	// inserts it).
	unstored  bool
	work      bool
	rowSeq    int64
	rowTimers map[string]*kernel.Timer
	// rows are the events, log lines and outbox events of the dirty
	// events, written by flush too.
	rows pendingRows
}

// pendingRows are rows a cursor's events appended and flush writes, each
// kind in one statement.
type pendingRows struct {
	events []eventEntry
	logs   []logLine
	outbox []outboxEntry
}

// flush stores c's row and timers, and appends its pending rows, if they
// are dirty.
func (s *Service) flush(ctx context.Context, tx *sql.Tx, c *runCursor) error {
	if !c.dirty {
		return nil
	}
	id, sealed := c.r.ID, !c.p.sec.none
	if c.unstored {
		if err := s.insertNewRun(ctx, tx, &c.r, c.work, sealed); err != nil {
			return err
		}
		c.unstored = false
	} else if err := s.storeRow(ctx, tx, id, c.rowSeq, c.rowTimers, c.r.State, c.work, c.r.UpdatedAt, sealed); err != nil {
		return err
	}
	if err := insertKeyedEvents(ctx, tx, id, c.r.Key, c.rows.events); err != nil {
		return err
	}
	if err := writeKeyedLogs(ctx, tx, id, c.r.Key, c.rows.logs); err != nil {
		return err
	}
	if err := insertOutbox(ctx, tx, id, c.rows.outbox); err != nil {
		return err
	}
	c.dirty, c.rowTimers = false, nil
	c.rows = pendingRows{events: c.rows.events[:0], logs: c.rows.logs[:0], outbox: c.rows.outbox[:0]}
	return nil
}

// current brings c up to date with run id in tx and answers the run's
// needs_work flag. Once loaded, it reads only the row's sequence and
// flags (none when c is flagged or holds the row unstored), and reloads
// the row if another write changed it after all.
func (s *Service) current(ctx context.Context, tx *sql.Tx, id string, c *runCursor) (bool, error) {
	if c.loaded && (c.flagged || c.dirty) {
		return c.flagged, nil
	}
	seq, work, paused, err := workFlags(ctx, tx, id)
	if err != nil {
		return false, err
	}
	if c.loaded && seq == c.r.State.Seq && paused == c.r.Paused {
		return work, nil
	}
	c.loaded = false
	r, p, err := s.load(ctx, tx, id)
	if err != nil {
		return false, err
	}
	*c = runCursor{r: r, p: p, loaded: true}
	return work, nil
}

// step1 feeds run id its next event of inline work in tx, and answers
// whether there may be more. c carries the run from one call to the next
// in one transaction.
func (s *Service) step1(ctx context.Context, tx *sql.Tx, id string, c *runCursor) (bool, error) {
	work, err := s.current(ctx, tx, id, c)
	if errors.Is(err, errLegacy) {
		return false, s.skipLegacy(ctx, tx, id)
	}
	if err != nil {
		return false, err
	}
	r, p := &c.r, c.p
	if !work || r.Paused {
		return false, nil
	}
	var e kernel.Event
	var held int64
	var ok bool
	if !c.noInbox {
		if e, held, ok, err = s.nextHeld(ctx, tx, id); err != nil {
			return false, err
		}
		c.noInbox = !ok
	}
	if ok {
		if err := takeHeld(ctx, tx, held); err != nil {
			return false, err
		}
	} else {
		if r.State.Status.Terminal() {
			c.flagged = false
			if err := s.flush(ctx, tx, c); err != nil {
				return false, err
			}
			return false, clearWork(ctx, tx, id, r.State.Seq)
		}
		e = kernel.Event{Kind: kernel.EventContinue}
		if task, out, found := p.inlineTask(&r.State); found {
			e = kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: task, Output: out}
		}
	}
	_, stored, err := s.applyEvent(ctx, tx, r, p, e, c)
	c.flagged = stored
	if err != nil {
		if kernel.ErrorCode(err) == "" {
			return false, err
		}
		if err := s.flush(ctx, tx, c); err != nil {
			return false, err
		}
		// Refused (a held event that no longer applies, nothing to
		// continue, a stale task): dropped, with a note.
		s.log.Debug("engine: event refused", "run", id, "kind", e.Kind, "err", err)
		if err := writeLog(ctx, tx, id, logLine{At: s.timestamp(), Seq: r.State.Seq, Level: "warn", Type: "event_refused",
			Message: fmt.Sprintf("%s refused: %v", e.Kind, err)}); err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
		if e.Kind == kernel.EventTaskCompleted && kernel.ErrorCode(err) == kernel.CodeValidation {
			// A built-in step's output that its schema refuses fails the
			// task with OUTPUT_INVALID, not retried, as the http adapter's
			// does (docs/platform-api.md, "Executors"): no one else would
			// ever complete it. The message names no value (the output may
			// hold secrets); the event_refused line above says why.
			f := kernel.Event{Kind: kernel.EventTaskFailed, TaskID: e.TaskID,
				Error: &kernel.TaskError{Code: kernel.ErrCodeOutputInvalid, Message: "the output does not match the output schema"}}
			_, stored, ferr := s.applyEvent(ctx, tx, r, p, f, c)
			if ferr == nil {
				c.flagged = stored
				return true, nil
			}
			if kernel.ErrorCode(ferr) == "" {
				return false, ferr
			}
			s.log.Warn("engine: the failure of a refused output was refused too", "run", id, "task", e.TaskID, "err", ferr)
			if err := writeLog(ctx, tx, id, logLine{At: s.timestamp(), Seq: r.State.Seq, Level: "warn", Type: "event_refused",
				Message: fmt.Sprintf("%s refused: %v", f.Kind, ferr)}); err != nil {
				return false, err
			}
		}
		return false, clearWork(ctx, tx, id, r.State.Seq)
	}
	return true, nil
}

// fire feeds timer_fired for the run's first due timer in DueOrder; the
// kernel processes every timer due at that time. A timer the kernel no
// longer has (already processed) is dropped.
func (s *Service) fire(ctx context.Context, id string) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		r, p, err := s.load(ctx, tx, id)
		if errors.Is(err, errLegacy) {
			return s.skipLegacy(ctx, tx, id)
		}
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
	rows, err := timerIDs(ctx, tx, r.ID)
	if err != nil {
		return err
	}
	for _, t := range rows {
		if _, ok := r.State.Timers[t]; ok && !r.State.Status.Terminal() {
			continue
		}
		if err := deleteTimer(ctx, tx, r.ID, t); err != nil {
			return err
		}
	}
	return nil
}
