package kernel

import (
	"encoding/json"
	"time"
)

// EventKind names an event. Events are the only input of the kernel; the
// engine appends each accepted one to the run's history with its sequence
// number, and replay feeds the same list again.
type EventKind string

const (
	// EventStarted starts the run: RunID, Input; At is the start time.
	EventStarted EventKind = "started"
	// EventTaskCompleted: TaskID, Output. Also completes agent jobs (the
	// task's executor says which it was).
	EventTaskCompleted EventKind = "task_completed"
	// EventTaskFailed: TaskID, Error, Retryable.
	EventTaskFailed EventKind = "task_failed"
	// EventTaskOutcomeUnknown: TaskID. The attempt may or may not have had
	// its effect (a lost connection, a lease that expired mid-call).
	EventTaskOutcomeUnknown EventKind = "task_outcome_unknown"
	// EventTimerFired: TimerID. Processes every timer due at At, in
	// DueOrder, the named one included.
	EventTimerFired EventKind = "timer_fired"
	// EventSignalReceived: Signal (the name), Payload.
	EventSignalReceived EventKind = "signal_received"
	// EventHumanCompleted: TaskID (the human task's), Decision, Data,
	// CompletedBy.
	EventHumanCompleted EventKind = "human_completed"
	// EventIncidentResolved: IncidentID, Revision, Resolution, Reason,
	// Output and EvidenceReference (accept_reconciled_result only),
	// ReceiptID.
	EventIncidentResolved EventKind = "incident_resolved"
	// EventCancelRequested: Reason.
	EventCancelRequested EventKind = "cancel_requested"
	// EventChildCompleted: ChildID, ChildStatus, Output (succeeded) or
	// Error (failed, cancelled, timed_out).
	EventChildCompleted EventKind = "child_completed"
	// EventContinue resumes reduction after a Continue effect (a Step that
	// reached MaxReductions stops and asks for it).
	EventContinue EventKind = "continue"
	// EventAgentToolCalled: TaskID (the agent step's task), CallID, Tool
	// (the action reference), Input. The agent calls one of its step's
	// tools; the call's outcome is kept in the agent task's Calls.
	EventAgentToolCalled EventKind = "agent_tool_called"
)

// ResolutionKind is an operator's decision on an incident.
type ResolutionKind string

const (
	ResolveRetrySafe   ResolutionKind = "retry_safe"
	ResolveAccept      ResolutionKind = "accept_reconciled_result"
	ResolveTerminate   ResolutionKind = "terminate"
	resolveRunEnded    ResolutionKind = "run_ended" // closed by the kernel when the run ends
	maxReasonRunes                    = 2000
	maxIDBytes                        = 200
	maxSignalNameBytes                = 200
)

// Event is one input of the kernel. Seq and At are assigned by the engine:
// Seq numbers the run's accepted events from 1 without gaps, At is the
// engine's observation time (the kernel never reads a clock). Only the
// fields of the event's kind are read.
type Event struct {
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
	Kind EventKind `json:"kind"`
	// ID is the engine's event id, copied into history records.
	ID string `json:"id,omitempty"`

	RunID string          `json:"run_id,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`

	TaskID    string          `json:"task_id,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     *TaskError      `json:"error,omitempty"`
	Retryable bool            `json:"retryable,omitempty"`
	// RetryAfterMs is how long the service asked to wait before the next
	// attempt (an HTTP Retry-After): it lengthens the policy's backoff, up
	// to the policy's maximum interval.
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`

	TimerID string `json:"timer_id,omitempty"`

	Signal  string          `json:"signal,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`

	Decision    string          `json:"decision,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
	CompletedBy string          `json:"completed_by,omitempty"`

	IncidentID        string         `json:"incident_id,omitempty"`
	Revision          int            `json:"revision,omitempty"`
	Resolution        ResolutionKind `json:"resolution,omitempty"`
	Reason            string         `json:"reason,omitempty"`
	EvidenceReference string         `json:"evidence_reference,omitempty"`
	ReceiptID         string         `json:"receipt_id,omitempty"`

	ChildID     string `json:"child_id,omitempty"`
	ChildStatus Status `json:"child_status,omitempty"`

	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
}
