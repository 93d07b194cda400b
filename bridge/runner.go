package bridge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/bridge/bridge/provider"
)

// Causes with which a running turn's context is cancelled.
var (
	errPaused    = errors.New("paused by the client")
	errCancelled = errors.New("cancelled by the client")
	errTimeout   = errors.New("job wall-clock limit reached")
	errInactive  = errors.New("agent inactive")
)

// scheduler starts queued jobs up to the concurrency limit.
type scheduler struct {
	s     *Service
	slots int
	wake  chan struct{}

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	recs    map[string]*recorder // running turns' recorders
	wg      sync.WaitGroup
}

func newScheduler(s *Service, slots int) *scheduler {
	return &scheduler{s: s, slots: slots, wake: make(chan struct{}, 1), running: map[string]context.CancelCauseFunc{}, recs: map[string]*recorder{}}
}

// kick asks the loop to look for queued work now.
func (sc *scheduler) kick() {
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

func (sc *scheduler) loop(ctx context.Context) {
	// The ticker is a safety net; kick does the real work.
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		sc.fill(ctx)
		select {
		case <-ctx.Done():
			return
		case <-sc.wake:
		case <-t.C:
		}
	}
}

func (sc *scheduler) wait() { sc.wg.Wait() }

// stop cancels a running turn with cause; it reports whether one was running.
func (sc *scheduler) stop(jobID string, cause error) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if cancel, ok := sc.running[jobID]; ok {
		cancel(cause)
		return true
	}
	return false
}

func (sc *scheduler) fill(ctx context.Context) {
	for ctx.Err() == nil {
		sc.mu.Lock()
		free := sc.slots - len(sc.running)
		busy := make([]any, 0, len(sc.running))
		for id := range sc.running {
			busy = append(busy, id)
		}
		sc.mu.Unlock()
		if free <= 0 {
			return
		}
		ids, err := sc.queued(ctx, free+len(busy))
		if err != nil {
			sc.s.log.Error("read queued jobs", "err", err)
			return
		}
		started := 0
		for _, id := range ids {
			if started == free {
				break
			}
			if sc.isRunning(id) {
				continue
			}
			if sc.start(ctx, id) {
				started++
			}
		}
		if started == 0 {
			return
		}
	}
}

func (sc *scheduler) isRunning(id string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	_, ok := sc.running[id]
	return ok
}

func (sc *scheduler) queued(ctx context.Context, n int) ([]string, error) {
	return sc.s.jobIDsIn(ctx, StateQueued, n)
}

// start claims a queued job and runs its next turn in a goroutine.
func (sc *scheduler) start(ctx context.Context, id string) bool {
	if !sc.reserve(id) {
		return false
	}
	return sc.launch(ctx, id, nil, nil)
}

// reserve takes a slot for id; false when none is free or id runs already.
func (sc *scheduler) reserve(id string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, busy := sc.running[id]; busy || len(sc.running) >= sc.slots {
		return false
	}
	sc.running[id] = func(error) {} // replaced by launch
	return true
}

func (sc *scheduler) release(id string) {
	sc.mu.Lock()
	delete(sc.running, id)
	delete(sc.recs, id)
	sc.mu.Unlock()
}

// flush queues what a running turn's recorder holds, so that a client's
// pause or cancel, queued next, follows the agent's output before it in
// the audit log.
func (sc *scheduler) flush(jobID string) {
	sc.mu.Lock()
	r := sc.recs[jobID]
	sc.mu.Unlock()
	if r != nil {
		r.flush()
	}
}

// startNow starts a job whose creation is still being committed: its start
// is queued behind the creation on the same writer and shares its commit.
// created yields the creation's result; startNow always consumes it and
// returns its error. It reports started=false (the job stays queued for the
// scheduler) when no slot is free.
//
// first is what the start transaction of a job just created reads
// (firstTurn): the agent starts from it at once, while the creation and
// the start run and commit, instead of after their SQL.
func (sc *scheduler) startNow(ctx context.Context, id string, created <-chan error, first launched) (started bool, err error) {
	if !sc.reserve(id) {
		return false, <-created
	}
	var createErr error
	started = sc.launch(ctx, id, func() error {
		createErr = <-created
		return createErr
	}, &first)
	return started, createErr
}

// launched is what a turn's start transaction read: the job as started,
// its next message and its last tool observation's seq.
type launched struct {
	job     Job
	msg     string
	hasMsg  bool
	toolSeq int
}

// startCommit is the outcome of a turn's start commit (with its job's
// creation, for a chat completion). The agent starts while it commits;
// nothing of the turn is written before it is known to have committed.
type startCommit struct {
	done chan struct{}
	err  error
	// redo is what the start transaction read when it differs from what
	// an agent started before it ran was given (launch's first): that
	// agent is killed and records nothing (err), and the turn runs again
	// from redo, so the job, started by the commit, never stays running
	// without an agent.
	redo *launched
}

// committedStart is the start of a turn known to have committed.
func committedStart() *startCommit {
	c := &startCommit{done: make(chan struct{})}
	close(c.done)
	return c
}

func (c *startCommit) wait() error {
	<-c.done
	return c.err
}

// errStartFailed ends a turn whose start did not commit.
var errStartFailed = errors.New("the turn's start was not committed")

// firstTurn is what the start transaction of job, created with its prompt
// as its only message and not yet started, reads: the job running its
// first attempt, the prompt, no tool observation.
func firstTurn(job Job) launched {
	job.State = StateRunning
	return launched{job: job, msg: job.Prompt, hasMsg: true}
}

// sameTurn reports whether the start transaction read what the turn
// started with (first): the message and the attempt it belongs to.
func (l launched) sameTurn(first launched) bool {
	return l.hasMsg == first.hasMsg && l.msg == first.msg && l.job.Attempt == first.job.Attempt && l.toolSeq == first.toolSeq
}

// launch moves a reserved job to running and runs its turn. Registering the
// cancel function before the state changes means a pause or cancel that
// sees the job running always finds it.
//
// The agent process starts as soon as the start transaction has run, while
// it commits: the fsync overlaps the process start instead of preceding it
// (BENCHMARKS.md, "Chat Completions: what a turn waits for"). The turn
// writes nothing before the commit is confirmed (its writes are queued
// after it on the same writer), and a start that fails to commit kills the
// process and records nothing.
//
// first, when given, is what the start transaction will read (startNow):
// the agent then starts before the transaction (and the job's creation)
// even runs, in a context of its own (earlyCtx) so that launch can kill it
// alone when the transaction read otherwise and the turn must run again
// (startCommit.redo).
func (sc *scheduler) launch(ctx context.Context, id string, created func() error, first *launched) bool {
	s := sc.s
	turnCtx, cancel := context.WithCancelCause(ctx)
	earlyCtx, cancelEarly := context.WithCancelCause(turnCtx)
	sc.mu.Lock()
	sc.running[id] = cancel
	sc.mu.Unlock()
	ran := make(chan launched, 1)
	var ev pending
	startErr := s.db.Go(ctx, func(tx *sql.Tx) error {
		ev = pending{}
		var l launched
		var err error
		l.job, err = s.changeTx(ctx, tx, &ev, Principal{Owner: true}, id, ActStart, func(tx *sql.Tx, j *Job, _ *pending) error {
			if j.StartedAt == nil {
				j.StartedAt = ptrTime(s.now().UTC())
			}
			j.FinishedAt = nil
			var err error
			l.msg, l.hasMsg, err = takeMessage(tx, *j)
			return err
		})
		if err == nil {
			l.toolSeq, err = lastToolSeq(ctx, tx, id)
		}
		if err != nil {
			return err
		}
		// A transaction run again (store.DB.commitShared) reads the same:
		// the first reading is the one the turn uses.
		select {
		case ran <- l:
		default:
		}
		return nil
	}, func() { s.pub.enqueue(ev.events) })
	commit := &startCommit{done: make(chan struct{})}
	sc.wg.Add(1)
	go func() {
		defer sc.wg.Done()
		defer func() {
			sc.release(id)
			cancelEarly(nil)
			cancel(nil)
			sc.kick()
		}()
		var l launched
		switch {
		case first != nil:
			l = *first // launch checks it against what the transaction read
		default:
			select {
			case l = <-ran:
			case <-commit.done:
				select {
				case l = <-ran:
				default:
					return // paused or cancelled in between, or never created
				}
			}
		}
		run := true
		select {
		case <-commit.done:
			// A start that did not commit runs nothing of the turn.
			run = commit.err == nil
		default: // still committing: the turn starts meanwhile and waits before recording
		}
		if run {
			sc.runTurn(ctx, earlyCtx, l, commit)
		}
		if commit.wait() != nil && commit.redo != nil {
			// The agent started from first was killed and recorded
			// nothing; the committed start's turn runs from what it read.
			sc.runTurn(ctx, turnCtx, *commit.redo, committedStart())
		}
	}()
	err := <-startErr
	if created != nil {
		if cerr := created(); cerr != nil {
			err = cerr
		}
	}
	commit.err = err
	var unread bool
	if err == nil && first != nil {
		// The agent started from first; its turn is recorded only if the
		// transaction read the same (it always does for a job it just
		// created: firstTurn). Otherwise the start has committed all the
		// same (the job is running), so the agent is killed and the turn
		// runs again from what the transaction read.
		select {
		case l := <-ran:
			if !l.sameTurn(*first) {
				s.log.Warn("a turn started early read other input; it runs again from its job's", "job", id)
				commit.redo = &l
				commit.err = errStartFailed
			}
		default:
			// The transaction committed without handing over what it
			// read (store.DB.Go never does that): the job is failed
			// below rather than left running without an agent.
			unread = true
			commit.err = errStartFailed
		}
	}
	// The turn is cancelled before the failure is announced, so a turn
	// that sees commit.done closed with an error never starts an agent.
	if err != nil {
		cancel(errStartFailed)
	} else if commit.err != nil {
		cancelEarly(errStartFailed)
	}
	close(commit.done)
	if unread {
		s.finishTurn(first.job, ActFail, &JobError{Code: JobErrUnavailable, Message: "the turn's start did not read its input"}, "", nil)
	}
	return err == nil
}

// runTurn gives the job's next pending message to the agent and records
// everything until the turn ends.
func (sc *scheduler) runTurn(daemonCtx, ctx context.Context, l launched, commit *startCommit) {
	s := sc.s
	job := l.job
	prof, ok := s.profiles[job.Profile]
	if !ok || !l.hasMsg {
		if commit.wait() != nil {
			return
		}
		if !ok {
			s.finishTurn(job, ActFail, &JobError{Code: JobErrUnavailable, Message: fmt.Sprintf("profile %q is no longer configured", job.Profile)}, "", nil)
			return
		}
		// Nothing left to say (a paused turn that had already finished).
		s.finishTurn(job, ActSucceed, nil, job.resultText, nil)
		return
	}
	runCtx, cancelTimeout := context.WithTimeoutCause(ctx, s.cfg.JobTimeout.D(), errTimeout)
	defer cancelTimeout()
	watchCtx, cancelWatch := context.WithCancelCause(runCtx)
	defer cancelWatch(nil)
	rec := newRecorder(s, job, l.toolSeq, commit)
	sc.mu.Lock()
	sc.recs[job.ID] = rec
	sc.mu.Unlock()
	go watchdog(watchCtx, cancelWatch, &rec.lastActivity, s.cfg.InactivityTimeout.D())

	workDir := job.WorkDir
	if workDir == "" {
		workDir = prof.workDir
	}
	req := provider.Request{Prompt: l.msg, WorkDir: workDir, SessionID: job.SessionID}
	req.Model, req.MaxTurns = agentStepOptions(job)
	closeTools, err := s.openTurn(job, &req)
	if err != nil {
		s.log.Warn("serve the agent step's tools", "job", job.ID, "err", err)
	}
	defer closeTools()
	prov := rec.resolve(prof.provider)
	res, runErr := prov.Run(watchCtx, req, rec.emit)
	rec.flushTools()
	// Writes queued before the outcome commit before it; wait for them
	// whichever way the turn ends.
	defer rec.wait()
	cause := context.Cause(watchCtx)
	if commit.wait() != nil {
		return // the process was killed (errStartFailed); nothing is recorded
	}

	switch {
	case daemonCtx.Err() != nil:
		// Shutting down: leave the job running; the next start marks it
		// interrupted, and nothing is written with a cancelled context.
		// What the agent said is kept.
		rec.flush()
	case errors.Is(cause, errPaused):
		s.requeueMessage(job, rec.take()) // the interrupted input runs again on resume
	case errors.Is(cause, errCancelled):
		// Already cancelled by the request that stopped it.
		rec.flush()
	case errors.Is(cause, errTimeout):
		s.finishTurn(job, ActFail, &JobError{Code: JobErrTimeout, Message: fmt.Sprintf("the turn ran longer than %s", s.cfg.JobTimeout.D())}, "", rec.take())
	case errors.Is(cause, errInactive):
		s.finishTurn(job, ActFail, &JobError{Code: JobErrInactive, Message: fmt.Sprintf("the agent printed nothing for %s", s.cfg.InactivityTimeout.D())}, "", rec.take())
	case runErr != nil:
		s.finishTurn(job, ActFail, runError(prov.Name(), runErr), "", rec.take())
	case res.Failure != "":
		// The CLI's own words ("Not logged in · Please run /login") are
		// not an answer: they go to the job error only.
		s.finishTurn(job, ActFail, failureError(prov.Name(), res.Failure, res.Text), "", rec.take())
	case res.IsError:
		s.finishTurn(job, ActFail, &JobError{Code: JobErrAgent, Message: excerpt(res.Text, 2000)}, res.Text, rec.take())
	default:
		s.finishTurn(job, ActSucceed, nil, res.Text, rec.take())
	}
}

// runError turns a provider's failure to reach a result into a job error.
func runError(name string, err error) *JobError {
	var exit *provider.ExitError
	var stall *provider.StallError
	switch {
	case errors.As(err, &stall):
		if stall.Failure != "" {
			return failureError(name, stall.Failure, err.Error())
		}
		return &JobError{Code: JobErrUnavailable, Message: excerpt(err.Error()+
			"; check the network and that the CLI works on its own (bridge.stall-timeout)", 2000)}
	case errors.As(err, &exit):
		return &JobError{Code: JobErrCrashed, Message: err.Error()}
	}
	return &JobError{Code: JobErrUnavailable, Message: err.Error()}
}

// failureError is the job error of a turn whose agent named the cause of
// its failure. The message says what to do, docs/bridge-api.md "Jobs".
func failureError(name, failure, said string) *JobError {
	said = excerpt(said, 1000)
	if failure == provider.FailureRateLimit {
		return &JobError{Code: JobErrRateLimited, Message: fmt.Sprintf(
			"%s: the provider refused the request for rate or usage limits; retry the job later. The agent said: %s", name, said)}
	}
	login := "run `claude /login` (or give the daemon ANTHROPIC_API_KEY)"
	if name == provider.NameCodex {
		login = "run `codex login`"
	}
	return &JobError{Code: JobErrAuth, Message: fmt.Sprintf(
		"%s is not logged in or its login was refused: %s as the user the bridge runs as, then retry the job. The agent said: %s", name, login, said)}
}

// watchdog cancels a turn whose agent has been silent for longer than limit.
func watchdog(ctx context.Context, cancel context.CancelCauseFunc, last *atomic.Int64, limit time.Duration) {
	tick := limit / 4
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, last.Load())) > limit {
				cancel(errInactive)
				return
			}
		}
	}
}

func (s *Service) requeueMessage(job Job, recorded []recordFn) {
	err := s.endTurn(context.Background(), job.ID, recorded, func(tx *sql.Tx, _ *pending) error {
		return undeliverLastMessage(tx, job)
	})
	if err != nil {
		s.log.Error("requeue message", "job", job.ID, "err", err)
	}
}

// endTurn runs a turn's last recorded writes and then end, in one
// transaction; end has a savepoint of its own, so when it fails what the
// agent said is still committed.
func (s *Service) endTurn(ctx context.Context, jobID string, recorded []recordFn, end recordFn) error {
	var endErr error
	err := s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		if err := s.recordEach(tx, ev, jobID, recorded); err != nil {
			return err
		}
		var lost error
		endErr, lost = inSavepoint(tx, ev, end)
		return lost
	})
	if err == nil {
		err = endErr
	}
	return err
}

// finishTurn records a turn's outcome, in the same transaction as the
// turn's last recorded writes (so one commit, not two, precedes a chat
// completion's answer). When more messages wait, the job goes back to the
// queue instead of ending.
func (s *Service) finishTurn(job Job, act Action, jobErr *JobError, text string, recorded []recordFn) {
	ctx := context.Background()
	var final Job
	err := s.endTurn(ctx, job.ID, recorded, func(tx *sql.Tx, ev *pending) error {
		var err error
		final, err = s.saveOutcome(ctx, tx, ev, job, act, jobErr, text)
		return err
	})
	if err != nil {
		s.log.Error("record turn outcome", "job", job.ID, "err", err)
		return
	}
	s.waiters.finish(final)
	s.sched.kick()
}

// saveOutcome writes a turn's outcome and answers the job as it is now.
func (s *Service) saveOutcome(ctx context.Context, tx *sql.Tx, ev *pending, job Job, act Action, jobErr *JobError, text string) (Job, error) {
	cur, err := s.getJob(ctx, txq{tx}, Principal{Owner: true}, job.ID)
	if err != nil {
		return cur, err
	}
	if cur.State != StateRunning || cur.Attempt != job.Attempt {
		// Paused or cancelled while the agent finished: keep what the
		// client decided, but keep the answer too.
		return cur, s.saveAssistant(tx, cur, text, ev)
	}
	waiting, err := pendingMessages(tx, cur)
	if err != nil {
		return cur, err
	}
	if act == ActSucceed && waiting > 0 {
		act = ActRequeue
	}
	from := cur.State
	if cur.State, err = Next(cur.State, act); err != nil {
		return cur, err
	}
	cur.UpdatedAt = s.now().UTC()
	cur.LastError = jobErr
	if text != "" || act != ActSucceed {
		cur.resultText = text
	}
	if cur.State.Terminal() {
		cur.FinishedAt = ptrTime(cur.UpdatedAt)
	}
	if err := s.saveAssistant(tx, cur, text, ev); err != nil {
		return cur, err
	}
	if jobErr != nil {
		if err := s.audit(tx, cur.ID, cur.Attempt, "job.error", jobErr, nil); err != nil {
			return cur, err
		}
	}
	return cur, s.saveState(tx, &cur, from, act, ev)
}

// saveAssistant stores the agent's final answer of a turn as a message.
func (s *Service) saveAssistant(tx *sql.Tx, j Job, text string, ev *pending) error {
	if text == "" {
		return nil
	}
	m, err := insertMessage(tx, j, "assistant", text, "final", s.now().UTC())
	if err != nil {
		return err
	}
	ev.add(j.Client, j.ID, "message.created", m)
	return nil
}

// recorder turns provider events into audit entries, tool observations,
// usage and live events.
//
// It does not wait for each write. It holds them for up to recordDelay and
// then queues them as one write; the turn's outcome takes what is still
// held into its own transaction. An agent's chatter thus costs one fsync
// per group commit instead of one per line, and its last lines (answer,
// usage, result) usually commit with the outcome: one fsync before a chat
// completion's answer instead of two (BENCHMARKS.md, "Chat Completions:
// what a turn waits for").
type recorder struct {
	s            *Service
	job          Job
	lastActivity atomic.Int64
	tools        map[string]int // provider call id -> tool seq
	toolSeq      int            // the job's last tool seq (one turn runs at a time)
	start        *startCommit   // nothing is written before the turn's start commits

	mu    sync.Mutex
	held  []recordFn
	timer *time.Timer
	last  <-chan error
}

// recordFn is one recorded write of a turn.
type recordFn func(tx *sql.Tx, ev *pending) error

// recordDelay is how long the recorder holds a turn's writes: the audit
// log and the event stream show the agent's output at most this much
// later (the chat completion's stream is fed directly, not from them).
const recordDelay = 20 * time.Millisecond

// recordBatch bounds how many writes the recorder holds.
const recordBatch = 256

func newRecorder(s *Service, job Job, toolSeq int, start *startCommit) *recorder {
	r := &recorder{s: s, job: job, tools: map[string]int{}, toolSeq: toolSeq, start: start}
	r.lastActivity.Store(time.Now().UnixNano())
	return r
}

// write holds one recording write; it is queued within recordDelay.
func (r *recorder) write(fn recordFn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = append(r.held, fn)
	switch {
	case len(r.held) >= recordBatch:
		r.queueLocked()
	case r.timer == nil:
		r.timer = time.AfterFunc(recordDelay, r.flush)
	}
}

// flush queues the held writes now.
func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queueLocked()
}

// take hands the held writes to a caller that runs them, in order, at the
// start of its own transaction (recordEach).
func (r *recorder) take() []recordFn {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopTimerLocked()
	held := r.held
	r.held = nil
	return held
}

func (r *recorder) stopTimerLocked() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// queueLocked queues the held writes as one write, behind everything the
// turn queued before; a turn whose start did not commit writes nothing.
func (r *recorder) queueLocked() {
	r.stopTimerLocked()
	held := r.held
	r.held = nil
	if len(held) == 0 || r.start.wait() != nil {
		return
	}
	var ev pending
	r.last = r.s.db.Go(context.Background(), func(tx *sql.Tx) error {
		ev = pending{}
		return r.s.recordEach(tx, &ev, r.job.ID, held)
	}, func() { r.s.pub.enqueue(ev.events) })
}

// wait blocks until everything queued so far is committed.
func (r *recorder) wait() {
	r.mu.Lock()
	last := r.last
	r.last = nil
	r.mu.Unlock()
	if last != nil {
		if err := <-last; err != nil {
			r.s.log.Error("record agent events", "job", r.job.ID, "err", err)
		}
	}
}

// recordEach runs a turn's recorded writes in order, each in a savepoint
// of its own: one that fails is logged and undone alone, as if it had been
// a write of its own. It fails only when the transaction itself is gone.
func (s *Service) recordEach(tx *sql.Tx, ev *pending, jobID string, fns []recordFn) error {
	for _, fn := range fns {
		err, lost := inSavepoint(tx, ev, fn)
		if lost != nil {
			return lost
		}
		if err != nil {
			s.log.Error("record agent events", "job", jobID, "err", err)
		}
	}
	return nil
}

// inSavepoint runs fn in a savepoint of tx and undoes it (its events too)
// when it fails. lost is the error of a savepoint that could not be made,
// released or rolled back: the transaction is then unusable.
func inSavepoint(tx *sql.Tx, ev *pending, fn recordFn) (err, lost error) {
	mark := len(ev.events)
	if _, err := tx.Exec("SAVEPOINT turn"); err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	if err = callRecorded(tx, ev, fn); err != nil {
		ev.events = ev.events[:mark]
		if _, rbErr := tx.Exec("ROLLBACK TO turn; RELEASE turn"); rbErr != nil {
			return err, fmt.Errorf("roll back to savepoint: %w", rbErr)
		}
		return err, nil
	}
	if _, err := tx.Exec("RELEASE turn"); err != nil {
		return nil, fmt.Errorf("release savepoint: %w", err)
	}
	return nil, nil
}

// callRecorded turns a panic of one recorded write into its error, so it
// costs only that write, not the turn's others.
func callRecorded(tx *sql.Tx, ev *pending, fn recordFn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("record write panicked: %v", p)
		}
	}()
	return fn(tx, ev)
}

// resolve returns the provider this turn runs with. An auto profile looks
// for the CLIs now, so one installed since the daemon started is used; the
// job then names the provider that really ran (echo included, which marks
// its answer as a demo).
func (r *recorder) resolve(p provider.Provider) provider.Provider {
	if a, ok := p.(*provider.Auto); ok {
		p = a.Pick()
	}
	if name, j := p.Name(), r.job; name != j.Provider {
		r.write(func(tx *sql.Tx, ev *pending) error {
			if err := setJobProvider(tx, j.ID, name); err != nil {
				return err
			}
			return r.s.audit(tx, j.ID, j.Attempt, "job.provider", map[string]string{"from": j.Provider, "to": name}, nil)
		})
	}
	return p
}

// emit is called by the provider for every output line, in order.
func (r *recorder) emit(e provider.Event) {
	r.lastActivity.Store(time.Now().UnixNano())
	s, j := r.s, r.job
	switch e.Kind {
	case provider.EventSession:
		r.write(func(tx *sql.Tx, ev *pending) error {
			if err := setJobSession(tx, j, e.SessionID); err != nil {
				return err
			}
			return s.audit(tx, j.ID, j.Attempt, "agent.session", map[string]string{"sessionId": e.SessionID}, nil)
		})
	case provider.EventMessage, provider.EventReasoning:
		// A subagent's text (ParentToolID set) belongs to its tool call:
		// it is recorded under it and never streamed as the answer.
		if e.Kind == provider.EventMessage && e.ParentToolID == "" {
			s.waiters.delta(j.ID, e.Text)
		}
		r.write(func(tx *sql.Tx, ev *pending) error {
			ev.add(j.Client, j.ID, "agent."+string(e.Kind), nested(e, map[string]any{"text": e.Text}))
			return s.audit(tx, j.ID, j.Attempt, "agent."+string(e.Kind), nested(e, map[string]any{"text": excerpt(e.Text, 200)}), map[string]string{"text": e.Text})
		})
	case provider.EventToolCall:
		r.toolCall(e.Tool, e.ParentToolID)
	case provider.EventToolResult:
		r.toolResult(e.Tool, e.ParentToolID)
	case provider.EventRetry:
		r.write(func(tx *sql.Tx, ev *pending) error {
			summary := nested(e, map[string]any{"text": excerpt(e.Text, 200)})
			if e.Code != "" {
				summary["code"] = e.Code
			}
			if e.Retry != nil {
				summary["attempt"], summary["maxRetries"], summary["delayMs"], summary["status"] = e.Retry.Attempt, e.Retry.MaxRetries, e.Retry.DelayMS, e.Retry.Status
			}
			return s.audit(tx, j.ID, j.Attempt, "agent.retry", summary, map[string]string{"text": e.Text})
		})
	case provider.EventDenied:
		if e.Tool == nil {
			return
		}
		r.write(func(tx *sql.Tx, ev *pending) error {
			files := e.Tool.Files
			if files == nil {
				files = []string{}
			}
			return s.audit(tx, j.ID, j.Attempt, "agent.permission_denied",
				map[string]any{"callId": e.Tool.ID, "name": e.Tool.Name, "files": files}, map[string]any{"input": e.Tool.Input})
		})
	case provider.EventUsage, provider.EventResult:
		if e.Usage == nil && e.Kind == provider.EventUsage {
			return
		}
		r.write(func(tx *sql.Tx, ev *pending) error {
			// The usage event and the result repeat the same turn total:
			// count it once.
			if e.Usage != nil && e.Kind == provider.EventUsage {
				if err := addJobUsage(tx, j.ID, *e.Usage); err != nil {
					return err
				}
			}
			summary := map[string]any{"usage": e.Usage}
			if e.Kind == provider.EventResult {
				summary["isError"] = e.IsError
				summary["text"] = excerpt(e.Text, 200)
			}
			return s.audit(tx, j.ID, j.Attempt, "agent."+string(e.Kind), summary, map[string]any{"text": e.Text, "usage": e.Usage})
		})
	case provider.EventError, provider.EventLog:
		r.write(func(tx *sql.Tx, ev *pending) error {
			summary := nested(e, map[string]any{"text": excerpt(e.Text, 200)})
			if e.Code != "" {
				summary["code"] = e.Code // the agent's error class, e.g. authentication_failed
			}
			return s.audit(tx, j.ID, j.Attempt, "agent."+string(e.Kind), summary, map[string]string{"text": e.Text})
		})
	case provider.EventRaw:
		// Lines the parser did not understand: kept whole in the audit log.
		r.write(func(tx *sql.Tx, ev *pending) error {
			var payload any = map[string]string{"text": e.Text}
			if len(e.Raw) > 0 {
				payload = map[string]any{"raw": e.Raw}
			}
			return s.audit(tx, j.ID, j.Attempt, "agent.raw", map[string]int{"bytes": len(e.Raw) + len(e.Text)}, payload)
		})
	}
}

// nested adds parentToolUseId to an audit summary or live event of a
// subagent's event, so it shows under the tool call that started it.
func nested(e provider.Event, m map[string]any) map[string]any {
	if e.ParentToolID != "" {
		m["parentToolUseId"] = e.ParentToolID
	}
	return m
}

func (r *recorder) toolCall(t *provider.ToolEvent, parent string) {
	if t == nil {
		return
	}
	s, j := r.s, r.job
	r.toolSeq++
	seq := r.toolSeq
	r.tools[t.ID] = seq
	files := t.Files
	if files == nil {
		files = []string{}
	}
	input := string(t.Input)
	if input == "" {
		input = "null"
	}
	now := s.now().UTC()
	r.write(func(tx *sql.Tx, ev *pending) error {
		if err := insertTool(tx, j, seq, t.ID, t.Name, input, files, now, parent); err != nil {
			return err
		}
		e := provider.Event{ParentToolID: parent}
		ev.add(j.Client, j.ID, "tool.started", nested(e, map[string]any{"seq": seq, "name": t.Name, "files": files}))
		return s.audit(tx, j.ID, j.Attempt, "tool.call", nested(e, map[string]any{"seq": seq, "name": t.Name, "callId": t.ID, "files": files}), map[string]any{"input": t.Input})
	})
}

func (r *recorder) toolResult(t *provider.ToolEvent, parent string) {
	if t == nil {
		return
	}
	s, j := r.s, r.job
	seq, known := r.tools[t.ID]
	if !known {
		// A result without a call we saw: record it as its own observation.
		r.toolCall(&provider.ToolEvent{ID: t.ID, Name: t.Name, Files: t.Files}, parent)
		seq = r.tools[t.ID]
	}
	finished := s.now()
	r.write(func(tx *sql.Tx, ev *pending) error {
		status := "succeeded"
		var errText *string
		if t.IsError {
			status = "failed"
			errText = ptr(excerpt(t.Output, 2000))
		}
		if err := finishTool(tx, j.ID, seq, t.Output, status, errText, t.Files, finished); err != nil {
			return err
		}
		e := provider.Event{ParentToolID: parent}
		ev.add(j.Client, j.ID, "tool.finished", nested(e, map[string]any{"seq": seq, "name": t.Name, "status": status}))
		return s.audit(tx, j.ID, j.Attempt, "tool.result", nested(e, map[string]any{"seq": seq, "name": t.Name, "status": status, "outputBytes": len(t.Output)}), map[string]any{"output": t.Output, "isError": t.IsError})
	})
}

// flushTools marks calls that never got a result when the turn ended.
func (r *recorder) flushTools() {
	now := r.s.now()
	r.write(func(tx *sql.Tx, _ *pending) error {
		return abandonTools(tx, r.job, now)
	})
}
