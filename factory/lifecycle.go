package factory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/httpx"
)

// recover settles the runs a previous process left: a running run with an
// intent but no receipt needs reconciliation (its effect is unknown and is
// never re-run silently); one without such an intent stopped between steps
// and fails as interrupted; a succeeded run whose retained workspace is
// missing or changed needs reconciliation too.
func (s *Service) recover(ctx context.Context) error {
	running, err := runsInState(ctx, s.db.Reader(), StateRunning, StateSucceeded)
	if err != nil {
		return err
	}
	g, gerr := s.gitTool()
	for _, row := range running {
		var state string
		var rerr *RunError
		switch {
		case row.State == StateRunning:
			entries, err := listJournal(ctx, s.db.Reader(), row.ID)
			if err != nil {
				return err
			}
			state, rerr = StateFailed, &RunError{Code: ErrCodeInterrupted, Message: "the daemon stopped between two steps of the run; nothing was in flight; retry it"}
			if open := openIntents(entries); len(open) > 0 {
				e := entries[open[0]-1]
				state, rerr = StateNeedsReconciliation, &RunError{Code: ErrCodeUnacknowledged,
					Message: fmt.Sprintf("journal entry %d (intent %s) has no receipt: the daemon stopped while it was in flight, so its effect is unknown; inspect the workspace, then reconcile (and retry if needed)", e.Seq, e.Action)}
			}
		case row.Mode != ModeTest && row.CheckpointRevision != "" && gerr == nil:
			problem := g.checkWorkspace(ctx, row.Workspace, row.CheckpointRevision)
			if problem == "" {
				continue
			}
			state, rerr = StateNeedsReconciliation, &RunError{Code: ErrCodeWorkspaceChanged, Message: problem + "; it is not reported as accepted source until reconciled"}
		default:
			continue
		}
		r := row.Run
		err := s.db.Write(ctx, func(tx *sql.Tx) error {
			now := s.now()
			u := runUpdate{State: &state, Error: rerr}
			if state == StateFailed {
				u.Finished = true
				if err := closeOpenTasks(ctx, tx, r.ID, TaskSkipped, now); err != nil {
					return err
				}
			}
			if err := updateRun(ctx, tx, r.ID, u, now); err != nil {
				return err
			}
			return insertOutbox(ctx, tx, runEvent(&r, state, rerr, now))
		})
		if err != nil {
			return err
		}
		s.log.Warn("factory: run left by the previous process", "run", r.ID, "state", state, "reason", rerr.Message)
	}
	return nil
}

// Cancel stops a queued or running run: a running one has its agent and
// checks' process groups terminated, and Cancel waits until it has ended.
// What already happened (commits in the workspace) stays.
func (s *Service) Cancel(ctx context.Context, id string) (Run, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Run{}, errNotFound("run " + quoteShort(id))
	}
	s.mu.Lock()
	a := s.active[id]
	if a != nil {
		a.cancel(errCancelled)
		s.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			return Run{}, ctx.Err()
		}
		return s.get(ctx, id, false)
	}
	// Not active: only a queued run can be cancelled, and the scheduler
	// cannot pick it while s.mu is held.
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		row, err := getRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if row.State != StateQueued && row.State != StatePaused {
			return errorf(EConflict, "run %s is %s; only a queued, running or paused run can be cancelled", id, row.State)
		}
		now := s.now()
		rerr := &RunError{Code: ErrCodeCancelled, Message: "cancelled by the operator while " + row.State}
		if err := updateRun(ctx, tx, id, runUpdate{State: ptr(StateCancelled), Finished: true, Error: rerr}, now); err != nil {
			return err
		}
		if err := closeOpenTasks(ctx, tx, id, TaskCancelled, now); err != nil {
			return err
		}
		return insertOutbox(ctx, tx, runEvent(&row.Run, StateCancelled, rerr, now))
	})
	s.mu.Unlock()
	if err != nil {
		return Run{}, err
	}
	s.pokeOutbox()
	return s.get(ctx, id, false)
}

// Retry creates a fresh run (a new clone of the repository's current HEAD)
// with the settings of a finished one.
func (s *Service) Retry(ctx context.Context, id string) (Run, error) {
	row, err := s.readRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	if !Terminal(row.State) && row.State != StateNeedsReconciliation {
		return Run{}, errorf(EConflict, "run %s is %s; retry a finished run (or cancel this one first)", id, row.State)
	}
	p := row.Policy
	req := CreateRequest{Repo: filepath.Join(row.Repo, filepath.FromSlash(row.Subdir)), Mode: row.Mode, Instruction: row.Instruction,
		Profile: row.Profile, Verify: p.Verify, VerifyTimeout: time.Duration(p.CommandTimeout).String(), RepairAttempts: &p.RepairAttempts,
		Project: row.Project}
	if row.Profile == "" {
		req.Provider = row.Provider
	}
	return s.create(ctx, req, id)
}

// ReconcileRequest is the body of POST /api/v1/runs/{id}/reconcile.
type ReconcileRequest struct {
	// Note says what the operator found and decided; it is journalled.
	Note string `json:"note"`
}

const maxNote = 2000

// Reconcile resolves a run in needs_reconciliation: each open intent gets a
// reconciliation entry with the operator's note (one entry when the cause
// was the workspace), and the run ends failed with code reconciled; its
// source is not accepted. Retry creates a fresh run.
func (s *Service) Reconcile(ctx context.Context, id string, req ReconcileRequest) (Run, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Run{}, errNotFound("run " + quoteShort(id))
	}
	note := strings.TrimSpace(req.Note)
	if note == "" || len(note) > maxNote {
		return Run{}, fieldErr("note", "is required: 1 to %d bytes saying what was found and decided", maxNote)
	}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		row, err := getRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if row.State != StateNeedsReconciliation {
			return errorf(EConflict, "run %s is %s, not needs_reconciliation", id, row.State)
		}
		entries, err := listJournal(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.now()
		open := openIntents(entries)
		if len(open) == 0 {
			open = []int{0}
		}
		for _, ref := range open {
			data := map[string]any{"note": note, "resolution": "abandoned", "cause": row.Error}
			if _, err := appendJournal(ctx, tx, id, Entry{Kind: KindReconciliation, Action: ActionResolve, Ref: ref, Data: jsonRaw(data), At: now}); err != nil {
				return err
			}
		}
		rerr := &RunError{Code: ErrCodeReconciled, Message: "reconciled by the operator: " + note}
		if err := updateRun(ctx, tx, id, runUpdate{State: ptr(StateFailed), Finished: true, Error: rerr}, now); err != nil {
			return err
		}
		if err := closeOpenTasks(ctx, tx, id, TaskCancelled, now); err != nil {
			return err
		}
		return insertOutbox(ctx, tx, runEvent(&row.Run, StateFailed, rerr, now))
	})
	if err != nil {
		return Run{}, err
	}
	s.pokeOutbox()
	return s.get(ctx, id, false)
}

// ListQuery selects runs.
type ListQuery struct {
	State  string
	Repo   string
	Limit  int
	Cursor string
}

// RunPage is a page of runs, newest first.
type RunPage struct {
	Runs       []Run  `json:"runs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

type listCursor struct {
	After int64 `json:"after"`
}

// List returns runs newest first, without their details.
func (s *Service) List(ctx context.Context, q ListQuery) (RunPage, error) {
	if q.Limit == 0 {
		q.Limit = 20
	}
	if q.Limit < 1 || q.Limit > 100 {
		return RunPage{}, errorf(EBadRequest, "limit must be 1 to 100, got %d", q.Limit)
	}
	if q.State != "" && !contains(States, q.State) {
		return RunPage{}, errorf(EBadRequest, "state must be one of %s, got %q", strings.Join(States, ", "), q.State)
	}
	scope := httpx.CursorScope("runs", q.State, q.Repo)
	var c listCursor
	if q.Cursor != "" {
		if err := s.cursors.Open(scope, q.Cursor, &c); err != nil || c.After <= 0 {
			return RunPage{}, errorf(EBadRequest, "cursor is invalid or was issued for other filters")
		}
	}
	rows, err := s.listVisible(ctx, listFilter{State: q.State, Repo: q.Repo, After: c.After, Limit: q.Limit + 1})
	if err != nil {
		return RunPage{}, err
	}
	page := RunPage{Runs: []Run{}}
	for i, row := range rows {
		if i == q.Limit {
			page.NextCursor, err = s.cursors.Sign(scope, listCursor{After: rows[i-1].seq})
			if err != nil {
				return RunPage{}, err
			}
			break
		}
		r := row.Run
		if r.State == StateRunning && row.currentTask > 0 {
			r.Progress = &Progress{Task: row.currentTask, Command: row.currentCmd}
		}
		page.Runs = append(page.Runs, r)
	}
	return page, nil
}

// listVisible lists the runs the caller may read: all for the owner; for a
// platform principal (principalReader) only runs bound to a project it may
// read, scanning further pages until f.Limit of them are found, so pages
// and cursors work as for the owner.
func (s *Service) listVisible(ctx context.Context, f listFilter) ([]runRow, error) {
	canRead := principalReader(ctx)
	if canRead == nil {
		return listRuns(ctx, s.db.Reader(), f)
	}
	f.Bound = true
	want := f.Limit
	var out []runRow
	for {
		rows, err := listRuns(ctx, s.db.Reader(), f)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if row.Project != nil && canRead(*row.Project) {
				out = append(out, row)
				if len(out) == want {
					return out, nil
				}
			}
		}
		if len(rows) < f.Limit {
			return out, nil
		}
		f.After = rows[len(rows)-1].seq
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Plan returns the plan view of a run.
func (s *Service) Plan(ctx context.Context, id string) (Plan, error) {
	row, err := s.readRun(ctx, id)
	if err != nil {
		return Plan{}, err
	}
	tasks, err := listTasks(ctx, s.db.Reader(), id)
	if err != nil {
		return Plan{}, err
	}
	role := RoleImplementer
	switch row.Mode {
	case ModeMaintenance:
		role = RoleMaintainer
	case ModeTest:
		role = RoleVerifier
	}
	checks := row.checks
	if checks == nil {
		checks = []PlannedCheck{}
	}
	return Plan{RunID: id, Revision: row.PlanRevision, Role: role, Policy: row.Policy, Checks: checks, Tasks: tasks,
		Product:  PlanProduct{Repo: row.Repo, Subdir: row.Subdir, Mode: row.Mode},
		Source:   PlanSource{Revision: row.SourceRevision, Tree: row.SourceTree},
		Provider: PlanProvider{Name: row.Provider, Profile: row.Profile}}, nil
}

// JournalView is the journal of a run with its chain check.
type JournalView struct {
	RunID   string  `json:"run_id"`
	Entries []Entry `json:"entries"`
	JournalSummary
}

// Journal returns a run's journal entries and whether the chain is valid.
func (s *Service) Journal(ctx context.Context, id string) (JournalView, error) {
	row, err := s.readRun(ctx, id)
	if err != nil {
		return JournalView{}, err
	}
	entries, err := listJournal(ctx, s.db.Reader(), id)
	if err != nil {
		return JournalView{}, err
	}
	return JournalView{RunID: id, Entries: entries, JournalSummary: VerifyJournal(id, entries, row.journalCount, row.journalHead)}, nil
}

// Artifact opens a retained artifact of a run: "changes.zip" or
// "changes.patch" (the diff).
func (s *Service) Artifact(ctx context.Context, id, name string) (*os.File, error) {
	row, err := s.readRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if row.Error != nil && row.Error.Code == ErrCodeDiffTooLarge && name == "changes.patch" {
		return nil, errorf(ETooLarge, "the diff of run %s exceeds the 1 MB limit of a run diff and is not served; download changes.zip or inspect the checkpoint %s in %s", id, row.CheckpointRevision, row.Workspace)
	}
	if row.CheckpointRevision == "" {
		return nil, errorf(ENotFound, "run %s has no checkpoint (state %s), so no %s", id, row.State, name)
	}
	f, err := os.Open(filepath.Join(s.runDir(id), "artifacts", name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errorf(ENotFound, "the %s of run %s is no longer in the data directory", name, id)
	}
	return f, err
}

// readFileLimit reads at most limit bytes of a file.
func readFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// readRun reads a run's row; an id that is not a UUID names no run.
func (s *Service) readRun(ctx context.Context, id string) (runRow, error) {
	if _, err := uuid.Parse(id); err != nil {
		return runRow{}, errNotFound("run " + quoteShort(id))
	}
	return getRun(ctx, s.db.Reader(), id)
}

// resumableCodes are the failures after which the retained workspace is a
// sound basis to go on from: nothing judged the work yet, or the agent was
// stopped by its provider, the operator or a shutdown.
var resumableCodes = map[string]bool{
	ErrCodeInterrupted: true, ErrCodeAgentFailed: true, ErrCodeProviderAuth: true,
	ErrCodeProviderQuota: true, ErrCodeProviderRateLimit: true, ErrCodeCancelled: true,
}

// HandoffRequest is the body of POST /api/v1/runs/{id}/handoff: the new
// provider configuration (a profile, or a provider with default settings).
type HandoffRequest struct {
	Provider string `json:"provider,omitempty"`
	Profile  string `json:"profile,omitempty"`
}

// Resume queues a failed or cancelled run again in the same workspace: its
// unfinished tasks are planned again as a new plan revision, after the
// work already done (commits, verification attempts) which is kept.
func (s *Service) Resume(ctx context.Context, id string) (Run, error) {
	return s.resume(ctx, id, nil)
}

// Handoff is Resume with a new provider configuration: source, policy,
// checks and evidence are kept; the plan gets a new revision.
func (s *Service) Handoff(ctx context.Context, id string, req HandoffRequest) (Run, error) {
	if req.Provider == "" && req.Profile == "" {
		return Run{}, fieldErr("profile", "name the profile (or provider) that takes over")
	}
	return s.resume(ctx, id, &req)
}

// taskDone reports whether a task's outcome stands: a succeeded task, or a
// verification attempt that ran to its failure.
func taskDone(t Task) bool {
	return t.State == TaskSucceeded || t.Kind == TaskVerify && t.State == TaskFailed
}

func (s *Service) resume(ctx context.Context, id string, h *HandoffRequest) (Run, error) {
	row, err := s.readRun(ctx, id)
	if err != nil {
		return Run{}, err
	}
	code := ""
	if row.Error != nil {
		code = row.Error.Code
	}
	if row.State == StatePaused {
		msgs, err := listMessages(ctx, s.db.Reader(), id)
		if err != nil {
			return Run{}, err
		}
		if len(msgs) == 0 || msgs[len(msgs)-1].Kind != MessageAnswer {
			return Run{}, errorf(EConflict, "run %s waits for the answer to its worker's question (POST .../answer) before it can be resumed", id)
		}
	} else if (row.State != StateFailed && row.State != StateCancelled) || !resumableCodes[code] {
		return Run{}, errorf(EConflict, "run %s is %s (%s); only a paused run, or one cancelled, interrupted or stopped by its agent or provider, can be resumed; retry it for a fresh run", id, row.State, code)
	}
	if len(row.checks) == 0 {
		return Run{}, errorf(EConflict, "run %s stopped before its workspace was prepared; retry it for a fresh run", id)
	}
	provName, profile := row.Provider, row.Profile
	if h != nil {
		if row.Mode == ModeTest {
			return Run{}, errorf(EConflict, "run %s is a test run: it has no agent to hand off", id)
		}
		if _, provName, profile, err = s.providerFor(h.Provider, h.Profile); err != nil {
			return Run{}, err
		}
	}
	g, err := s.gitTool()
	if err != nil {
		return Run{}, err
	}
	head, err := lastCommit(ctx, s.db.Reader(), id, row.SourceRevision)
	if err != nil {
		return Run{}, err
	}
	if problem := g.checkWorkspace(ctx, row.Workspace, head); problem != "" {
		return Run{}, errorf(EConflict, "%s; it cannot be resumed: retry the run for a fresh clone", problem)
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if cur, err := getRun(ctx, tx, id); err != nil || cur.State != row.State || cur.PlanRevision != row.PlanRevision {
			return errors.Join(err, errorf(EConflict, "run %s changed meanwhile; look again", id))
		}
		tasks, err := listTasks(ctx, tx, id)
		if err != nil {
			return err
		}
		attempt := 0
		for _, t := range tasks {
			// An attempt that started may have recorded checks: the copy
			// gets a new number.
			if t.Kind == TaskVerify && t.State != TaskPending && t.State != TaskSkipped {
				attempt = max(attempt, t.Attempt)
			}
		}
		rev := row.PlanRevision + 1
		first := len(tasks)
		for i, t := range tasks {
			if !taskDone(t) {
				first = i
				break
			}
		}
		var copies []Task
		for _, t := range tasks[first:] {
			if taskDone(t) {
				continue
			}
			c := Task{Index: len(tasks) + len(copies) + 1, Kind: t.Kind, Role: t.Role, Title: t.Title, Instruction: t.Instruction,
				State: TaskPending, Revision: rev, Attempt: t.Attempt}
			if c.Kind == TaskVerify {
				attempt++
				c.Attempt, c.Title = attempt, fmt.Sprintf("verify (attempt %d)", attempt)
			}
			copies = append(copies, c)
		}
		if len(copies) == 0 {
			return errorf(EConflict, "run %s has no unfinished task", id)
		}
		now := s.now()
		// The unfinished tasks stay in the plan as skipped; their copies run.
		if err := closeOpenTasks(ctx, tx, id, TaskSkipped, now); err != nil {
			return err
		}
		for _, c := range copies {
			if err := insertTask(ctx, tx, id, c); err != nil {
				return err
			}
		}
		u := runUpdate{State: ptr(StateQueued), Error: &RunError{}, PlanRevision: &rev, Provider: &provName, Profile: &profile}
		if err := updateRun(ctx, tx, id, u, now); err != nil {
			return err
		}
		return insertOutbox(ctx, tx, runEvent(&row.Run, StateQueued, nil, now))
	})
	if err != nil {
		return Run{}, err
	}
	s.pokeOutbox()
	queued, err := s.get(ctx, id, false)
	s.schedule()
	return queued, err
}

// AnswerRequest is the body of POST /api/v1/runs/{id}/answer.
type AnswerRequest struct {
	Text string `json:"text"`
}

// Answer records the operator's answer to the question a paused run's
// worker asked. The run stays paused until it is resumed explicitly.
func (s *Service) Answer(ctx context.Context, id string, req AnswerRequest) (Run, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Run{}, errNotFound("run " + quoteShort(id))
	}
	text := strings.TrimSpace(req.Text)
	if text == "" || len(text) > maxInstruction {
		return Run{}, fieldErr("text", "is required: 1 to %d bytes", maxInstruction)
	}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		row, err := getRun(ctx, tx, id)
		if err != nil {
			return err
		}
		msgs, err := listMessages(ctx, tx, id)
		if err != nil {
			return err
		}
		if row.State != StatePaused || len(msgs) == 0 || msgs[len(msgs)-1].Kind != MessageQuestion {
			return errorf(EConflict, "run %s has no question waiting for an answer (state %s)", id, row.State)
		}
		q := msgs[len(msgs)-1]
		return insertMessage(ctx, tx, id, WorkerMessage{Task: q.Task, Kind: MessageAnswer, Text: text, At: s.now()})
	})
	if err != nil {
		return Run{}, err
	}
	return s.get(ctx, id, false)
}

// Messages returns the worker messages of a run.
func (s *Service) Messages(ctx context.Context, id string) (WorkerMessages, error) {
	row, err := s.readRun(ctx, id)
	if err != nil {
		return WorkerMessages{}, err
	}
	msgs, err := listMessages(ctx, s.db.Reader(), id)
	return WorkerMessages{RunID: row.ID, Messages: msgs}, err
}
