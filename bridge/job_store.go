package bridge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	j.CreatedAt, j.UpdatedAt = parseTime(created), parseTime(updated)
	if started.Valid {
		j.StartedAt = ptrTime(parseTime(started.String))
	}
	if finished.Valid {
		j.FinishedAt = ptrTime(parseTime(finished.String))
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

// audit appends one entry to a job's audit log.
func (s *Service) audit(tx *sql.Tx, jobID string, attempt int, kind string, summary, payload any) error {
	seq, err := nextSeq(tx, "bridge_audit", jobID)
	if err != nil {
		return err
	}
	sj, _ := json.Marshal(summary)
	var pj any
	if payload != nil {
		b, _ := json.Marshal(payload)
		pj = string(b)
	}
	_, err = tx.Exec(`INSERT INTO bridge_audit(job_id, seq, attempt, kind, summary, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		jobID, seq, attempt, kind, string(sj), pj, nowString(s.now()))
	return err
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

// idem is an idempotency key bound to the route it was sent to, with the
// hash of the validated request in canonical JSON: the body's whitespace
// and key order do not matter, as for workflow runs (docs/bridge-api.md).
type idem struct {
	scope string
	key   string
	body  [32]byte // hash of the canonical request, stored
	raw   [32]byte // hash of the bytes sent: what records made before canonical hashing hold
}

// newIdem hashes request, the validated request value, as canonical JSON
// (json.Marshal of a struct in field order, map keys sorted).
func newIdem(scope, key string, request any, raw []byte) (*idem, error) {
	if key == "" {
		return nil, nil
	}
	canonical, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("hash request: %w", err)
	}
	return &idem{scope: scope, key: key, body: sha256.Sum256(canonical), raw: sha256.Sum256(raw)}, nil
}

// replay returns the stored answer for a repeated key, or nil.
func (s *Service) replay(tx *sql.Tx, p Principal, k *idem) (*stored, error) {
	if k == nil {
		return nil, nil
	}
	var hash, resp []byte
	var status int
	// A record older than bridge.idempotency-retention is expired even
	// before the prune deletes it (idempotency_retention.go).
	err := tx.QueryRow(`SELECT body_hash, status, response FROM bridge_idempotency WHERE client_id = ? AND scope = ? AND key = ? AND created_at >= ?`,
		p.Client, k.scope, k.key, nowString(s.idemCutoff())).Scan(&hash, &status, &resp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if string(hash) != string(k.body[:]) && string(hash) != string(k.raw[:]) {
		return nil, errf(CodeIdempotencyConflict, "Idempotency-Key was already used with a different body")
	}
	if resp, err = store.Unpack(resp); err != nil {
		return nil, err
	}
	return &stored{status: status, body: resp}, nil
}

func (s *Service) remember(tx *sql.Tx, p Principal, k *idem, status int, v any) error {
	if k == nil {
		return nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// The response is stored packed (store.Pack); ON CONFLICT replaces an
	// expired record under the same key.
	_, err = tx.Exec(`INSERT INTO bridge_idempotency(client_id, scope, key, body_hash, status, response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (client_id, scope, key) DO UPDATE SET body_hash = excluded.body_hash, status = excluded.status,
			response = excluded.response, created_at = excluded.created_at`,
		p.Client, k.scope, k.key, k.body[:], status, store.Pack(body), nowString(s.now()))
	return err
}

// stored is a response kept for an idempotent repeat.
type stored struct {
	status int
	body   []byte
}

// createJob stores a queued job with its prompt as the first pending message.
func (s *Service) createJob(ctx context.Context, p Principal, nj newJob, key *idem) (Job, *stored, error) {
	var job Job
	var replayed *stored
	err := s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		var err error
		if replayed, err = s.replay(tx, p, key); err != nil || replayed != nil {
			return err
		}
		job, err = s.insertJob(tx, ev, p, nj)
		if err != nil {
			return err
		}
		return s.remember(tx, p, key, 202, job)
	})
	if err != nil {
		return Job{}, nil, err
	}
	if replayed == nil {
		s.sched.kick()
	}
	return job, replayed, nil
}

// createJobQueued queues a job's creation without waiting for its commit;
// the channel yields the result. Chat completions use it to start the job
// in the same commit.
func (s *Service) createJobQueued(ctx context.Context, p Principal, nj newJob) (*Job, <-chan error) {
	job := &Job{}
	var ev pending
	done := s.db.Go(ctx, func(tx *sql.Tx) error {
		ev = pending{}
		j, err := s.insertJob(tx, &ev, p, nj)
		*job = j
		return err
	}, func() { s.pub.enqueue(ev.events) })
	return job, done
}

func (s *Service) insertJob(tx *sql.Tx, ev *pending, p Principal, nj newJob) (Job, error) {
	prof := s.profiles[nj.Profile]
	now := s.now().UTC()
	if nj.ID == "" {
		nj.ID = uuid.NewString()
	}
	job := Job{
		ID: nj.ID, Client: p.Client, Profile: nj.Profile, Provider: prof.provider.Name(), Source: nj.Source,
		State: StateQueued, Prompt: nj.Prompt, WorkDir: nj.WorkDir, Metadata: nj.Metadata, Attempt: 1,
		CreatedAt: now, UpdatedAt: now,
	}
	if job.Metadata == nil {
		job.Metadata = map[string]string{}
	}
	meta, _ := json.Marshal(job.Metadata)
	ts := nowString(now)
	if _, err := tx.Exec(`INSERT INTO bridge_jobs(id, client_id, profile, provider, source, state, prompt, work_dir, metadata, attempt, created_at, updated_at, queued_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
		job.ID, job.Client, job.Profile, job.Provider, job.Source, job.State, job.Prompt, job.WorkDir, string(meta), ts, ts, ts); err != nil {
		return job, err
	}
	if _, err := tx.Exec(`INSERT INTO bridge_attempts(job_id, n, state, reason, created_at) VALUES (?, 1, ?, 'created', ?)`, job.ID, StateQueued, ts); err != nil {
		return job, err
	}
	if _, err := tx.Exec(`INSERT INTO bridge_messages(job_id, seq, attempt, role, text, status, created_at) VALUES (?, 1, 1, 'user', ?, 'pending', ?)`, job.ID, job.Prompt, ts); err != nil {
		return job, err
	}
	if err := s.audit(tx, job.ID, 1, "job.created", map[string]any{"profile": job.Profile, "provider": job.Provider, "source": job.Source}, map[string]any{"prompt": job.Prompt, "workDir": job.WorkDir, "metadata": job.Metadata}); err != nil {
		return job, err
	}
	ev.add(job.Client, job.ID, "job.created", job)
	return job, nil
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
		started = nowString(*j.StartedAt)
	}
	if j.FinishedAt != nil {
		finished = nowString(*j.FinishedAt)
	}
	queued := ""
	if j.State == StateQueued {
		queued = nowString(j.UpdatedAt)
	}
	_, err := tx.Exec(`UPDATE bridge_jobs SET state = ?, attempt = ?, session_id = ?, last_error = ?, result_text = ?, usage = ?,
		updated_at = ?, started_at = ?, finished_at = ?, queued_at = CASE WHEN ? = '' THEN queued_at ELSE ? END WHERE id = ?`,
		j.State, j.Attempt, j.SessionID, lastErr, nullIfEmpty(j.resultText), string(usage), nowString(j.UpdatedAt), started, finished, queued, queued, j.ID)
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
		a.CreatedAt = parseTime(created)
		if started.Valid {
			a.StartedAt = ptrTime(parseTime(started.String))
		}
		if finished.Valid {
			a.FinishedAt = ptrTime(parseTime(finished.String))
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *Service) messages(ctx context.Context, jobID string) ([]Message, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT seq, attempt, role, text, status, created_at FROM bridge_messages WHERE job_id = ? ORDER BY seq`, jobID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		var m Message
		var created string
		if err := rows.Scan(&m.Seq, &m.Attempt, &m.Role, &m.Text, &m.Status, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = parseTime(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// addMessage queues a user message that continues the job's conversation.
func (s *Service) addMessage(ctx context.Context, p Principal, id, text string, key *idem) (map[string]any, *stored, error) {
	var out map[string]any
	var replayed *stored
	err := s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		var err error
		if replayed, err = s.replay(tx, p, key); err != nil || replayed != nil {
			return err
		}
		job, err := s.getJob(ctx, txq{tx}, p, id)
		if err != nil {
			return err
		}
		from := job.State
		if job.State, err = Next(job.State, ActMessage); err != nil {
			return err
		}
		job.UpdatedAt = s.now().UTC()
		if from.Terminal() {
			job.FinishedAt, job.LastError, job.resultText = nil, nil, ""
		}
		seq, err := nextSeq(tx, "bridge_messages", id)
		if err != nil {
			return err
		}
		m := Message{Seq: seq, Attempt: job.Attempt, Role: "user", Text: text, Status: "pending", CreatedAt: job.UpdatedAt}
		if _, err := tx.Exec(`INSERT INTO bridge_messages(job_id, seq, attempt, role, text, status, created_at) VALUES (?, ?, ?, 'user', ?, 'pending', ?)`,
			id, seq, job.Attempt, text, nowString(m.CreatedAt)); err != nil {
			return err
		}
		if err := s.audit(tx, id, job.Attempt, "message.user", map[string]any{"seq": seq, "chars": len([]rune(text))}, map[string]any{"text": text}); err != nil {
			return err
		}
		if err := s.saveState(tx, &job, from, ActMessage, ev); err != nil {
			return err
		}
		ev.add(job.Client, id, "message.created", m)
		out = map[string]any{"message": m, "job": job}
		return s.remember(tx, p, key, 202, out)
	})
	if err != nil {
		return nil, nil, err
	}
	if replayed == nil {
		s.sched.kick()
	}
	return out, replayed, nil
}

// recover marks jobs a previous daemon left running as interrupted; queued
// and paused jobs stay as they are. Nothing accepted is lost.
func (s *Service) recover(ctx context.Context) error {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT id FROM bridge_jobs WHERE state = ?`, StateRunning)
	if err != nil {
		return fmt.Errorf("bridge: find running jobs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	owner := Principal{Owner: true}
	for _, id := range ids {
		_, err := s.change(ctx, owner, id, ActInterrupt, func(tx *sql.Tx, j *Job, ev *pending) error {
			j.LastError = &JobError{Code: JobErrInterrupted, Message: "the daemon stopped while the job was running; retry it to start again"}
			j.FinishedAt = ptrTime(s.now().UTC())
			_, err := tx.Exec(`UPDATE bridge_tools SET status = 'abandoned', finished_at = ? WHERE job_id = ? AND status = 'running'`, nowString(s.now()), j.ID)
			return err
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
