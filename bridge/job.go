package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/bridge/provider"
)

// State is a job's lifecycle state.
//
//	queued      accepted, waiting for a free slot (or for its next turn)
//	running     an agent process is working on it
//	paused      held: not scheduled until resumed (a running agent is stopped;
//	            its conversation is kept and continues on resume)
//	succeeded   the last turn ended with a result
//	failed      the last turn failed (agent error, crash, timeout, inactivity)
//	cancelled   stopped by the client; final
//	interrupted the daemon stopped while it was running; retry starts again
type State string

// Job states.
const (
	StateQueued      State = "queued"
	StateRunning     State = "running"
	StatePaused      State = "paused"
	StateSucceeded   State = "succeeded"
	StateFailed      State = "failed"
	StateCancelled   State = "cancelled"
	StateInterrupted State = "interrupted"
)

// Terminal reports whether no work is pending for the job.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateCancelled, StateInterrupted:
		return true
	}
	return false
}

// Action is something that changes a job's state.
type Action string

// Actions of the transition table.
const (
	ActStart     Action = "start"     // scheduler picks a queued job
	ActSucceed   Action = "succeed"   // the turn ended with a result
	ActFail      Action = "fail"      // the turn failed
	ActRequeue   Action = "requeue"   // a turn ended and another message waits
	ActPause     Action = "pause"     // client
	ActResume    Action = "resume"    // client
	ActCancel    Action = "cancel"    // client
	ActRetry     Action = "retry"     // client: a new attempt
	ActMessage   Action = "message"   // client: continue the conversation
	ActInterrupt Action = "interrupt" // daemon restart found it running
)

// transitions is the one place that says which action moves which state where.
var transitions = map[State]map[Action]State{
	StateQueued: {
		ActStart: StateRunning, ActPause: StatePaused, ActCancel: StateCancelled,
		ActMessage: StateQueued,
	},
	StateRunning: {
		ActSucceed: StateSucceeded, ActFail: StateFailed, ActRequeue: StateQueued,
		ActPause: StatePaused, ActCancel: StateCancelled, ActInterrupt: StateInterrupted,
		ActMessage: StateRunning,
	},
	StatePaused: {
		ActResume: StateQueued, ActCancel: StateCancelled, ActMessage: StatePaused,
	},
	StateSucceeded:   {ActRetry: StateQueued, ActMessage: StateQueued},
	StateFailed:      {ActRetry: StateQueued, ActMessage: StateQueued},
	StateInterrupted: {ActRetry: StateQueued, ActMessage: StateQueued},
	StateCancelled:   {ActRetry: StateQueued},
}

// Next returns the state after act, or an invalid-transition error.
func Next(from State, act Action) (State, error) {
	if to, ok := transitions[from][act]; ok {
		return to, nil
	}
	return "", errf(CodeInvalidTransition, "cannot %s a job that is %s", act, from)
}

// Job is the API's view of a job.
type Job struct {
	ID         string            `json:"id"`
	Client     string            `json:"client"`
	Profile    string            `json:"profile"`
	Provider   string            `json:"provider"`
	Source     string            `json:"source"`
	State      State             `json:"state"`
	Prompt     string            `json:"prompt"`
	WorkDir    string            `json:"workDir,omitempty"`
	Metadata   map[string]string `json:"metadata"`
	Attempt    int               `json:"attempt"`
	SessionID  string            `json:"sessionId,omitempty"`
	LastError  *JobError         `json:"lastError"`
	Usage      provider.Usage    `json:"usage"`
	CreatedAt  time.Time         `json:"createdAt"`
	UpdatedAt  time.Time         `json:"updatedAt"`
	StartedAt  *time.Time        `json:"startedAt"`
	FinishedAt *time.Time        `json:"finishedAt"`

	seq        int64
	resultText string
}

// JobError says why the last turn failed.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job error codes (lastError.code).
const (
	JobErrAgent       = "agent_error"           // the agent reported an error result
	JobErrCrashed     = "agent_crashed"         // the process ended without a result
	JobErrTimeout     = "job_timeout"           // wall-clock limit reached
	JobErrInactive    = "agent_inactive"        // no output within the inactivity limit
	JobErrUnavailable = "provider_unavailable"  // the agent CLI could not be started, or could not reach its service
	JobErrInterrupted = "daemon_restarted"      // the daemon stopped while it ran
	JobErrAuth        = "provider_auth"         // the agent CLI is not logged in, or its login was refused
	JobErrRateLimited = "provider_rate_limited" // the provider refused the request for rate or usage limits
)

// Attempt is one run of a job from its original prompt.
type Attempt struct {
	N          int            `json:"n"`
	State      State          `json:"state"`
	Reason     string         `json:"reason"`
	SessionID  string         `json:"sessionId,omitempty"`
	Error      *JobError      `json:"error"`
	Usage      provider.Usage `json:"usage"`
	CreatedAt  time.Time      `json:"createdAt"`
	StartedAt  *time.Time     `json:"startedAt"`
	FinishedAt *time.Time     `json:"finishedAt"`
}

// Message is one entry of a job's conversation.
type Message struct {
	Seq       int       `json:"seq"`
	Attempt   int       `json:"attempt"`
	Role      string    `json:"role"` // user or assistant
	Text      string    `json:"text"`
	Status    string    `json:"status"` // user: pending, delivered, cancelled; assistant: final
	CreatedAt time.Time `json:"createdAt"`
}

// AuditEntry is one line of a job's append-only audit log.
type AuditEntry struct {
	Seq       int             `json:"seq"`
	Attempt   int             `json:"attempt"`
	Kind      string          `json:"kind"`
	Summary   json.RawMessage `json:"summary"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Tool is one tool call the agent made, numbered from 1 within the job.
type Tool struct {
	Seq     int    `json:"seq"`
	Attempt int    `json:"attempt"`
	CallID  string `json:"callId"`
	// ParentCallID is the callId of the tool call (a subagent) inside which
	// this one was made; empty for the main agent's calls.
	ParentCallID string          `json:"parentCallId,omitempty"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	Output       *string         `json:"output"`
	Status       string          `json:"status"` // running, succeeded, failed, abandoned
	Error        *string         `json:"error"`
	Files        []string        `json:"files"`
	StartedAt    time.Time       `json:"startedAt"`
	FinishedAt   *time.Time      `json:"finishedAt"`
	DurationMS   *int64          `json:"durationMs"`
}

func ptrTime(t time.Time) *time.Time { return &t }

// JobRequest is the body of POST /v1/bridge/jobs (docs/bridge-api.md, "Jobs").
type JobRequest struct {
	Profile  *string           `json:"profile"`
	Prompt   *string           `json:"prompt"`
	WorkDir  *string           `json:"workDir"`
	Metadata map[string]string `json:"metadata"`
}

// jobIdemForm is the canonical form of a job request that Idempotency-Key
// compares: the validated request, the default profile filled in. Metadata
// is never null in it, so an absent and an empty metadata are the same.
type jobIdemForm struct {
	Profile  string            `json:"profile"`
	Prompt   string            `json:"prompt"`
	WorkDir  string            `json:"workDir"`
	Metadata map[string]string `json:"metadata"`
}

// Bounds of job creation.
const (
	maxTextChars   = 100_000
	maxMetaEntries = 32
	maxMetaKey     = 64
	maxMetaValue   = 1024
	maxWorkDir     = 4096
)

func (s *Service) validateJob(p Principal, req JobRequest) (newJob, error) {
	nj := newJob{Profile: "default", Source: "api", Metadata: req.Metadata}
	if req.Prompt == nil {
		return nj, errf(CodeInvalidRequest, "prompt is required")
	}
	// A blank prompt is refused like an empty one: the agent CLIs answer it
	// with no result at all (see bridge/provider recorded transcripts).
	if n := utf8.RuneCountInString(*req.Prompt); n < 1 || n > maxTextChars || strings.TrimSpace(*req.Prompt) == "" {
		return nj, errf(CodeInvalidRequest, "prompt must be 1 to %d characters, not only whitespace", maxTextChars)
	}
	nj.Prompt = *req.Prompt
	if req.Profile != nil {
		nj.Profile = *req.Profile
	}
	if _, ok := s.profiles[nj.Profile]; !ok {
		return nj, errf(CodeUnknownProfile, "profile %q is not configured", nj.Profile)
	}
	if !p.MayUse(nj.Profile) {
		return nj, errf(CodeProfileNotAllowed, "this token may not use profile %q", nj.Profile)
	}
	if req.WorkDir != nil {
		if *req.WorkDir == "" || len(*req.WorkDir) > maxWorkDir || !isAbs(*req.WorkDir) {
			return nj, errf(CodeInvalidRequest, "workDir must be an absolute path of at most %d bytes", maxWorkDir)
		}
		if err := workDirOK(*req.WorkDir); err != nil {
			return nj, err
		}
		nj.WorkDir = *req.WorkDir
	}
	if len(req.Metadata) > maxMetaEntries {
		return nj, errf(CodeInvalidRequest, "metadata may hold at most %d entries", maxMetaEntries)
	}
	for k, v := range req.Metadata {
		if k == "" || utf8.RuneCountInString(k) > maxMetaKey {
			return nj, errf(CodeInvalidRequest, "metadata keys must be 1 to %d characters", maxMetaKey)
		}
		if utf8.RuneCountInString(v) > maxMetaValue {
			return nj, errf(CodeInvalidRequest, "metadata values must be at most %d characters", maxMetaValue)
		}
	}
	return nj, nil
}

func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || (len(p) > 2 && p[1] == ':' && (p[2] == '\\' || p[2] == '/'))
}

// CreateJob validates and queues a job with its prompt as the first
// pending message. With an Idempotency-Key, a repeat of the same request
// answers the stored reply (replayed non-nil) and changes nothing.
func (s *Service) CreateJob(ctx context.Context, p Principal, req JobRequest, key Idempotency) (job Job, replayed *Replay, err error) {
	nj, err := s.validateJob(p, req)
	if err != nil {
		return Job{}, nil, err
	}
	form := jobIdemForm{Profile: nj.Profile, Prompt: nj.Prompt, WorkDir: nj.WorkDir, Metadata: nj.Metadata}
	if form.Metadata == nil {
		form.Metadata = map[string]string{}
	}
	k, err := newIdem("POST /v1/bridge/jobs", key.Key, form, key.Body)
	if err != nil {
		return Job{}, nil, err
	}
	err = s.write(ctx, func(tx *sql.Tx, ev *pending) error {
		var err error
		if replayed, err = s.replay(ctx, tx, p, k); err != nil || replayed != nil {
			return err
		}
		job, err = s.insertJob(tx, ev, p, nj)
		if err != nil {
			return err
		}
		return s.remember(ctx, tx, p, k, 202, job)
	})
	if err != nil {
		return Job{}, nil, err
	}
	if replayed == nil {
		s.sched.kick()
	}
	return job, replayed, nil
}

// Job reads a job the principal may see; another client's job is
// not_found.
func (s *Service) Job(ctx context.Context, p Principal, id string) (Job, error) {
	return s.getJob(ctx, s.db.Reader(), p, id)
}

// JobQuery pages GET /v1/bridge/jobs.
type JobQuery struct {
	Limit int
	// After is the opaque cursor of the previous page's next.
	After string
	Desc  bool
}

// JobPage is a page of jobs in creation order. Fields are in JSON name
// order: the answer's bytes are what encoding a map gave.
type JobPage struct {
	HasMore bool    `json:"hasMore"`
	Jobs    []Job   `json:"jobs"`
	Next    *string `json:"next"`
}

// jobsCursor is the position of GET /v1/bridge/jobs?after=.
type jobsCursor struct {
	Seq int64 `json:"s"`
}

// ListJobs pages the jobs p may see. Cursors are signed and bound to the
// client and the order.
func (s *Service) ListJobs(ctx context.Context, p Principal, q JobQuery) (JobPage, error) {
	order := "asc"
	if q.Desc {
		order = "desc"
	}
	scope := "jobs|" + p.Client + "|" + order
	var cur jobsCursor
	if q.After != "" {
		if err := s.cursors.Open(scope, q.After, &cur); err != nil {
			return JobPage{}, errf(CodeInvalidParameter, "after is not a cursor of this list (cursors are bound to the client and order)")
		}
	}
	jobs, more, err := s.listJobs(ctx, p, cur.Seq, q.Limit, q.Desc)
	if err != nil {
		return JobPage{}, err
	}
	page := JobPage{Jobs: jobs, HasMore: more}
	if more {
		c, err := s.cursors.Sign(scope, jobsCursor{Seq: jobs[len(jobs)-1].seq})
		if err != nil {
			return JobPage{}, err
		}
		page.Next = &c
	}
	return page, nil
}

// AttemptList is a job's attempts (JSON name order).
type AttemptList struct {
	Attempts []Attempt `json:"attempts"`
	Current  int       `json:"current"`
	JobID    string    `json:"jobId"`
}

// Attempts lists the attempts of a job p may see.
func (s *Service) Attempts(ctx context.Context, p Principal, id string) (AttemptList, error) {
	j, err := s.Job(ctx, p, id)
	if err != nil {
		return AttemptList{}, err
	}
	atts, err := s.attempts(ctx, j.ID)
	return AttemptList{JobID: j.ID, Current: j.Attempt, Attempts: atts}, err
}

// JobResult is a job's outcome so far (JSON name order).
type JobResult struct {
	Attempt int `json:"attempt"`
	// Demo: the echo demo's answer is not an agent's (README "Agent providers").
	Demo       bool           `json:"demo"`
	Error      *JobError      `json:"error"`
	FinishedAt *time.Time     `json:"finishedAt"`
	JobID      string         `json:"jobId"`
	Result     *string        `json:"result"`
	State      State          `json:"state"`
	Usage      provider.Usage `json:"usage"`
}

// Result reads a job's outcome; Result is set once the job is terminal
// with an answer.
func (s *Service) Result(ctx context.Context, p Principal, id string) (JobResult, error) {
	job, err := s.Job(ctx, p, id)
	if err != nil {
		return JobResult{}, err
	}
	res := JobResult{JobID: job.ID, State: job.State, Attempt: job.Attempt, Error: job.LastError, Usage: job.Usage,
		FinishedAt: job.FinishedAt, Demo: job.Provider == provider.NameEcho}
	if job.State.Terminal() && job.resultText != "" {
		res.Result = &job.resultText
	}
	return res, nil
}

// Control applies a client's pause, resume, cancel or retry to a job and
// stops or starts its agent accordingly. A state that does not allow it is
// invalid_transition.
func (s *Service) Control(ctx context.Context, p Principal, id string, act Action) (Job, error) {
	switch act {
	case ActPause, ActResume, ActCancel, ActRetry:
	default:
		return Job{}, errf(CodeInvalidRequest, "%s is not a control action", act)
	}
	if act == ActPause || act == ActCancel {
		s.sched.flush(id)
	}
	job, err := s.change(ctx, p, id, act, func(tx *sql.Tx, j *Job, ev *pending) error {
		now := s.now().UTC()
		switch act {
		case ActCancel:
			j.FinishedAt = &now
			return cancelPendingMessages(tx, j.ID)
		case ActRetry:
			j.Attempt++
			j.SessionID, j.LastError, j.resultText, j.FinishedAt, j.StartedAt = "", nil, "", nil, nil
			j.Usage = provider.Usage{}
			return s.startAttempt(tx, *j, now)
		}
		return nil
	})
	if err != nil {
		return job, err
	}
	switch act {
	case ActPause:
		s.sched.stop(id, errPaused)
		s.waiters.finish(job)
	case ActCancel:
		s.sched.stop(id, errCancelled)
		s.waiters.finish(job)
	case ActResume, ActRetry:
		s.sched.kick()
	}
	return job, nil
}
