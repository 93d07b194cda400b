package client

import (
	"encoding/json"
	"time"
)

// Run is a run.
type Run struct {
	ID            string        `json:"id"`
	Activation    ActivationRef `json:"activation"`
	EnvironmentID string        `json:"environment_id"`
	// running, waiting, suspended, succeeded, failed, cancelled or timed_out
	Status string `json:"status"`
	// the run is paused (POST .../pause): it does not advance until resumed
	Paused bool `json:"paused"`
	// a test run (step tests, draft test activations): left out of run lists unless include_test=true
	Test            bool     `json:"test"`
	State           RunState `json:"state"`
	AdmissionPolicy string   `json:"admission_policy"`
	ParentRunID     *string  `json:"parent_run_id"`
	CorrelationKey  *string  `json:"correlation_key"`
	BusinessKey     *string  `json:"business_key"`
	// sequence number of the last accepted event
	AcceptedSequence int64 `json:"accepted_sequence"`
	// ExternalEffectsMayContinue is set on cancellation responses.
	ExternalEffectsMayContinue *bool     `json:"external_effects_may_continue,omitempty"`
	CreatedAt                  time.Time `json:"created_at"`
	UpdatedAt                  time.Time `json:"updated_at"`
	CreatedBy                  string    `json:"created_by"`
}

// RunSummary is a run in the run list: what a run is without its state.
type RunSummary struct {
	ID           string `json:"id"`
	ActivationID string `json:"activation_id"`
	// the workflow as id@version
	Workflow string `json:"workflow"`
	// running, waiting, suspended, succeeded, failed, cancelled or timed_out
	Status string `json:"status"`
	Paused bool   `json:"paused"`
	Test   bool   `json:"test"`
	// the run is archived (listed only with include_archived=true)
	Archived bool `json:"archived,omitempty"`
	// the retried run
	ParentRunID *string `json:"parent_run_id"`
	// the run whose workflow step started this one
	CallerRunID    *string   `json:"caller_run_id"`
	CorrelationKey *string   `json:"correlation_key"`
	BusinessKey    *string   `json:"business_key"`
	CreatedAt      time.Time `json:"created_at"`
	// the time of the last accepted event
	UpdatedAt time.Time `json:"updated_at"`
	// once the run has ended: the time of its last accepted event
	EndedAt *time.Time `json:"ended_at,omitempty"`
}

// Step is one step instance of a run (one activation of a node).
type Step struct {
	NodeID string `json:"node_id"`
	// the node id with the forEach iteration suffix
	Instance string `json:"instance"`
	// the node's activation count at the start of this instance
	Generation int `json:"generation"`
	// the step kind (action, agent, decision, workflow, wait, signal, human, forEach, parallel, switch, set, fail, succeed)
	Kind string `json:"kind"`
	// running, retrying, waiting, suspended, completed, failed, timed_out or cancelled
	Status string `json:"status"`
	// WaitingFor is what an active step waits for (task, timer, signal,
	// human, child, join, loop, incident).
	WaitingFor string `json:"waiting_for,omitempty"`
	// an active step's deadline or due time
	Deadline  *time.Time `json:"deadline,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	// the accepted event that started the step
	StartedSeq int64      `json:"started_seq"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	EndedSeq   int64      `json:"ended_seq,omitempty"`
	// action and agent steps: the attempt the step is on (retries add one); 0 for other steps
	Attempts  int        `json:"attempts"`
	LastError *TaskError `json:"last_error,omitempty"`
}

// LogEntry is one line of a run's log: a history record or an engine note.
type LogEntry struct {
	// increasing; the after parameter resumes behind it
	ID int64     `json:"id"`
	At time.Time `json:"at"`
	// the accepted event the line belongs to
	Seq *int64 `json:"seq"`
	// info, warn or error
	Level string `json:"level"`
	// step_started, step_completed, run_succeeded, event_refused, ...
	Type    string  `json:"type"`
	NodeID  *string `json:"node_id"`
	Message string  `json:"message"`
	// the history record or the note's details (null when none)
	Data json.RawMessage `json:"data"`
}

// HumanTask is a task for people opened by a human step.
type HumanTask struct {
	ID          string `json:"id"`
	RunID       string `json:"run_id"`
	NodeID      string `json:"node_id"`
	Instance    string `json:"instance"`
	Generation  int    `json:"generation"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// as the step evaluated them; an entry that is a principal id or user:<principal id> names that principal
	Assignees []string `json:"assignees"`
	// the decisions a completion chooses from
	Decisions []string `json:"decisions"`
	// JSON Schema of the data a completion submits
	Form json.RawMessage `json:"form,omitempty"`
	// open, claimed, completed or closed
	Status string `json:"status"`
	// the principal holding the task (kept once it is completed or closed)
	ClaimedBy   string          `json:"claimed_by,omitempty"`
	ClaimedAt   *time.Time      `json:"claimed_at,omitempty"`
	CompletedBy string          `json:"completed_by,omitempty"`
	Decision    string          `json:"decision,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	// closed only: timeout (the step's deadline), cancelled, terminated, run_deadline, step_timeout or run_ended
	CloseReason string `json:"close_reason,omitempty"`
	// when it was completed or closed
	ClosedAt *time.Time `json:"closed_at,omitempty"`
	// grows with every change; the ETag and the optional If-Match of changes
	Revision  int64      `json:"revision"`
	OpenedAt  time.Time  `json:"opened_at"`
	Deadline  *time.Time `json:"deadline,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Incident is an incident of a run (active or resolved).
type Incident struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	// the If-Match revision of a resolution
	Revision   int    `json:"revision"`
	NodeID     string `json:"node_id"`
	Instance   string `json:"instance"`
	Generation int    `json:"generation"`
	// PF-TASK-RETRIES-EXHAUSTED, PF-TASK-AMBIGUOUS, PF-TASK-DEADLINE or PF-TASK-FAILED
	Code string `json:"code"`
	// active or resolved
	Status     string `json:"status"`
	TaskID     string `json:"task_id,omitempty"`
	ChildID    string `json:"child_id,omitempty"`
	SideEffect string `json:"side_effect,omitempty"`
	// whether retry_safe may be chosen
	RetrySafe bool       `json:"retry_safe"`
	Attempt   int        `json:"attempt,omitempty"`
	Error     *TaskError `json:"error,omitempty"`
	OpenedAt  time.Time  `json:"opened_at"`
	Deadline  *time.Time `json:"deadline,omitempty"`
	// set once resolved; kind run_ended when the run ended while it was active
	Resolution *Resolution `json:"resolution,omitempty"`
	// Unavailable marks the safe placeholder of an incident whose run's
	// state cannot be shown (PF-LEGACY-UNAVAILABLE).
	Unavailable bool `json:"unavailable,omitempty"`
}

// StartRequest is the body of POST E/runs and POST E/runs/{run}/retry.
type StartRequest struct {
	// an active activation of the environment
	ActivationID string `json:"activation_id"`
	// the run input, a JSON object (at most 1 MiB); the activation's input defaults fill absent top-level properties
	Input json.RawMessage `json:"input,omitempty"`
	// at most 200 characters
	CorrelationKey string `json:"correlation_key,omitempty"`
	// at most 200 characters
	BusinessKey string `json:"business_key,omitempty"`
}

// CancelRequest is the body of POST E/runs/{run}/cancel.
type CancelRequest struct {
	// non-blank, at most 2000 characters
	Reason string `json:"reason"`
}

// PauseRequest is the optional body of pause and resume.
type PauseRequest struct {
	// at most 2000 characters
	Reason string `json:"reason,omitempty"`
}

// SignalRequest is the body of POST E/runs/{run}/signals.
type SignalRequest struct {
	// the signal name a signal step waits for, 1 to 200 characters
	Name string `json:"name"`
	// any JSON value, at most 1 MiB; validated against the schema of the signal steps that wait for that name
	Payload json.RawMessage `json:"payload,omitempty"`
}

// SignalAccepted answers POST E/runs/{run}/signals.
type SignalAccepted struct {
	RunID string `json:"run_id"`
	Name  string `json:"name"`
	// AcceptedSequence is the sequence of the signal_received event (the
	// run's last accepted event while held).
	AcceptedSequence int64 `json:"accepted_sequence"`
	// Held: the run is paused; the signal is applied in arrival order when
	// it resumes.
	Held bool `json:"held"`
	// the run's status after the signal
	Status string `json:"status"`
}

// ResolveRequest is the body of POST E/incidents/{incident}/resolve.
type ResolveRequest struct {
	// new per decision; a replay with the same body answers the committed result
	ReceiptID string `json:"receipt_id"`
	// retry_safe, accept_reconciled_result or terminate
	Kind string `json:"kind"`
	// non-blank, at most 2000 characters
	Reason string `json:"reason"`
	// accept_reconciled_result only: the step output, valid for the pinned output schema
	Output json.RawMessage `json:"output,omitempty"`
	// required for accept_reconciled_result, at most 2000 characters
	EvidenceReference string `json:"evidence_reference,omitempty"`
}

// Resolved is the answer of a resolution: the resolved incident and its run.
type Resolved struct {
	Incident Incident `json:"incident"`
	// with external_effects_may_continue
	Run Run `json:"run"`
}

// HumanReassignRequest is the body of POST E/human-tasks/{identifier}/reassign.
type HumanReassignRequest struct {
	// the principal who holds the task next; it must be enabled and hold human_task.complete in the environment
	Assignee string `json:"assignee"`
}

// HumanCompleteRequest is the body of POST E/human-tasks/{identifier}/complete.
type HumanCompleteRequest struct {
	// one of the task's decisions (at most 200 characters)
	Decision string `json:"decision"`
	// valid for the task's form (absent is null)
	Data json.RawMessage `json:"data,omitempty"`
}

// ActivationRef names a run's activation.
type ActivationRef struct {
	ID string `json:"id"`
}

// RunState is the visible part of a run's state; secret input and output
// values are redacted.
type RunState struct {
	Input     json.RawMessage            `json:"input"`
	Vars      map[string]json.RawMessage `json:"vars"`
	Output    json.RawMessage            `json:"output,omitempty"`
	Error     *RunError                  `json:"error,omitempty"`
	Tasks     []TaskView                 `json:"tasks"`
	StartedAt time.Time                  `json:"started_at"`
	Deadline  *time.Time                 `json:"deadline,omitempty"`
}

// TaskError is a failure reported for a task.
type TaskError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Resolution is how an incident was resolved. Kind "run_ended" means the
// run ended (timed out, cancelled, terminated through another incident)
// while the incident was active.
type Resolution struct {
	Kind              ResolutionKind `json:"kind"`
	Reason            string         `json:"reason,omitempty"`
	EvidenceReference string         `json:"evidence_reference,omitempty"`
	ReceiptID         string         `json:"receipt_id,omitempty"`
	ResolvedAt        time.Time      `json:"resolved_at"`
	Seq               int64          `json:"seq"`
}

// RunError says why a run failed or timed out.
type RunError struct {
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
	Node     string `json:"node,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// TaskView is a task of a run that has not finished.
type TaskView struct {
	ID       string `json:"id"`
	NodeID   string `json:"node_id"`
	Instance string `json:"instance"`
	Executor string `json:"executor"`
	Ref      string `json:"ref,omitempty"`
	Attempt  int    `json:"attempt"`
	Status   string `json:"status"`
}

// ResolutionKind is an operator's decision on an incident.
type ResolutionKind string
