package factory

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations are the factory's tables (versions 0400-0499); the daemon
// applies them with every other subsystem's.
func Migrations() []store.Migration { return store.MustLoad(migrationFS, "migrations") }

// Times are stored with store.Millis and read with store.FromMillis.

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Only our own types are encoded; they always marshal.
		return "null"
	}
	return string(data)
}

const runColumns = `id, seq, mode, state, repo, subdir, instruction, provider, profile, policy, checks,
	source_revision, source_tree, workspace, checkpoint_revision, changed_files, diff_bytes,
	plan_revision, current_task, current_command, error_code, error_message, retry_of,
	journal_count, journal_head, created_at, started_at, finished_at, updated_at, project_tenant, project_id`

// runRow carries the columns of factory_runs that the Run type does not
// serve as is.
type runRow struct {
	Run
	seq         int64
	checks      []PlannedCheck
	currentTask int
	currentCmd  string
}

func scanRun(sc interface{ Scan(...any) error }) (runRow, error) {
	var r runRow
	var policy, checks, changed, errCode, errMsg string
	var created, started, finished, updated int64
	var project Project
	err := sc.Scan(&r.ID, &r.seq, &r.Mode, &r.State, &r.Repo, &r.Subdir, &r.Instruction, &r.Provider, &r.Profile, &policy, &checks,
		&r.SourceRevision, &r.SourceTree, &r.Workspace, &r.CheckpointRevision, &changed, &r.DiffBytes,
		&r.PlanRevision, &r.currentTask, &r.currentCmd, &errCode, &errMsg, &r.RetryOf,
		&r.journalCount, &r.journalHead, &created, &started, &finished, &updated, &project.Tenant, &project.Project)
	if err != nil {
		return r, err
	}
	if project.Tenant != "" {
		r.Project = &project
	}
	if err := json.Unmarshal([]byte(policy), &r.Policy); err != nil {
		return r, fmt.Errorf("factory: run %s: stored policy: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(checks), &r.checks); err != nil {
		return r, fmt.Errorf("factory: run %s: stored checks: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(changed), &r.ChangedFiles); err != nil {
		return r, fmt.Errorf("factory: run %s: stored changed files: %w", r.ID, err)
	}
	if r.ChangedFiles == nil {
		r.ChangedFiles = []string{}
	}
	if errCode != "" {
		r.Error = &RunError{Code: errCode, Message: errMsg}
	}
	r.CreatedAt, r.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
	r.StartedAt, r.FinishedAt = store.OptFromMillis(started), store.OptFromMillis(finished)
	return r, nil
}

func insertRun(ctx context.Context, tx *sql.Tx, r *Run, now time.Time) error {
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM factory_runs`).Scan(&seq); err != nil {
		return fmt.Errorf("factory: next run number: %w", err)
	}
	var project Project
	if r.Project != nil {
		project = *r.Project
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_runs (id, seq, mode, state, repo, subdir, instruction, provider, profile,
		policy, plan_revision, retry_of, created_at, updated_at, project_tenant, project_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, seq, r.Mode, r.State, r.Repo, r.Subdir, r.Instruction, r.Provider, r.Profile,
		mustJSON(r.Policy), r.PlanRevision, r.RetryOf, store.Millis(now), store.Millis(now), project.Tenant, project.Project)
	if err != nil {
		return fmt.Errorf("factory: insert run: %w", err)
	}
	r.CreatedAt, r.UpdatedAt = store.FromMillis(store.Millis(now)), store.FromMillis(store.Millis(now))
	return nil
}

func getRun(ctx context.Context, q store.Querier, id string) (runRow, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runColumns+` FROM factory_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound("run " + id)
	}
	if err != nil {
		return r, fmt.Errorf("factory: read run %s: %w", id, err)
	}
	return r, nil
}

// listFilter selects runs for the list route; after is the seq of the last
// run of the previous page (newest first).
type listFilter struct {
	State string
	Repo  string
	After int64
	Limit int
	// Bound keeps only runs bound to a platform project (a principal's list).
	Bound bool
}

func listRuns(ctx context.Context, q store.Querier, f listFilter) ([]runRow, error) {
	var where []string
	var args []any
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, f.State)
	}
	if f.Repo != "" {
		where, args = append(where, "repo = ?"), append(args, f.Repo)
	}
	if f.After > 0 {
		where, args = append(where, "seq < ?"), append(args, f.After)
	}
	if f.Bound {
		where = append(where, "project_tenant != ''")
	}
	query := `SELECT ` + runColumns + ` FROM factory_runs`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY seq DESC LIMIT ?"
	args = append(args, f.Limit)
	return queryRuns(ctx, q, query, args...)
}

// runsInState lists the runs in one of states, oldest first (queue order).
func runsInState(ctx context.Context, q store.Querier, states ...string) ([]runRow, error) {
	marks := strings.TrimSuffix(strings.Repeat("?,", len(states)), ",")
	args := make([]any, len(states))
	for i, s := range states {
		args[i] = s
	}
	return queryRuns(ctx, q, `SELECT `+runColumns+` FROM factory_runs WHERE state IN (`+marks+`) ORDER BY seq`, args...)
}

func queryRuns(ctx context.Context, q store.Querier, query string, args ...any) ([]runRow, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("factory: list runs: %w", err)
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// runUpdate is a partial update of a run row; nil fields are kept.
type runUpdate struct {
	State              *string
	Provider           *string
	Profile            *string
	SourceRevision     *string
	SourceTree         *string
	Workspace          *string
	CheckpointRevision *string
	Checks             []PlannedCheck
	ChangedFiles       []string
	DiffBytes          *int64
	PlanRevision       *int
	CurrentTask        *int
	CurrentCommand     *string
	Error              *RunError // a zero Code clears the error
	Started            bool
	Finished           bool
}

func updateRun(ctx context.Context, tx *sql.Tx, id string, u runUpdate, now time.Time) error {
	sets := []string{"updated_at = ?"}
	args := []any{store.Millis(now)}
	add := func(col string, v any) { sets, args = append(sets, col+" = ?"), append(args, v) }
	if u.State != nil {
		add("state", *u.State)
	}
	if u.Provider != nil {
		add("provider", *u.Provider)
	}
	if u.Profile != nil {
		add("profile", *u.Profile)
	}
	if u.SourceRevision != nil {
		add("source_revision", *u.SourceRevision)
	}
	if u.SourceTree != nil {
		add("source_tree", *u.SourceTree)
	}
	if u.Workspace != nil {
		add("workspace", *u.Workspace)
	}
	if u.CheckpointRevision != nil {
		add("checkpoint_revision", *u.CheckpointRevision)
	}
	if u.Checks != nil {
		add("checks", mustJSON(u.Checks))
	}
	if u.ChangedFiles != nil {
		add("changed_files", mustJSON(u.ChangedFiles))
	}
	if u.DiffBytes != nil {
		add("diff_bytes", *u.DiffBytes)
	}
	if u.PlanRevision != nil {
		add("plan_revision", *u.PlanRevision)
	}
	if u.CurrentTask != nil {
		add("current_task", *u.CurrentTask)
	}
	if u.CurrentCommand != nil {
		add("current_command", *u.CurrentCommand)
	}
	if u.Error != nil {
		add("error_code", u.Error.Code)
		add("error_message", u.Error.Message)
	}
	if u.Started {
		add("started_at", store.Millis(now))
	}
	if u.Finished {
		add("finished_at", store.Millis(now))
		add("current_task", 0)
		add("current_command", "")
	}
	args = append(args, id)
	res, err := tx.ExecContext(ctx, `UPDATE factory_runs SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...)
	if err != nil {
		return fmt.Errorf("factory: update run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errNotFound("run " + id)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// Tasks.

func insertTask(ctx context.Context, tx *sql.Tx, runID string, t Task) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_tasks (run_id, idx, kind, role, title, instruction, state, revision, attempt)
		VALUES (?,?,?,?,?,?,?,?,?)`, runID, t.Index, t.Kind, t.Role, t.Title, t.Instruction, t.State, t.Revision, t.Attempt)
	if err != nil {
		return fmt.Errorf("factory: insert task %d of run %s: %w", t.Index, runID, err)
	}
	return nil
}

func updateTask(ctx context.Context, tx *sql.Tx, runID string, idx int, state, errText string, now time.Time) error {
	q := `UPDATE factory_tasks SET state = ?, error = ?`
	args := []any{state, errText}
	switch state {
	case TaskRunning:
		q += `, started_at = ?`
		args = append(args, store.Millis(now))
	case TaskSucceeded, TaskFailed, TaskCancelled, TaskSkipped:
		q += `, finished_at = ?`
		args = append(args, store.Millis(now))
	}
	args = append(args, runID, idx)
	if _, err := tx.ExecContext(ctx, q+` WHERE run_id = ? AND idx = ?`, args...); err != nil {
		return fmt.Errorf("factory: update task %d of run %s: %w", idx, runID, err)
	}
	return nil
}

// closeOpenTasks marks every pending, running or paused task of a run as state.
func closeOpenTasks(ctx context.Context, tx *sql.Tx, runID, state string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE factory_tasks SET state = ?, finished_at = ? WHERE run_id = ? AND state IN (?, ?, ?)`,
		state, store.Millis(now), runID, TaskPending, TaskRunning, TaskPaused)
	if err != nil {
		return fmt.Errorf("factory: close tasks of run %s: %w", runID, err)
	}
	return nil
}

func listTasks(ctx context.Context, q store.Querier, runID string) ([]Task, error) {
	rows, err := q.QueryContext(ctx, `SELECT idx, kind, role, title, instruction, state, revision, attempt, error, started_at, finished_at
		FROM factory_tasks WHERE run_id = ? ORDER BY idx`, runID)
	if err != nil {
		return nil, fmt.Errorf("factory: list tasks of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []Task{}
	for rows.Next() {
		var t Task
		var started, finished int64
		if err := rows.Scan(&t.Index, &t.Kind, &t.Role, &t.Title, &t.Instruction, &t.State, &t.Revision, &t.Attempt, &t.Error, &started, &finished); err != nil {
			return nil, fmt.Errorf("factory: list tasks of run %s: %w", runID, err)
		}
		t.StartedAt, t.FinishedAt = store.OptFromMillis(started), store.OptFromMillis(finished)
		out = append(out, t)
	}
	return out, rows.Err()
}

// Agent turns.

func insertTurn(ctx context.Context, tx *sql.Tx, runID string, t Turn) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_turns (run_id, task_idx, turn, provider, exit_code, is_error, failure, text, stderr, events, started_at, duration_ms)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`, runID, t.Task, t.Turn, t.Provider, t.ExitCode, t.IsError, t.Failure, t.Text, t.Stderr,
		mustJSON(t.Events), store.Millis(t.StartedAt), t.DurationMS)
	if err != nil {
		return fmt.Errorf("factory: record agent turn of run %s: %w", runID, err)
	}
	return nil
}

func listTurns(ctx context.Context, q store.Querier, runID string) ([]Turn, error) {
	rows, err := q.QueryContext(ctx, `SELECT task_idx, turn, provider, exit_code, is_error, failure, text, stderr, events, started_at, duration_ms
		FROM factory_turns WHERE run_id = ? ORDER BY task_idx, turn`, runID)
	if err != nil {
		return nil, fmt.Errorf("factory: list turns of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []Turn{}
	for rows.Next() {
		var t Turn
		var events string
		var started int64
		if err := rows.Scan(&t.Task, &t.Turn, &t.Provider, &t.ExitCode, &t.IsError, &t.Failure, &t.Text, &t.Stderr, &events, &started, &t.DurationMS); err != nil {
			return nil, fmt.Errorf("factory: list turns of run %s: %w", runID, err)
		}
		if err := json.Unmarshal([]byte(events), &t.Events); err != nil {
			return nil, fmt.Errorf("factory: run %s: stored events: %w", runID, err)
		}
		t.StartedAt = store.FromMillis(started)
		out = append(out, t)
	}
	return out, rows.Err()
}

// Verification commands.

func insertCheck(ctx context.Context, tx *sql.Tx, runID string, attempt int, c Check) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_checks (run_id, attempt, idx, name, command, source, timeout_ms, exit_code, timed_out, output, truncated, started_at, duration_ms)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`, runID, attempt, c.Index, c.Name, mustJSON(c.Command), c.Source, c.TimeoutMS,
		c.ExitCode, c.TimedOut, c.Output, c.Truncated, store.Millis(c.StartedAt), c.DurationMS)
	if err != nil {
		return fmt.Errorf("factory: record check of run %s: %w", runID, err)
	}
	return nil
}

// listVerification returns every attempt in order.
func listVerification(ctx context.Context, q store.Querier, runID string) ([]Verification, error) {
	rows, err := q.QueryContext(ctx, `SELECT attempt, idx, name, command, source, timeout_ms, exit_code, timed_out, output, truncated, started_at, duration_ms
		FROM factory_checks WHERE run_id = ? ORDER BY attempt, idx`, runID)
	if err != nil {
		return nil, fmt.Errorf("factory: list checks of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []Verification{}
	for rows.Next() {
		var c Check
		var attempt int
		var cmd string
		var started int64
		if err := rows.Scan(&attempt, &c.Index, &c.Name, &cmd, &c.Source, &c.TimeoutMS, &c.ExitCode, &c.TimedOut, &c.Output, &c.Truncated, &started, &c.DurationMS); err != nil {
			return nil, fmt.Errorf("factory: list checks of run %s: %w", runID, err)
		}
		if err := json.Unmarshal([]byte(cmd), &c.Command); err != nil {
			return nil, fmt.Errorf("factory: run %s: stored command: %w", runID, err)
		}
		c.StartedAt = store.FromMillis(started)
		if n := len(out); n == 0 || out[n-1].Attempt != attempt {
			out = append(out, Verification{Attempt: attempt, Passed: true})
		}
		v := &out[len(out)-1]
		v.Commands = append(v.Commands, c)
		v.Passed = v.Passed && c.Passed()
	}
	return out, rows.Err()
}

// Journal.

// appendJournal chains e after the run's recorded head and moves the head,
// in tx, so the head and the entries cannot disagree after a crash.
func appendJournal(ctx context.Context, tx *sql.Tx, runID string, e Entry) (Entry, error) {
	var count int
	var head string
	if err := tx.QueryRowContext(ctx, `SELECT journal_count, journal_head FROM factory_runs WHERE id = ?`, runID).Scan(&count, &head); err != nil {
		return e, fmt.Errorf("factory: journal head of run %s: %w", runID, err)
	}
	var prev *Entry
	if count > 0 {
		prev = &Entry{Seq: count, Hash: head}
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	e = chain(runID, prev, e)
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_journal (run_id, seq, kind, action, ref, data, at, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)`,
		runID, e.Seq, e.Kind, e.Action, e.Ref, string(e.Data), store.Millis(e.At), e.PrevHash, e.Hash)
	if err != nil {
		return e, fmt.Errorf("factory: append journal of run %s: %w", runID, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE factory_runs SET journal_count = ?, journal_head = ? WHERE id = ?`, e.Seq, e.Hash, runID); err != nil {
		return e, fmt.Errorf("factory: journal head of run %s: %w", runID, err)
	}
	return e, nil
}

func listJournal(ctx context.Context, q store.Querier, runID string) ([]Entry, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, kind, action, ref, data, at, prev_hash, hash FROM factory_journal WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, fmt.Errorf("factory: read journal of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var data string
		var at int64
		if err := rows.Scan(&e.Seq, &e.Kind, &e.Action, &e.Ref, &data, &at, &e.PrevHash, &e.Hash); err != nil {
			return nil, fmt.Errorf("factory: read journal of run %s: %w", runID, err)
		}
		e.Data, e.At = json.RawMessage(data), store.FromMillis(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Outbox.

func insertOutbox(ctx context.Context, tx *sql.Tx, ev event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_outbox (event_id, event_type, run_id, payload) VALUES (?,?,?,?)`,
		ev.ID, ev.Type, ev.RunID, mustJSON(ev))
	if err != nil {
		return fmt.Errorf("factory: queue event %s: %w", ev.Type, err)
	}
	return nil
}

type outboxRow struct {
	id                  int64
	eventID, typ, runID string
	payload             string
}

func readOutbox(ctx context.Context, q store.Querier, limit int) ([]outboxRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, event_id, event_type, run_id, payload FROM factory_outbox ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("factory: read outbox: %w", err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.id, &r.eventID, &r.typ, &r.runID, &r.payload); err != nil {
			return nil, fmt.Errorf("factory: read outbox: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func deleteOutbox(ctx context.Context, tx *sql.Tx, upTo int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM factory_outbox WHERE id <= ?`, upTo); err != nil {
		return fmt.Errorf("factory: trim outbox: %w", err)
	}
	return nil
}

// lastCommit is the workspace head the journal records: the revision of
// the last commit receipt that changed something, else the source.
func lastCommit(ctx context.Context, q store.Querier, runID, source string) (string, error) {
	entries, err := listJournal(ctx, q, runID)
	if err != nil {
		return "", err
	}
	head := source
	for _, e := range entries {
		if e.Kind != KindReceipt || e.Action != ActionCommit {
			continue
		}
		var d struct {
			Revision string `json:"revision"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Revision != "" {
			head = d.Revision
		}
	}
	return head, nil
}

// Worker messages.

func insertMessage(ctx context.Context, tx *sql.Tx, runID string, m WorkerMessage) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO factory_messages (run_id, seq, task_idx, kind, text, at)
		SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ? FROM factory_messages WHERE run_id = ?`,
		runID, m.Task, m.Kind, m.Text, store.Millis(m.At), runID)
	if err != nil {
		return fmt.Errorf("factory: record worker message of run %s: %w", runID, err)
	}
	return nil
}

func listMessages(ctx context.Context, q store.Querier, runID string) ([]WorkerMessage, error) {
	rows, err := q.QueryContext(ctx, `SELECT task_idx, kind, text, at FROM factory_messages WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("factory: list worker messages of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []WorkerMessage{}
	for rows.Next() {
		var m WorkerMessage
		var at int64
		if err := rows.Scan(&m.Task, &m.Kind, &m.Text, &at); err != nil {
			return nil, fmt.Errorf("factory: list worker messages of run %s: %w", runID, err)
		}
		m.At = store.FromMillis(at)
		out = append(out, m)
	}
	return out, rows.Err()
}
