package kernel

import (
	"encoding/json"
	"time"
)

// EffectKind names an effect. Effects are the kernel's only output besides
// the new state; the engine performs them after committing the state (an
// effect is idempotent by its id, so performing one twice after a crash is
// harmless).
type EffectKind string

const (
	// EffectStartTask: Task. Call a connector, enqueue a worker task or
	// start an agent job through the bridge.
	EffectStartTask EffectKind = "start_task"
	// EffectCancelTask: TaskID. Revoke the lease / stop the job; the outcome
	// of already issued work is not awaited.
	EffectCancelTask EffectKind = "cancel_task"
	// EffectStartTimer: Timer. Schedule timer_fired at Timer.Due (upsert by
	// id).
	EffectStartTimer EffectKind = "start_timer"
	// EffectCancelTimer: Timer (id, kind and due of the cancelled timer).
	EffectCancelTimer EffectKind = "cancel_timer"
	// EffectOpenHumanTask / EffectCloseHumanTask: Human.
	EffectOpenHumanTask  EffectKind = "open_human_task"
	EffectCloseHumanTask EffectKind = "close_human_task"
	// EffectStartChild / EffectCancelChild: Child. A workflow step runs the
	// callee as a run of its own; its end comes back as child_completed.
	EffectStartChild  EffectKind = "start_child"
	EffectCancelChild EffectKind = "cancel_child"
	// EffectOpenIncident / EffectResolveIncident: Incident (a snapshot).
	EffectOpenIncident    EffectKind = "open_incident"
	EffectResolveIncident EffectKind = "resolve_incident"
	// EffectRunCompleted: Completion. The run reached a terminal status.
	EffectRunCompleted EffectKind = "run_completed"
	// EffectRecord: Record. A history fact for the run's history and step
	// views (wait_elapsed, signal_received, timed_out, ...).
	EffectRecord EffectKind = "record"
	// EffectContinue: the Step stopped at MaxReductions with work left; the
	// engine feeds EventContinue.
	EffectContinue EffectKind = "continue"
)

// Executors of a task.
const (
	// ExecutorConnector: a connector adapter (built in: http; or installed)
	// or a connector manifest operation; Binding says which.
	ExecutorConnector = "connector"
	// ExecutorWorker: a worker claims the task from Binding's queue.
	ExecutorWorker = "worker"
	// ExecutorAgent: an agent job through the bridge; Agent describes it.
	ExecutorAgent = "agent"
	// ExecutorAction: the program was loaded without the action's artifact;
	// the engine resolves the binding by PublishedVersionID.
	ExecutorAction = "action"
)

// Effect is one instruction to the engine. Exactly the field of its kind is
// set; effects never share memory with the state.
type Effect struct {
	Kind       EffectKind  `json:"kind"`
	Task       *TaskSpec   `json:"task,omitempty"`
	TaskID     string      `json:"task_id,omitempty"`
	Timer      *Timer      `json:"timer,omitempty"`
	Human      *HumanTask  `json:"human_task,omitempty"`
	Child      *Child      `json:"child,omitempty"`
	Incident   *Incident   `json:"incident,omitempty"`
	Completion *Completion `json:"completion,omitempty"`
	Record     *Record     `json:"record,omitempty"`
	// Reason explains cancellations ("timeout", "run_ended", ...).
	Reason string `json:"reason,omitempty"`
}

// TaskSpec is what start_task asks the engine to do.
type TaskSpec struct {
	TaskID             string          `json:"task_id"`
	NodeID             string          `json:"node_id"`
	Instance           string          `json:"instance"`
	Generation         int             `json:"generation"`
	Attempt            int             `json:"attempt"`
	Executor           string          `json:"executor"`
	Ref                string          `json:"ref,omitempty"`
	PublishedVersionID string          `json:"published_version_id,omitempty"`
	Binding            json.RawMessage `json:"binding,omitempty"`
	Agent              *AgentSpec      `json:"agent,omitempty"`
	Input              json.RawMessage `json:"input"`
	// OperationKey is stable across every attempt of the step instance
	// (automatic retries and retry_safe): targets deduplicate by it.
	OperationKey string `json:"operation_key"`
	// IdempotencyKey is the step's idempotencyKey value, else OperationKey.
	IdempotencyKey string     `json:"idempotency_key"`
	SideEffect     string     `json:"side_effect"`
	Deadline       *time.Time `json:"deadline,omitempty"`      // this attempt's
	StepDeadline   *time.Time `json:"step_deadline,omitempty"` // all attempts'
	// ToolCall is set when the task is an agent's tool call.
	ToolCall *ToolCallRef `json:"tool_call,omitempty"`
}

// AgentSpec describes an agent job.
type AgentSpec struct {
	Provider     string          `json:"provider"`
	Model        string          `json:"model,omitempty"`
	Instructions string          `json:"instructions,omitempty"`
	Prompt       string          `json:"prompt"`
	Tools        []string        `json:"tools"`
	Output       json.RawMessage `json:"output,omitempty"`
	MaxTurns     int             `json:"max_turns"`
	// ToolDefs describes Tools (set on start_task): their pinned schemas.
	ToolDefs []ToolSpec `json:"tool_defs,omitempty"`
}

// Completion is the end of a run.
type Completion struct {
	Status Status          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  *RunError       `json:"error,omitempty"`
	// ExternalEffectsMayContinue: work issued by the run was still in
	// flight when it was cancelled, terminated or timed out.
	ExternalEffectsMayContinue bool `json:"external_effects_may_continue"`
}

// Record types.
const (
	RecordStepStarted        = "step_started"
	RecordStepCompleted      = "step_completed"
	RecordWaitElapsed        = "wait_elapsed"
	RecordSignalReceived     = "signal_received"
	RecordSignalBuffered     = "signal_buffered"
	RecordTimedOut           = "timed_out"
	RecordTaskRetryScheduled = "task_retry_scheduled"
	RecordRunSuspended       = "run_suspended"
	RecordRunResumed         = "run_resumed"
)

// Record is a history fact. wait_elapsed carries NodeID, Deadline (the
// issued due time), WaitID (the durable timer id), ObservedAt, EventID and
// Seq; signal_received carries the acceptance time (ObservedAt) and the
// issued Deadline.
type Record struct {
	Type       string     `json:"type"`
	Seq        int64      `json:"seq"`
	EventID    string     `json:"event_id,omitempty"`
	ObservedAt time.Time  `json:"observed_at"`
	NodeID     string     `json:"node_id,omitempty"`
	Instance   string     `json:"instance,omitempty"`
	Generation int        `json:"generation,omitempty"`
	Deadline   *time.Time `json:"deadline,omitempty"`
	WaitID     string     `json:"wait_id,omitempty"`
	TaskID     string     `json:"task_id,omitempty"`
	Attempt    int        `json:"attempt,omitempty"`
	Signal     string     `json:"signal,omitempty"`
	Detail     string     `json:"detail,omitempty"`
}
