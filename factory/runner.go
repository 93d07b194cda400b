package factory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/bridge/bridge/provider"
)

// schedule starts queued runs while slots are free: at most
// Settings.MaxActiveRuns at once, one per repository; the others wait in
// creation order.
func (s *Service) schedule() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed || len(s.active) >= s.settings.MaxActiveRuns {
		return
	}
	queued, err := runsInState(s.ctx, s.db.Reader(), StateQueued)
	if err != nil {
		s.log.Error("factory: reading the queue", "err", err)
		return
	}
	for _, r := range queued {
		if len(s.active) >= s.settings.MaxActiveRuns {
			return
		}
		if s.repos[r.Repo] || s.active[r.ID] != nil {
			continue
		}
		ctx, cancel := context.WithCancelCause(s.ctx)
		a := &activeRun{cancel: cancel, done: make(chan struct{})}
		s.active[r.ID], s.repos[r.Repo] = a, true
		s.wg.Add(1)
		go s.execute(ctx, a, r)
	}
}

// execute runs one run to its end and frees its slot.
func (s *Service) execute(ctx context.Context, a *activeRun, row runRow) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.active, row.ID)
		delete(s.repos, row.Repo)
		s.mu.Unlock()
		close(a.done)
		a.cancel(nil)
		s.schedule()
	}()
	x := &runner{s: s, ctx: ctx, wctx: context.WithoutCancel(ctx), run: row.Run, head: row.SourceRevision, checks: row.checks}
	x.dir = s.runDir(row.ID)
	x.project = filepath.Join(row.Workspace, filepath.FromSlash(row.Subdir))
	x.do()
}

// runner executes the tasks of one run. Writes use wctx, which outlives a
// cancellation, so the receipt of the step that was stopped is recorded.
type runner struct {
	s       *Service
	ctx     context.Context
	wctx    context.Context
	run     Run
	g       gitTool
	prov    provider.Provider
	dir     string // the run's directory in the data directory
	project string // the project directory inside the workspace
	checks  []PlannedCheck
	head    string // the latest commit of the workspace
	// rateRetries counts the automatic retries after provider rate limits.
	rateRetries int
}

// stop is how a step ends the run early: failed with a code, or stopped by
// cancellation or shutdown (the context's cause).
type stop struct {
	code, msg string
}

func (x *runner) now() time.Time { return x.s.now() }

func (x *runner) do() {
	if err := x.write(func(tx *sql.Tx) error {
		now := x.now()
		if err := updateRun(x.wctx, tx, x.run.ID, runUpdate{State: ptr(StateRunning), Started: true}, now); err != nil {
			return err
		}
		return insertOutbox(x.wctx, tx, runEvent(&x.run, StateRunning, nil, now))
	}); err != nil {
		x.s.log.Error("factory: starting run", "run", x.run.ID, "err", err)
		return
	}
	x.run.State = StateRunning
	st := x.steps()
	x.end(st)
}

// steps runs clone, planning and the tasks; nil means success.
func (x *runner) steps() *stop {
	g, err := x.s.gitTool()
	if err != nil {
		return &stop{ErrCodeSource, err.Error()}
	}
	x.g = g
	if len(x.checks) > 0 {
		// Resumed (Resume, Handoff): the same workspace, at the head its
		// journal records, with the checks frozen when it was cloned.
		head, err := lastCommit(x.wctx, x.s.db.Reader(), x.run.ID, x.run.SourceRevision)
		if err != nil {
			return &stop{ErrCodeWorkspace, err.Error()}
		}
		x.head = head
	} else if st := x.prepare(); st != nil {
		return st
	}
	if x.run.Mode != ModeTest {
		prov, _, _, err := x.s.providerFor(x.providerName(), x.run.Profile)
		if err != nil {
			return &stop{ErrCodeAgentFailed, err.Error()}
		}
		x.prov = prov
	}
	tasks, err := listTasks(x.wctx, x.s.db.Reader(), x.run.ID)
	if err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	// Each failed verification attempt was followed by one repair (a
	// resumed run counts those of before).
	repairs := 0
	for _, t := range tasks {
		if t.Kind == TaskVerify && t.State == TaskFailed {
			repairs++
		}
	}
	for i := 0; i < len(tasks); i++ {
		t := tasks[i]
		if t.State != TaskPending {
			continue
		}
		switch t.Kind {
		case TaskAgent:
			if st := x.agentTask(t); st != nil {
				return st
			}
		case TaskVerify:
			passed, st := x.verifyTask(t)
			if st != nil {
				return st
			}
			if passed {
				return x.export()
			}
			if repairs >= x.run.Policy.RepairAttempts {
				msg := fmt.Sprintf("verification failed on attempt %d", t.Attempt)
				if x.run.Mode != ModeTest {
					msg += fmt.Sprintf(" after %d repair attempt(s)", repairs)
				}
				return &stop{ErrCodeVerificationFailed, msg}
			}
			repairs++
			added, err := x.addRepair(len(tasks), t.Attempt)
			if err != nil {
				return &stop{ErrCodeWorkspace, err.Error()}
			}
			tasks = append(tasks, added...)
		}
	}
	return &stop{ErrCodeVerificationFailed, "the plan ended without a passing verification"}
}

// prepare clones the workspace and freezes the checks in the plan.
func (x *runner) prepare() *stop {
	if st := x.clone(); st != nil {
		return st
	}
	checks, err := planChecks(x.project, x.run.Policy)
	if err != nil {
		return &stop{ErrCodeConfig, err.Error()}
	}
	if len(checks) == 0 {
		return &stop{ErrCodeNoVerification, "no executable verification found: no " + ConfigFile + ", and no Go, Node, Python, Rust or Make checks in the project; name the commands in " + ConfigFile + " or with the request's verify"}
	}
	x.checks = checks
	if err := x.write(func(tx *sql.Tx) error {
		return updateRun(x.wctx, tx, x.run.ID, runUpdate{Checks: checks}, x.now())
	}); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	return nil
}

// providerName is the provider to resolve again at run time: a profile
// alone when one was named (auto picks again), else the provider.
func (x *runner) providerName() string {
	if x.run.Profile != "" {
		return ""
	}
	return x.run.Provider
}

// write runs fn in a write transaction that survives the run's cancellation.
func (x *runner) write(fn func(tx *sql.Tx) error) error {
	err := x.s.db.Write(x.wctx, fn)
	x.s.pokeOutbox()
	return err
}

// intent journals what is about to be done.
func (x *runner) intent(action string, data any) (int, error) {
	var seq int
	err := x.write(func(tx *sql.Tx) error {
		e, err := appendJournal(x.wctx, tx, x.run.ID, Entry{Kind: KindIntent, Action: action, Data: jsonRaw(data), At: x.now()})
		seq = e.Seq
		return err
	})
	return seq, err
}

// receipt journals the outcome of intent ref, with more writes in the same
// transaction.
func (x *runner) receipt(action string, ref int, data any, more func(tx *sql.Tx) error) error {
	return x.write(func(tx *sql.Tx) error {
		if _, err := appendJournal(x.wctx, tx, x.run.ID, Entry{Kind: KindReceipt, Action: action, Ref: ref, Data: jsonRaw(data), At: x.now()}); err != nil {
			return err
		}
		if more != nil {
			return more(tx)
		}
		return nil
	})
}

func jsonRaw(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return data
}

// interrupted reports whether the run's context ended, as a stop.
func (x *runner) interrupted() *stop {
	if x.ctx.Err() == nil {
		return nil
	}
	if errors.Is(context.Cause(x.ctx), errCancelled) {
		return &stop{ErrCodeCancelled, "cancelled by the operator"}
	}
	return &stop{ErrCodeInterrupted, "the daemon shut down during the run; retry it"}
}

func outcome(err error, x *runner) map[string]any {
	if st := x.interrupted(); st != nil {
		return map[string]any{"outcome": st.code}
	}
	if err != nil {
		return map[string]any{"outcome": "error", "error": err.Error()}
	}
	return map[string]any{"outcome": "ok"}
}

func (x *runner) clone() *stop {
	ws := x.run.Workspace
	ref, err := x.intent(ActionClone, map[string]any{"repo": x.run.Repo, "revision": x.run.SourceRevision, "source_tree": x.run.SourceTree, "workspace": ws})
	if err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	cerr := x.g.clone(x.ctx, x.run.Repo, x.run.SourceRevision, x.run.SourceTree, ws)
	if err := x.receipt(ActionClone, ref, outcome(cerr, x), nil); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	if st := x.interrupted(); st != nil {
		return st
	}
	if cerr != nil {
		return &stop{ErrCodeSource, "cloning the repository at its recorded tree failed: " + cerr.Error()}
	}
	if err := os.MkdirAll(filepath.Join(x.dir, "logs"), 0o700); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	return nil
}

// setTask moves a task to state, with its event and the run's progress.
func (x *runner) setTask(t Task, state, errText string) error {
	return x.write(func(tx *sql.Tx) error {
		now := x.now()
		if err := updateTask(x.wctx, tx, x.run.ID, t.Index, state, errText, now); err != nil {
			return err
		}
		if state == TaskRunning {
			if err := updateRun(x.wctx, tx, x.run.ID, runUpdate{CurrentTask: ptr(t.Index), CurrentCommand: ptr("")}, now); err != nil {
				return err
			}
		}
		return insertOutbox(x.wctx, tx, taskEvent(&x.run, t, state, now))
	})
}

// maxTurnEvents bounds the provider events kept with a turn.
const maxTurnEvents = 500

func (x *runner) agentTask(t Task) *stop {
	if err := x.setTask(t, TaskRunning, ""); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	prompt := x.prompt(t)
	var answer string
	for n := 1; ; n++ {
		turn, res, rerr, timedOut, st := x.turn(t, prompt, n)
		if st != nil {
			return st
		}
		if !turn.IsError {
			answer = res.Text
			break
		}
		if turn.Failure == provider.FailureRateLimit && !quotaExhausted(res, rerr) && x.rateRetries < x.run.Policy.RateLimitRetries {
			if st := x.pauseForRateLimit(t); st != nil {
				return st
			}
			continue
		}
		st = &stop{ErrCodeAgentFailed, "the agent turn failed: " + agentError(res, rerr)}
		switch {
		case timedOut:
			st.msg = fmt.Sprintf("the agent did not finish within the agent timeout (%s)", time.Duration(x.run.Policy.AgentTimeout))
		case turn.Failure == provider.FailureAuth:
			st = &stop{ErrCodeProviderAuth, "the agent CLI is not logged in or its credentials were refused; log in with the CLI, then retry the run: " + agentError(res, rerr)}
		case turn.Failure == provider.FailureRateLimit && quotaExhausted(res, rerr):
			st = &stop{ErrCodeProviderQuota, "the provider's usage quota is exhausted; retry the run once it is restored: " + agentError(res, rerr)}
		case turn.Failure == provider.FailureRateLimit:
			st = &stop{ErrCodeProviderRateLimit, fmt.Sprintf("the provider still refused the turn for rate limits after %d automatic retries; retry the run later: %s", x.rateRetries, agentError(res, rerr))}
		}
		_ = x.setTask(t, TaskFailed, st.msg)
		return st
	}
	// The agent's changes become a commit of their own.
	cref, err := x.intent(ActionCommit, map[string]any{"task": t.Index})
	if err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	rev, cerr := x.g.commit(x.wctx, x.run.Workspace, fmt.Sprintf("factory: task %d, %s\n\nRun %s.", t.Index, t.Title, x.run.ID))
	cdata := outcome(cerr, x)
	cdata["revision"], cdata["changed"] = rev, rev != ""
	if err := x.receipt(ActionCommit, cref, cdata, nil); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	if cerr != nil {
		_ = x.setTask(t, TaskFailed, cerr.Error())
		return &stop{ErrCodeWorkspace, "committing the agent's changes failed: " + cerr.Error()}
	}
	if rev != "" {
		x.head = rev
	}
	if q := parseQuestion(answer); q != "" {
		return x.ask(t, q)
	}
	if err := x.setTask(t, TaskSucceeded, ""); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	return nil
}

func agentError(res provider.Result, err error) string {
	if err != nil {
		return err.Error()
	}
	return truncate(res.Text, 2000)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// env is the environment of the agent and of the checks.
func (x *runner) env(t Task) []string {
	return []string{"FACTORY_RUN_ID=" + x.run.ID, "FACTORY_MODE=" + x.run.Mode, fmt.Sprintf("FACTORY_TASK=%d", t.Index)}
}

func (x *runner) verifyTask(t Task) (bool, *stop) {
	if err := x.setTask(t, TaskRunning, ""); err != nil {
		return false, &stop{ErrCodeWorkspace, err.Error()}
	}
	names := make([]string, len(x.checks))
	for i, c := range x.checks {
		names[i] = c.Name
	}
	ref, err := x.intent(ActionVerify, map[string]any{"task": t.Index, "attempt": t.Attempt, "revision": x.head, "commands": names})
	if err != nil {
		return false, &stop{ErrCodeWorkspace, err.Error()}
	}
	env := append(os.Environ(), x.env(t)...)
	passed := true
	failed := []int{}
	for i, c := range x.checks {
		if err := x.write(func(tx *sql.Tx) error {
			return updateRun(x.wctx, tx, x.run.ID, runUpdate{CurrentCommand: ptr(c.Name)}, x.now())
		}); err != nil {
			return false, &stop{ErrCodeWorkspace, err.Error()}
		}
		logPath := filepath.Join(x.dir, "logs", fmt.Sprintf("verify-%d-%02d.log", t.Attempt, i+1))
		res, cerr := runCheck(x.ctx, x.project, logPath, env, c, i+1)
		if cerr == nil || x.ctx.Err() != nil {
			if err := x.write(func(tx *sql.Tx) error { return insertCheck(x.wctx, tx, x.run.ID, t.Attempt, res) }); err != nil {
				return false, &stop{ErrCodeWorkspace, err.Error()}
			}
		}
		if x.ctx.Err() != nil {
			break
		}
		if cerr != nil {
			return false, &stop{ErrCodeWorkspace, cerr.Error()}
		}
		if !res.Passed() {
			passed = false
			failed = append(failed, i+1)
		}
	}
	// What the checks wrote (build outputs, formatters) is undone, so the
	// checkpoint is the tree that was verified.
	restored, rerr := x.g.restore(x.wctx, x.run.Workspace)
	if restored == nil {
		restored = []string{}
	}
	data := outcome(rerr, x)
	data["attempt"], data["passed"], data["failed_commands"], data["restored_paths"] = t.Attempt, passed && x.ctx.Err() == nil, failed, restored
	if err := x.receipt(ActionVerify, ref, data, nil); err != nil {
		return false, &stop{ErrCodeWorkspace, err.Error()}
	}
	if st := x.interrupted(); st != nil {
		return false, st
	}
	if rerr != nil {
		return false, &stop{ErrCodeWorkspace, "restoring the workspace after verification failed: " + rerr.Error()}
	}
	state, msg := TaskSucceeded, ""
	if !passed {
		state, msg = TaskFailed, fmt.Sprintf("%d of %d commands failed", len(failed), len(x.checks))
	}
	if err := x.setTask(t, state, msg); err != nil {
		return false, &stop{ErrCodeWorkspace, err.Error()}
	}
	return passed, nil
}

// addRepair appends a repair task and a verification attempt to the plan,
// as a new plan revision.
func (x *runner) addRepair(n, failedAttempt int) ([]Task, error) {
	rev := x.run.PlanRevision + 1
	added := []Task{
		{Index: n + 1, Kind: TaskAgent, Role: RoleRepairer, Title: fmt.Sprintf("repair (after attempt %d)", failedAttempt),
			Instruction: "Make the failing verification commands pass.", State: TaskPending, Revision: rev, Attempt: failedAttempt},
		{Index: n + 2, Kind: TaskVerify, Role: RoleVerifier, Title: fmt.Sprintf("verify (attempt %d)", failedAttempt+1),
			State: TaskPending, Revision: rev, Attempt: failedAttempt + 1},
	}
	err := x.write(func(tx *sql.Tx) error {
		for _, t := range added {
			if err := insertTask(x.wctx, tx, x.run.ID, t); err != nil {
				return err
			}
		}
		return updateRun(x.wctx, tx, x.run.ID, runUpdate{PlanRevision: &rev}, x.now())
	})
	if err == nil {
		x.run.PlanRevision = rev
	}
	return added, err
}

// export makes the diff and changes.zip of the checkpoint and ends the run.
func (x *runner) export() *stop {
	if x.run.Mode == ModeTest {
		return nil
	}
	if x.head == x.run.SourceRevision {
		return &stop{ErrCodeNoChanges, "the agent changed nothing, so there is nothing to check in"}
	}
	ref, err := x.intent(ActionExport, map[string]any{"checkpoint": x.head})
	if err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	art := filepath.Join(x.dir, "artifacts")
	changed, deleted, eerr := x.g.changedFiles(x.wctx, x.run.Workspace, x.run.SourceRevision, x.head)
	var size int64
	if eerr == nil {
		eerr = os.MkdirAll(art, 0o700)
	}
	if eerr == nil {
		size, eerr = x.g.diff(x.wctx, x.run.Workspace, x.run.SourceRevision, x.head, filepath.Join(art, "changes.patch"), x.run.Policy.DiffLimit)
	}
	var tooLarge *errDiffTooLarge
	if eerr == nil || errors.As(eerr, &tooLarge) {
		del := map[string]bool{}
		for _, d := range deleted {
			del[d] = true
		}
		zerr := exportZip(x.run.Workspace, filepath.Join(art, "changes.zip"), manifest{Run: x.run.ID, SourceRevision: x.run.SourceRevision,
			CheckpointRevision: x.head, Changed: changed, Deleted: deleted}, del)
		if zerr != nil {
			eerr = zerr
			tooLarge = nil
		}
	}
	data := outcome(eerr, x)
	data["checkpoint"], data["changed_files"], data["diff_bytes"] = x.head, len(changed), size
	if err := x.receipt(ActionExport, ref, data, func(tx *sql.Tx) error {
		u := runUpdate{CheckpointRevision: ptr(x.head), ChangedFiles: changed}
		if tooLarge == nil {
			u.DiffBytes = &size
		}
		return updateRun(x.wctx, tx, x.run.ID, u, x.now())
	}); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	if tooLarge != nil {
		return &stop{ErrCodeDiffTooLarge, tooLarge.Error()}
	}
	if eerr != nil {
		return &stop{ErrCodeWorkspace, "exporting the checkpoint failed: " + eerr.Error()}
	}
	return nil
}

// questionPrefix starts the line with which an agent asks the operator a
// question instead of finishing its task (the prompt says so).
const questionPrefix = "QUESTION:"

// parseQuestion returns the question an agent's answer asks, or "".
func parseQuestion(answer string) string {
	for _, line := range strings.Split(answer, "\n") {
		if q, ok := strings.CutPrefix(strings.TrimSpace(line), questionPrefix); ok && strings.TrimSpace(q) != "" {
			return truncate(strings.TrimSpace(q), 4096)
		}
	}
	return ""
}

// ask records a worker's question and pauses its task: the run waits for
// an answer (POST .../answer) and an explicit resume.
func (x *runner) ask(t Task, q string) *stop {
	err := x.write(func(tx *sql.Tx) error {
		now := x.now()
		if err := insertMessage(x.wctx, tx, x.run.ID, WorkerMessage{Task: t.Index, Kind: MessageQuestion, Text: q, At: now}); err != nil {
			return err
		}
		if err := updateTask(x.wctx, tx, x.run.ID, t.Index, TaskPaused, "waiting for an answer: "+q, now); err != nil {
			return err
		}
		return insertOutbox(x.wctx, tx, taskEvent(&x.run, t, TaskPaused, now))
	})
	if err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	return &stop{errCodeQuestion, q}
}

// end records the run's final state.
func (x *runner) end(st *stop) {
	if st != nil && st.code == errCodeQuestion {
		err := x.write(func(tx *sql.Tx) error {
			now := x.now()
			if err := updateRun(x.wctx, tx, x.run.ID, runUpdate{State: ptr(StatePaused), CurrentTask: ptr(0), CurrentCommand: ptr("")}, now); err != nil {
				return err
			}
			return insertOutbox(x.wctx, tx, runEvent(&x.run, StatePaused, nil, now))
		})
		if err != nil {
			x.s.log.Error("factory: pausing a run", "run", x.run.ID, "err", err)
		}
		return
	}
	state, rerr := StateSucceeded, (*RunError)(nil)
	taskState := TaskSkipped
	if st != nil {
		state, rerr = StateFailed, &RunError{Code: st.code, Message: st.msg}
		if st.code == ErrCodeCancelled {
			state, taskState = StateCancelled, TaskCancelled
		}
	}
	err := x.write(func(tx *sql.Tx) error {
		now := x.now()
		u := runUpdate{State: &state, Finished: true, Error: rerr}
		if err := updateRun(x.wctx, tx, x.run.ID, u, now); err != nil {
			return err
		}
		if err := closeOpenTasks(x.wctx, tx, x.run.ID, taskState, now); err != nil {
			return err
		}
		return insertOutbox(x.wctx, tx, runEvent(&x.run, state, rerr, now))
	})
	if err != nil {
		x.s.log.Error("factory: recording the end of a run", "run", x.run.ID, "err", err)
	}
}

// prompt is what the agent is asked to do for task t.
func (x *runner) prompt(t Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are working in a fresh git clone of a project, in %s.\n", x.project)
	switch x.run.Mode {
	case ModeMaintenance:
		b.WriteString("This is maintenance: preserve the existing behaviour of the product, change only what the instruction needs, and add regression tests covering what you change.\n")
	default:
		b.WriteString("Implement the instruction below in this project, with tests where the project has them.\n")
	}
	b.WriteString("If you cannot go on without a decision from the user, make no further change and end your answer with one line: " + questionPrefix + " <your question>\n")
	b.WriteString("Do not commit, push or change git settings; the factory commits your changes and runs these checks afterwards:\n")
	for _, c := range x.checks {
		fmt.Fprintf(&b, "  - %s\n", c.Name)
	}
	fmt.Fprintf(&b, "\nInstruction:\n%s\n", x.run.Instruction)
	if msgs, err := listMessages(x.wctx, x.s.db.Reader(), x.run.ID); err == nil && len(msgs) > 0 {
		b.WriteString("\nYour earlier questions and the user's answers:\n")
		for _, m := range msgs {
			fmt.Fprintf(&b, "%s: %s\n", strings.ToUpper(m.Kind[:1])+m.Kind[1:], m.Text)
		}
	}
	if t.Role == RoleRepairer {
		fmt.Fprintf(&b, "\nVerification failed (attempt %d). Fix the source so that the failing commands pass; do not weaken or delete the checks.\n", t.Attempt)
		b.WriteString(x.failureReport(t.Attempt))
	}
	return b.String()
}

// failureReport lists the failing commands of an attempt with the end of
// their output, bounded so the prompt stays small.
func (x *runner) failureReport(attempt int) string {
	vs, err := listVerification(x.wctx, x.s.db.Reader(), x.run.ID)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, v := range vs {
		if v.Attempt != attempt {
			continue
		}
		for _, c := range v.Commands {
			if c.Passed() {
				continue
			}
			out := c.Output
			if len(out) > 16<<10 {
				out = out[len(out)-16<<10:]
			}
			fmt.Fprintf(&b, "\n$ %s\n(exit code %d", c.Name, c.ExitCode)
			if c.TimedOut {
				b.WriteString(", timed out")
			}
			fmt.Fprintf(&b, ")\n%s\n", out)
		}
	}
	return b.String()
}

// turn runs the n-th agent turn of task t between its intent and receipt.
func (x *runner) turn(t Task, prompt string, n int) (Turn, provider.Result, error, bool, *stop) {
	sum := sha256.Sum256([]byte(prompt))
	turn := Turn{Task: t.Index, Turn: n, Provider: x.prov.Name(), Events: []TurnEvent{}, StartedAt: x.now().UTC().Truncate(time.Millisecond)}
	ref, err := x.intent(ActionAgent, map[string]any{"task": t.Index, "turn": n, "provider": x.prov.Name(), "profile": x.run.Profile,
		"prompt_sha256": hex.EncodeToString(sum[:]), "prompt_bytes": len(prompt)})
	if err != nil {
		return turn, provider.Result{}, nil, false, &stop{ErrCodeWorkspace, err.Error()}
	}
	actx, cancel := context.WithTimeout(x.ctx, time.Duration(x.run.Policy.AgentTimeout))
	res, rerr := x.prov.Run(actx, provider.Request{Prompt: prompt, WorkDir: x.project, Env: x.env(t)}, func(ev provider.Event) {
		if len(turn.Events) >= maxTurnEvents || ev.Kind == provider.EventRaw && ev.Text == "" {
			return
		}
		te := TurnEvent{Kind: string(ev.Kind), Text: truncate(ev.Text, 2048), Code: ev.Code, Time: ev.Time.UTC()}
		if ev.Tool != nil {
			te.Tool = ev.Tool.Name
		}
		turn.Events = append(turn.Events, te)
	})
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded) && x.ctx.Err() == nil
	cancel()
	turn.DurationMS = time.Since(turn.StartedAt).Milliseconds()
	turn.ExitCode, turn.IsError, turn.Failure = res.ExitCode, res.IsError || rerr != nil, res.Failure
	turn.Text, turn.Stderr = truncate(res.Text, 64<<10), truncate(res.Stderr, 64<<10)
	var stall *provider.StallError
	if errors.As(rerr, &stall) && turn.Failure == "" {
		turn.Failure = stall.Failure
	}
	data := outcome(rerr, x)
	data["exit_code"], data["is_error"], data["failure"] = res.ExitCode, turn.IsError, turn.Failure
	if err := x.receipt(ActionAgent, ref, data, func(tx *sql.Tx) error { return insertTurn(x.wctx, tx, x.run.ID, turn) }); err != nil {
		return turn, res, rerr, timedOut, &stop{ErrCodeWorkspace, err.Error()}
	}
	return turn, res, rerr, timedOut, x.interrupted()
}

// quotaExhausted tells a provider's usage quota (operator action: the
// spec's quota exhaustion) from a rate limit that passes with time, by the
// words the agents use for it.
func quotaExhausted(res provider.Result, err error) bool {
	text := strings.ToLower(agentError(res, err))
	for _, w := range []string{"usage limit", "quota", "billing", "credit balance", "insufficient credits"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// pauseForRateLimit pauses task t until its automatic retry: the backoff
// doubles with each retry of the run. The task shows the retry time.
func (x *runner) pauseForRateLimit(t Task) *stop {
	x.rateRetries++
	wait := time.Duration(x.run.Policy.RateLimitBackoff) << (x.rateRetries - 1)
	at := x.now().Add(wait).UTC().Truncate(time.Millisecond)
	msg := fmt.Sprintf("paused by a provider rate limit; automatic retry %d of %d at %s", x.rateRetries, x.run.Policy.RateLimitRetries, at.Format(time.RFC3339Nano))
	if err := x.setTask(t, TaskPaused, msg); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-x.ctx.Done():
		return x.interrupted()
	}
	if err := x.setTask(t, TaskRunning, ""); err != nil {
		return &stop{ErrCodeWorkspace, err.Error()}
	}
	return nil
}
