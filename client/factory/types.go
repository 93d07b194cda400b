// Package factory holds the wire types of the factory API (docs/factory-api.md).
package factory

import (
	"encoding/json"
	"time"
)

// Run is a factory run as the API serves it.
type Run struct {
	ID                 string          `json:"id"`
	Mode               string          `json:"mode"`
	State              string          `json:"state"`
	Repo               string          `json:"repo"`
	Subdir             string          `json:"subdir,omitempty"`
	Instruction        string          `json:"instruction,omitempty"`
	Provider           string          `json:"provider,omitempty"`
	Profile            string          `json:"profile,omitempty"`
	Policy             Policy          `json:"policy"`
	SourceRevision     string          `json:"source_revision,omitempty"`
	SourceTree         string          `json:"source_tree,omitempty"`
	Workspace          string          `json:"workspace,omitempty"`
	CheckpointRevision string          `json:"checkpoint_revision,omitempty"`
	ChangedFiles       []string        `json:"changed_files"`
	DiffBytes          int64           `json:"diff_bytes"`
	Diff               *string         `json:"diff,omitempty"`
	PlanRevision       int             `json:"plan_revision"`
	Progress           *Progress       `json:"progress,omitempty"`
	Error              *RunError       `json:"error,omitempty"`
	RetryOf            string          `json:"retry_of,omitempty"`
	Project            *Project        `json:"project,omitempty"`
	Tasks              []Task          `json:"tasks,omitempty"`
	Turns              []Turn          `json:"turns,omitempty"`
	Verification       []Verification  `json:"verification,omitempty"`
	FinalVerification  *Verification   `json:"final_verification,omitempty"`
	Journal            *JournalSummary `json:"journal,omitempty"`
	CreatedAt          time.Time       `json:"created_at"`
	StartedAt          *time.Time      `json:"started_at,omitempty"`
	FinishedAt         *time.Time      `json:"finished_at,omitempty"`
	UpdatedAt          time.Time       `json:"updated_at"`
}

// CreateRequest is the body of POST /api/v1/runs.
type CreateRequest struct {
	Repo           string   `json:"repo"`
	Mode           string   `json:"mode"`
	Instruction    string   `json:"instruction,omitempty"`
	Provider       string   `json:"provider,omitempty"`
	Profile        string   `json:"profile,omitempty"`
	Verify         []string `json:"verify,omitempty"`
	VerifyTimeout  string   `json:"verify_timeout,omitempty"`
	RepairAttempts *int     `json:"repair_attempts,omitempty"`
	// Project binds the run to a platform project whose readers may read it.
	Project *Project `json:"project,omitempty"`
}

// Project is the platform project a run is bound to at creation: the
// tenant and project ids of the platform's scopes (docs/platform-api.md).
// Platform principals read a run only through it (docs/factory-api.md,
// "Access").
type Project struct {
	Tenant  string `json:"tenant"`
	Project string `json:"project"`
}

// RunPage is a page of runs, newest first.
type RunPage struct {
	Runs       []Run  `json:"runs"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// Plan is the plan view of a run: its tasks and the frozen settings.
type Plan struct {
	RunID    string       `json:"run_id"`
	Revision int          `json:"revision"`
	Product  PlanProduct  `json:"product"`
	Source   PlanSource   `json:"source"`
	Provider PlanProvider `json:"provider"`
	Role     string       `json:"role"`
	Policy   Policy       `json:"policy"`
	// Checks are the verification commands, frozen before the agent runs
	// (empty until the workspace is cloned).
	Checks []PlannedCheck `json:"checks"`
	Tasks  []Task         `json:"tasks"`
}

// JournalView is the journal of a run with its chain check.
type JournalView struct {
	RunID   string  `json:"run_id"`
	Entries []Entry `json:"entries"`
	JournalSummary
}

// HandoffRequest is the body of POST /api/v1/runs/{id}/handoff: the new
// provider configuration (a profile, or a provider with default settings).
type HandoffRequest struct {
	Provider string `json:"provider,omitempty"`
	Profile  string `json:"profile,omitempty"`
}

// AnswerRequest is the body of POST /api/v1/runs/{id}/answer.
type AnswerRequest struct {
	Text string `json:"text"`
}

// ReconcileRequest is the body of POST /api/v1/runs/{id}/reconcile.
type ReconcileRequest struct {
	// Note says what the operator found and decided; it is journalled.
	Note string `json:"note"`
}

// Policy is the frozen policy and runner settings of a run (part of its plan).
type Policy struct {
	RepairAttempts int `json:"repair_attempts"`
	// Verify, when set, are the verification commands the request named
	// (each run by the shell); otherwise .factory.yaml, else detection.
	Verify         []string `json:"verify,omitempty"`
	CommandTimeout Duration `json:"command_timeout"`
	AgentTimeout   Duration `json:"agent_timeout"`
	MaxCommands    int      `json:"max_commands"`
	// RateLimitBackoff is the wait before the first automatic retry after
	// a provider rate limit; it doubles for each further retry.
	RateLimitBackoff Duration `json:"rate_limit_backoff"`
	RateLimitRetries int      `json:"rate_limit_retries"`
	DiffLimit        int64    `json:"diff_limit"`
	// Runner is how work is isolated: a fresh clone in the data directory,
	// every process in its own process group.
	Runner string `json:"runner"`
}

// Progress is what an active run is doing now.
type Progress struct {
	Task    int    `json:"task,omitempty"`
	Title   string `json:"title,omitempty"`
	Command string `json:"command,omitempty"`
	// Paused says why and until when the task waits (a provider rate limit).
	Paused string `json:"paused,omitempty"`
}

// RunError says why a run failed or needs reconciliation.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Task is one step of a run's plan.
type Task struct {
	Index       int        `json:"index"`
	Kind        string     `json:"kind"`
	Role        string     `json:"role"`
	Title       string     `json:"title"`
	Instruction string     `json:"instruction,omitempty"`
	State       string     `json:"state"`
	Revision    int        `json:"revision"`
	Attempt     int        `json:"attempt,omitempty"`
	Error       string     `json:"error,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
}

// Turn is one agent turn: the provider's events, exit code and answer.
type Turn struct {
	Task int `json:"task"`
	// Turn counts the turns of the task: more than one when a turn was
	// refused by a provider rate limit and retried.
	Turn       int         `json:"turn"`
	Provider   string      `json:"provider"`
	ExitCode   int         `json:"exit_code"`
	IsError    bool        `json:"is_error"`
	Failure    string      `json:"failure,omitempty"`
	Text       string      `json:"text,omitempty"`
	Stderr     string      `json:"stderr,omitempty"`
	Events     []TurnEvent `json:"events"`
	StartedAt  time.Time   `json:"started_at"`
	DurationMS int64       `json:"duration_ms"`
}

// Verification is one attempt: every effective command and its outcome.
type Verification struct {
	Attempt  int     `json:"attempt"`
	Passed   bool    `json:"passed"`
	Commands []Check `json:"commands"`
}

// JournalSummary is the chain check served with a run and its journal.
type JournalSummary struct {
	Entries int    `json:"entries"`
	Valid   bool   `json:"valid"`
	Problem string `json:"problem,omitempty"`
	// OpenIntents are intents without a receipt or reconciliation.
	OpenIntents []int `json:"open_intents"`
}

// PlanProduct is the project the run works on.
type PlanProduct struct {
	Repo   string `json:"repo"`
	Subdir string `json:"subdir,omitempty"`
	Mode   string `json:"mode"`
}

// PlanSource is the frozen source of the run.
type PlanSource struct {
	Revision string `json:"revision,omitempty"`
	Tree     string `json:"tree,omitempty"`
}

// PlanProvider is the coding provider configuration of the run.
type PlanProvider struct {
	Name    string `json:"name,omitempty"`
	Profile string `json:"profile,omitempty"`
}

// PlannedCheck is a verification command frozen in the plan before the agent
// runs, so the agent cannot change what judges its work.
type PlannedCheck struct {
	Name      string   `json:"name"`
	Command   []string `json:"command"`
	Source    string   `json:"source"`
	TimeoutMS int64    `json:"timeout_ms"`
}

// Entry is one journal entry. Hash is the SHA-256 of the entry's fields and
// PrevHash, the previous entry's Hash ("" for the first): editing, removing
// or reordering any entry breaks the chain (VerifyJournal).
type Entry struct {
	Seq      int             `json:"seq"`
	Kind     string          `json:"kind"`
	Action   string          `json:"action"`
	Ref      int             `json:"ref,omitempty"`
	Data     json.RawMessage `json:"data"`
	At       time.Time       `json:"at"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// Duration marshals as a Go duration string ("10m0s").
type Duration time.Duration

// TurnEvent is a provider event as retained with the run (bounded, without
// the raw line).
type TurnEvent struct {
	Kind string    `json:"kind"`
	Text string    `json:"text,omitempty"`
	Tool string    `json:"tool,omitempty"`
	Code string    `json:"code,omitempty"`
	Time time.Time `json:"time"`
}

// Check is one verification command's execution.
type Check struct {
	Index      int       `json:"index"`
	Name       string    `json:"name"`
	Command    []string  `json:"command"`
	Source     string    `json:"source"`
	TimeoutMS  int64     `json:"timeout_ms"`
	ExitCode   int       `json:"exit_code"`
	TimedOut   bool      `json:"timed_out,omitempty"`
	Output     string    `json:"output"`
	Truncated  bool      `json:"output_truncated,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
}
