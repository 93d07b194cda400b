package bridge

import (
	"encoding/json"
	"time"

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
