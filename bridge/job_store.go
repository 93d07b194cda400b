package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/bridge/provider"
	"github.com/agentbridge/bridge/store"
)

const jobColumns = `seq, id, client_id, profile, provider, source, state, prompt, work_dir, metadata, attempt,
	session_id, last_error, result_text, usage, created_at, updated_at, started_at, finished_at`

type scanner interface{ Scan(...any) error }

func scanJob(row scanner) (Job, error) {
	var j Job
	var meta, usage string
	var lastErr, result, started, finished sql.NullString
	var created, updated string
	err := row.Scan(&j.seq, &j.ID, &j.Client, &j.Profile, &j.Provider, &j.Source, &j.State, &j.Prompt, &j.WorkDir,
		&meta, &j.Attempt, &j.SessionID, &lastErr, &result, &usage, &created, &updated, &started, &finished)
	if err != nil {
		return j, err
	}
	j.Metadata = map[string]string{}
	_ = json.Unmarshal([]byte(meta), &j.Metadata)
	_ = json.Unmarshal([]byte(usage), &j.Usage)
	if lastErr.Valid {
		j.LastError = &JobError{}
		_ = json.Unmarshal([]byte(lastErr.String), j.LastError)
	}
	j.resultText = result.String
	j.CreatedAt, j.UpdatedAt = store.FromText(created), store.FromText(updated)
	if started.Valid {
		j.StartedAt = ptrTime(store.FromText(started.String))
	}
	if finished.Valid {
		j.FinishedAt = ptrTime(store.FromText(finished.String))
	}
	return j, nil
}

// visible is the SQL condition that hides other clients' jobs. The owner sees all.
func visible(p Principal) (string, []any) {
	if p.Owner {
		return "1=1", nil
	}
	return "client_id = ?", []any{p.Client}
}

// getJob reads a job the principal may see; another client's job is 404.
func (s *Service) getJob(ctx context.Context, q store.Querier, p Principal, id string) (Job, error) {
	cond, args := visible(p)
	row := q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM bridge_jobs WHERE id = ? AND `+cond, append([]any{id}, args...)...)
	j, err := scanJob(row)
	if errors.Is(err, sql.ErrNoRows) {
		return j, errf(CodeNotFound, "no job %s", id)
	}
	if err != nil {
		return j, fmt.Errorf("read job: %w", err)
	}
	return j, nil
}

// txq adapts a transaction to store.Querier.
type txq struct{ tx *sql.Tx }

func (t txq) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, q, args...)
}
func (t txq) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, q, args...)
}

// pending collects ring events to publish once the transaction commits.
type pending struct {
	events []event
}

func (p *pending) add(client, jobID, typ string, data any) {
	p.events = append(p.events, event{Client: client, JobID: jobID, Type: typ, Data: data})
}

// write runs fn in a group-committed transaction and queues its events for
// the ring right after the commit, in commit order, so no event describes a
// change that could be lost and events never overtake each other.
func (s *Service) write(ctx context.Context, fn func(tx *sql.Tx, ev *pending) error) error {
	var ev pending
	return s.db.WriteThen(ctx, func(tx *sql.Tx) error {
		ev = pending{}
		return fn(tx, &ev)
	}, func() { s.pub.enqueue(ev.events) })
}

func nextSeq(tx *sql.Tx, table, jobID string) (int, error) {
	var n int
	err := tx.QueryRow(`SELECT COALESCE(MAX(seq), 0) + 1 FROM `+table+` WHERE job_id = ?`, jobID).Scan(&n)
	return n, err
}

// newJob is a validated job creation.
type newJob struct {
	ID       string // optional: chat completions choose it to wait before it exists
	Profile  string
	Prompt   string
	WorkDir  string
	Metadata map[string]string
	Source   string
}

// createJobQueued queues the creation of row (jobRow) without waiting for
// its commit; the channel yields the result. Chat completions use it to
// start the job in the same commit, and give the same row to its first
// turn (firstTurn), so the row's provider is picked once (the turn picks
// its CLI again in resolve).
func (s *Service) createJobQueued(ctx context.Context, row Job) <-chan error {
	var ev pending
	return s.db.Go(ctx, func(tx *sql.Tx) error {
		ev = pending{}
		return s.insertJobRow(tx, &ev, row)
	}, func() { s.pub.enqueue(ev.events) })
}

// jobRow is the job nj creates for p: queued, first attempt.
func (s *Service) jobRow(p Principal, nj newJob, now time.Time) Job {
	job := Job{
		ID: nj.ID, Client: p.Client, Profile: nj.Profile, Provider: s.profiles[nj.Profile].provider.Name(), Source: nj.Source,
		State: StateQueued, Prompt: nj.Prompt, WorkDir: nj.WorkDir, Metadata: nj.Metadata, Attempt: 1,
		CreatedAt: now, UpdatedAt: now,
	}
	if job.Metadata == nil {
		job.Metadata = map[string]string{}
	}
	return job
}

func (s *Service) insertJob(tx *sql.Tx, ev *pending, p Principal, nj newJob) (Job, error) {
	now := s.now().UTC()
	if nj.ID == "" {
		nj.ID = uuid.NewString()
	}
	job := s.jobRow(p, nj, now)
	return job, s.insertJobRow(tx, ev, job)
}

// insertJobRow writes a new job (jobRow): its row, first attempt, prompt
// as its first message, audit entry and job.created event.
func (s *Service) insertJobRow(tx *sql.Tx, ev *pending, job Job) error {
	meta, _ := json.Marshal(job.Metadata)
	ts := store.Text(job.CreatedAt)
	if _, err := tx.Exec(`INSERT INTO bridge_jobs(id, client_id, profile, provider, source, state, prompt, work_dir, metadata, attempt, created_at, updated_at, queued_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
		job.ID, job.Client, job.Profile, job.Provider, job.Source, job.State, job.Prompt, job.WorkDir, string(meta), ts, ts, ts); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO bridge_attempts(job_id, n, state, reason, created_at) VALUES (?, 1, ?, 'created', ?)`, job.ID, StateQueued, ts); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO bridge_messages(job_id, seq, attempt, role, text, status, created_at) VALUES (?, 1, 1, 'user', ?, 'pending', ?)`, job.ID, job.Prompt, ts); err != nil {
		return err
	}
	if err := s.audit(tx, job.ID, 1, "job.created", map[string]any{"profile": job.Profile, "provider": job.Provider, "source": job.Source}, map[string]any{"prompt": job.Prompt, "workDir": job.WorkDir, "metadata": job.Metadata}); err != nil {
		return err
	}
	ev.add(job.Client, job.ID, "job.created", job)
	return nil
}

// change applies act to a job in one transaction: the transition table
// decides, then mutate (optional) adds its own changes.
func (s *Service) change(ctx context.Context, p Principal, id string, act Action, mutate func(tx *sql.Tx, j *Job, ev *pending) error) (Job, error) {
	var job Job
	err := s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		var err error
		job, err = s.changeTx(ctx, tx, ev, p, id, act, mutate)
		return err
	})
	return job, err
}

// changeTx is change inside a transaction the caller runs.
func (s *Service) changeTx(ctx context.Context, tx *sql.Tx, ev *pending, p Principal, id string, act Action, mutate func(tx *sql.Tx, j *Job, ev *pending) error) (Job, error) {
	job, err := s.getJob(ctx, txq{tx}, p, id)
	if err != nil {
		return job, err
	}
	to, err := Next(job.State, act)
	if err != nil {
		return job, err
	}
	from := job.State
	job.State = to
	job.UpdatedAt = s.now().UTC()
	if mutate != nil {
		if err := mutate(tx, &job, ev); err != nil {
			return job, err
		}
	}
	return job, s.saveState(tx, &job, from, act, ev)
}

// saveState writes a job's state and its derived fields and records it.
func (s *Service) saveState(tx *sql.Tx, j *Job, from State, act Action, ev *pending) error {
	var lastErr any
	if j.LastError != nil {
		b, _ := json.Marshal(j.LastError)
		lastErr = string(b)
	}
	usage, _ := json.Marshal(j.Usage)
	var started, finished any
	if j.StartedAt != nil {
		started = store.Text(*j.StartedAt)
	}
	if j.FinishedAt != nil {
		finished = store.Text(*j.FinishedAt)
	}
	queued := ""
	if j.State == StateQueued {
		queued = store.Text(j.UpdatedAt)
	}
	_, err := tx.Exec(`UPDATE bridge_jobs SET state = ?, attempt = ?, session_id = ?, last_error = ?, result_text = ?, usage = ?,
		updated_at = ?, started_at = ?, finished_at = ?, queued_at = CASE WHEN ? = '' THEN queued_at ELSE ? END WHERE id = ?`,
		j.State, j.Attempt, j.SessionID, lastErr, nullIfEmpty(j.resultText), string(usage), store.Text(j.UpdatedAt), started, finished, queued, queued, j.ID)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE bridge_attempts SET state = ?, session_id = ?, error = ?, usage = ?, started_at = COALESCE(started_at, ?), finished_at = ? WHERE job_id = ? AND n = ?`,
		j.State, j.SessionID, lastErr, string(usage), started, finished, j.ID, j.Attempt); err != nil {
		return err
	}
	if from != j.State || act == ActMessage {
		if err := s.audit(tx, j.ID, j.Attempt, "job.state", map[string]any{"from": from, "to": j.State, "action": act, "error": j.LastError}, nil); err != nil {
			return err
		}
	}
	ev.add(j.Client, j.ID, "job.updated", *j)
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// listJobs pages a client's jobs by creation order.
func (s *Service) listJobs(ctx context.Context, p Principal, afterSeq int64, limit int, desc bool) ([]Job, bool, error) {
	cond, args := visible(p)
	op, order := ">", "ASC"
	if desc {
		op, order = "<", "DESC"
		if afterSeq == 0 {
			afterSeq = 1 << 62
		}
	}
	args = append(args, afterSeq, limit+1)
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+jobColumns+` FROM bridge_jobs WHERE `+cond+` AND seq `+op+` ? ORDER BY seq `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	jobs := []Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, false, err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(jobs) > limit
	if more {
		jobs = jobs[:limit]
	}
	return jobs, more, nil
}

func (s *Service) attempts(ctx context.Context, jobID string) ([]Attempt, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT n, state, reason, session_id, error, usage, created_at, started_at, finished_at FROM bridge_attempts WHERE job_id = ? ORDER BY n`, jobID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Attempt{}
	for rows.Next() {
		var a Attempt
		var errS, started, finished sql.NullString
		var usage, created string
		if err := rows.Scan(&a.N, &a.State, &a.Reason, &a.SessionID, &errS, &usage, &created, &started, &finished); err != nil {
			return nil, err
		}
		if errS.Valid {
			a.Error = &JobError{}
			_ = json.Unmarshal([]byte(errS.String), a.Error)
		}
		_ = json.Unmarshal([]byte(usage), &a.Usage)
		a.CreatedAt = store.FromText(created)
		if started.Valid {
			a.StartedAt = ptrTime(store.FromText(started.String))
		}
		if finished.Valid {
			a.FinishedAt = ptrTime(store.FromText(finished.String))
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// recover marks jobs a previous daemon left running as interrupted; queued
// and paused jobs stay as they are. Nothing accepted is lost.
func (s *Service) recover(ctx context.Context) error {
	ids, err := s.jobIDsIn(ctx, StateRunning, -1)
	if err != nil {
		return fmt.Errorf("bridge: find running jobs: %w", err)
	}
	owner := Principal{Owner: true}
	for _, id := range ids {
		_, err := s.change(ctx, owner, id, ActInterrupt, func(tx *sql.Tx, j *Job, ev *pending) error {
			j.LastError = &JobError{Code: JobErrInterrupted, Message: "the daemon stopped while the job was running; retry it to start again"}
			j.FinishedAt = ptrTime(s.now().UTC())
			return abandonAllTools(tx, j.ID, s.now())
		})
		if err != nil {
			return fmt.Errorf("bridge: interrupt job %s: %w", id, err)
		}
		s.log.Warn("job was running when the daemon stopped; marked interrupted", "job", id)
	}
	return nil
}

// jobCounts counts the jobs p may see by state (for /status): a client
// learns nothing about other clients' jobs.
func (s *Service) jobCounts(ctx context.Context, p Principal) (map[State]int, error) {
	out := map[State]int{}
	for _, st := range []State{StateQueued, StateRunning, StatePaused, StateSucceeded, StateFailed, StateCancelled, StateInterrupted} {
		out[st] = 0
	}
	cond, args := visible(p)
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT state, count(*) FROM bridge_jobs WHERE `+cond+` GROUP BY state`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var st State
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

// usageAdd accumulates provider usage.
func usageAdd(a, b provider.Usage) provider.Usage {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.CacheReadTokens += b.CacheReadTokens
	a.CacheWriteTokens += b.CacheWriteTokens
	a.ReasoningTokens += b.ReasoningTokens
	a.CostUSD += b.CostUSD
	return a
}

func excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// jobIDsIn lists up to limit (-1: all) ids of jobs in state, in queue
// order (queued_at, then creation).
func (s *Service) jobIDsIn(ctx context.Context, state State, limit int) ([]string, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id FROM bridge_jobs WHERE state = ? ORDER BY queued_at, seq LIMIT ?`, state, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// startAttempt records attempt j.Attempt (a retry) with the job's prompt
// as its first pending message.
func (s *Service) startAttempt(tx *sql.Tx, j Job, now time.Time) error {
	if _, err := tx.Exec(`INSERT INTO bridge_attempts(job_id, n, state, reason, created_at) VALUES (?, ?, ?, 'retry', ?)`, j.ID, j.Attempt, StateQueued, store.Text(now)); err != nil {
		return err
	}
	_, err := insertMessage(tx, j, "user", j.Prompt, "pending", now)
	return err
}

// setJobProvider names the provider a job's turn really runs with.
func setJobProvider(tx *sql.Tx, jobID, name string) error {
	_, err := tx.Exec(`UPDATE bridge_jobs SET provider = ? WHERE id = ?`, name, jobID)
	return err
}

// setJobSession records the agent's session id on the job and its attempt.
func setJobSession(tx *sql.Tx, j Job, session string) error {
	if _, err := tx.Exec(`UPDATE bridge_jobs SET session_id = ? WHERE id = ?`, session, j.ID); err != nil {
		return err
	}
	_, err := tx.Exec(`UPDATE bridge_attempts SET session_id = ? WHERE job_id = ? AND n = ?`, session, j.ID, j.Attempt)
	return err
}

// addJobUsage adds a turn's usage to the job's total.
func addJobUsage(tx *sql.Tx, jobID string, u provider.Usage) error {
	_, err := tx.Exec(`UPDATE bridge_jobs SET usage = json_object(
		'inputTokens', json_extract(usage, '$.inputTokens') + ?, 'outputTokens', json_extract(usage, '$.outputTokens') + ?,
		'cacheReadTokens', COALESCE(json_extract(usage, '$.cacheReadTokens'), 0) + ?, 'cacheWriteTokens', COALESCE(json_extract(usage, '$.cacheWriteTokens'), 0) + ?,
		'reasoningTokens', COALESCE(json_extract(usage, '$.reasoningTokens'), 0) + ?, 'costUsd', COALESCE(json_extract(usage, '$.costUsd'), 0) + ?) WHERE id = ?`,
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.CostUSD, jobID)
	return err
}
