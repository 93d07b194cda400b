package factory

import (
	"fmt"
	"time"
)

// Modes of a run (docs/factory-api.md, "Factory run inspection").
const (
	// ModeBuild implements the instruction.
	ModeBuild = "build"
	// ModeMaintenance changes the source while preserving the existing
	// product, and adds regression tests for what changed.
	ModeMaintenance = "maintenance"
	// ModeTest verifies the existing source without calling a model.
	ModeTest = "test"
)

// Modes lists the accepted modes.
var Modes = []string{ModeBuild, ModeMaintenance, ModeTest}

// Run states. A run is queued until a slot is free (global and per
// repository), running while its tasks execute, and ends succeeded, failed
// or cancelled. needs_reconciliation is entered when the journal holds an
// intent without a receipt after a crash, or when the retained workspace of
// a finished run is missing or changed; only POST .../reconcile leaves it.
const (
	StateQueued              = "queued"
	StateRunning             = "running"
	StateSucceeded           = "succeeded"
	StateFailed              = "failed"
	StateCancelled           = "cancelled"
	StateNeedsReconciliation = "needs_reconciliation"
	// StatePaused is a run whose worker asked a question: it holds no slot
	// and goes on only after an answer and an explicit resume.
	StatePaused = "paused"
)

// States lists every run state.
var States = []string{StateQueued, StateRunning, StatePaused, StateSucceeded, StateFailed, StateCancelled, StateNeedsReconciliation}

// Terminal reports whether a run in state s does no more work by itself.
func Terminal(s string) bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// Task kinds and states.
const (
	TaskAgent  = "agent"  // a turn of the coding agent in the workspace
	TaskVerify = "verify" // one verification attempt: every effective command

	TaskPending   = "pending"
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
	TaskSkipped   = "skipped"
	// TaskPaused is an agent task waiting for its automatic retry after a
	// provider rate limit; its error says when.
	TaskPaused = "paused"
)

// Roles of agent tasks (frozen in the plan).
const (
	RoleImplementer = "implementer"
	RoleMaintainer  = "maintainer"
	RoleRepairer    = "repairer"
	RoleVerifier    = "verifier"
)

// Error codes a failed or reconciled run carries in Run.Error.
const (
	ErrCodeNoVerification     = "no_verification"     // no executable verification found
	ErrCodeVerificationFailed = "verification_failed" // the checks failed after every repair
	ErrCodeAgentFailed        = "agent_failed"        // the agent turn ended in an error
	ErrCodeProviderAuth       = "provider_auth"       // the agent CLI is not logged in: operator action
	ErrCodeProviderRateLimit  = "provider_rate_limit" // still rate limited after the automatic retries
	ErrCodeProviderQuota      = "provider_quota"      // the provider's usage quota is exhausted: operator action
	ErrCodeNoChanges          = "no_changes"          // a build or maintenance run changed nothing
	ErrCodeDiffTooLarge       = "diff_too_large"      // the run diff exceeds DiffLimit
	ErrCodeSource             = "source_unavailable"  // the repository could not be cloned at its recorded tree
	ErrCodeWorkspace          = "workspace_error"     // a git operation in the workspace failed
	ErrCodeConfig             = "verification_config" // .factory.yaml is invalid or names too many commands
	ErrCodeInterrupted        = "interrupted"         // the daemon stopped between two steps; nothing was in flight
	ErrCodeUnacknowledged     = "unacknowledged_intent"
	ErrCodeWorkspaceChanged   = "workspace_changed" // the retained workspace is missing or differs from the checkpoint
	ErrCodeReconciled         = "reconciled"        // an operator resolved needs_reconciliation
	ErrCodeCancelled          = "cancelled"
	// errCodeQuestion ends an execution with the run paused, not failed.
	errCodeQuestion = "question"
)

// Limits of docs/factory-api.md, "Factory limits".
const (
	// MaxCommands bounds the effective verification commands of a run.
	MaxCommands = 20
	// DiffLimit bounds the run diff (1 MB); a larger diff fails the run.
	DiffLimit = 1 << 20
	// MaxRepairAttempts bounds FACTORY_REPAIR_ATTEMPTS.
	MaxRepairAttempts = 3
	// DefaultRepairAttempts is FACTORY_REPAIR_ATTEMPTS unless configured.
	DefaultRepairAttempts = 2
	// RateLimitRetries bounds the automatic retries of an agent turn
	// refused by a provider rate limit, per run.
	RateLimitRetries = 3
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

	// journalCount and journalHead are the stored chain head (journal.go).
	journalCount int
	journalHead  string
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

// Duration marshals as a Go duration string ("10m0s").
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("a duration must be a string such as \"10m\"")
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return fmt.Errorf("invalid duration %s", b)
	}
	*d = Duration(v)
	return nil
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

// TurnEvent is a provider event as retained with the run (bounded, without
// the raw line).
type TurnEvent struct {
	Kind string    `json:"kind"`
	Text string    `json:"text,omitempty"`
	Tool string    `json:"tool,omitempty"`
	Code string    `json:"code,omitempty"`
	Time time.Time `json:"time"`
}

// Verification is one attempt: every effective command and its outcome.
type Verification struct {
	Attempt  int     `json:"attempt"`
	Passed   bool    `json:"passed"`
	Commands []Check `json:"commands"`
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

// Passed reports whether the command exited 0 in time.
func (c Check) Passed() bool { return c.ExitCode == 0 && !c.TimedOut }

// Worker message kinds.
const (
	MessageQuestion = "question"
	MessageAnswer   = "answer"
)

// WorkerMessage is a clarification request of a worker, or its answer.
type WorkerMessage struct {
	Task int       `json:"task"`
	Kind string    `json:"kind"` // question, answer
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}
