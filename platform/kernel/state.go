package kernel

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"time"
)

// StateFormat is the version of the State layout.
const StateFormat = 1

// Status is a run's status.
type Status string

// Run statuses. The terminal ones are succeeded, failed, cancelled and
// timed_out.
const (
	// StatusRunning: work is in flight (a task, a child run, an agent job)
	// or ready to be reduced.
	StatusRunning Status = "running"
	// StatusWaiting: the run only waits for time, a signal or a person.
	StatusWaiting Status = "waiting"
	// StatusSuspended: at least one incident is active; the run-wide
	// barrier holds every continuation until the last one is resolved.
	StatusSuspended Status = "suspended"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusTimedOut  Status = "timed_out"
)

// Terminal reports whether a run with this status has ended.
func (s Status) Terminal() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusTimedOut:
		return true
	}
	return false
}

// State is a run's complete state. It is plain data: the engine persists it
// as JSON (json.Marshal), and json.Unmarshal gives back a State that
// marshals to the same bytes and steps exactly like the original. Maps are
// keyed by ids; encoding/json writes their keys sorted, and the kernel
// never lets their iteration order reach the state or the effects.
type State struct {
	Format int `json:"format"`
	// RunID, Workflow ("id@version") and Digest (the program's) are fixed
	// by the started event.
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	Digest   string `json:"digest"`
	Status   Status `json:"status"`
	// Seq is the sequence number of the last accepted event; the next
	// event must carry Seq+1.
	Seq int64 `json:"seq"`
	// Now is the time of the last accepted event (never decreasing: an
	// event with an earlier time is processed at Now).
	Now       time.Time                  `json:"now"`
	StartedAt time.Time                  `json:"started_at"`
	Deadline  *time.Time                 `json:"deadline,omitempty"` // the run's overall deadline
	Input     json.RawMessage            `json:"input,omitempty"`
	Vars      map[string]json.RawMessage `json:"vars"`
	// Scopes hold step outputs: "" is the run's scope, "<forEach>[i]"
	// (joined with "/" when nested) one loop iteration's.
	Scopes map[string]*Scope `json:"scopes"`
	// Tokens are the active positions in the graph, by token id.
	Tokens map[string]*Token `json:"tokens"`
	// Ready lists the tokens to reduce, in order.
	Ready []string `json:"ready"`
	// Tasks are issued or retrying action attempts and agent jobs, by the
	// current attempt's task id.
	Tasks    map[string]*Task      `json:"tasks"`
	Timers   map[string]*Timer     `json:"timers"`
	Humans   map[string]*HumanTask `json:"human_tasks"`
	Children map[string]*Child     `json:"children"`
	// Signals are received signals no step has consumed yet, oldest first.
	Signals []BufferedSignal `json:"signals"`
	// Incidents holds active and resolved incidents, by id.
	Incidents map[string]*Incident `json:"incidents"`
	// Generations counts activations per node; the counter at activation is
	// a step instance's generation.
	Generations map[string]int `json:"generations"`
	// Counter numbers tokens and activations.
	Counter int64           `json:"counter"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   *RunError       `json:"error,omitempty"`
	// ExternalEffectsMayContinue is set when the run was cancelled or
	// terminated while work it issued was still in flight.
	ExternalEffectsMayContinue bool `json:"external_effects_may_continue,omitempty"`

	// memo holds decoded values for the next Step (memo.go); it is not
	// part of the state's data.
	memo *valueMemo
}

// Scope is a set of step outputs visible together.
type Scope struct {
	// Loop is the forEach node of an iteration scope ("" for the run).
	Loop   string `json:"loop,omitempty"`
	Index  int    `json:"index"`
	Parent string `json:"parent,omitempty"`
	// Suffix is appended to a step id to form its instance key ("[2][0]").
	Suffix string `json:"suffix,omitempty"`
	// Container is the token of the forEach that owns the iteration.
	Container string                     `json:"container,omitempty"`
	Outputs   map[string]json.RawMessage `json:"outputs"`
}

// Phase of a token.
type Phase string

const (
	// PhaseEnter: the token is about to execute its node.
	PhaseEnter Phase = "enter"
	// PhaseWait: the token waits (see Token.Wait).
	PhaseWait Phase = "wait"
	// PhaseComplete: the node is done; reduction records Output and goes to
	// Target (the end of the list when Target is nil).
	PhaseComplete Phase = "complete"
	// PhaseIssue: the token's task is to be issued again (after a backoff
	// or a retry_safe resolution).
	PhaseIssue Phase = "issue"
)

// WaitKind is what a waiting token waits for.
type WaitKind string

const (
	WaitTask     WaitKind = "task"
	WaitTimer    WaitKind = "timer"
	WaitSignal   WaitKind = "signal"
	WaitHuman    WaitKind = "human"
	WaitChild    WaitKind = "child"
	WaitJoin     WaitKind = "join"
	WaitLoop     WaitKind = "loop"
	WaitIncident WaitKind = "incident"
)

// Token is one active position: a step instance.
type Token struct {
	ID         string `json:"id"`
	Node       string `json:"node"`
	Instance   string `json:"instance"`
	Generation int    `json:"generation"`
	Scope      string `json:"scope"`
	// Container is the token of the enclosing parallel or forEach step
	// ("" at the top level).
	Container string   `json:"container,omitempty"`
	Phase     Phase    `json:"phase"`
	Queued    bool     `json:"queued,omitempty"` // listed in State.Ready
	Wait      WaitKind `json:"wait,omitempty"`
	// Order is the activation order (for fair signal delivery).
	Order int64     `json:"order"`
	Since time.Time `json:"since"`
	// PhaseComplete: the output to record and where to continue.
	Output json.RawMessage `json:"output,omitempty"`
	Target *string         `json:"target,omitempty"`
	// Waiting state, per node kind.
	TaskID   string     `json:"task_id,omitempty"`
	TimerID  string     `json:"timer_id,omitempty"`
	HumanID  string     `json:"human_id,omitempty"`
	ChildID  string     `json:"child_id,omitempty"`
	Signal   string     `json:"signal,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
	Pending  int        `json:"pending,omitempty"` // parallel: branches not joined
	Loop     *Loop      `json:"loop,omitempty"`
}

// Loop is the progress of a forEach.
type Loop struct {
	Items     []json.RawMessage `json:"items"`
	Next      int               `json:"next"`   // next index to start
	Active    int               `json:"active"` // iterations running
	Done      int               `json:"done"`
	Collected []json.RawMessage `json:"collected,omitempty"`
}

// TaskStatus is the status of an action attempt or agent job.
type TaskStatus string

const (
	TaskRunning  TaskStatus = "running"  // issued, no outcome yet
	TaskBackoff  TaskStatus = "backoff"  // failed, retry timer pending
	TaskIncident TaskStatus = "incident" // blocked on an incident
)

// Task is an issued action attempt or agent job.
type Task struct {
	ID           string          `json:"id"`
	Token        string          `json:"token"`
	Node         string          `json:"node"`
	Instance     string          `json:"instance"`
	Generation   int             `json:"generation"`
	Executor     string          `json:"executor"`
	Ref          string          `json:"ref,omitempty"`
	Attempt      int             `json:"attempt"`
	MaxAttempts  int             `json:"max_attempts"`
	OperationKey string          `json:"operation_key"`
	IdemKey      string          `json:"idempotency_key,omitempty"`
	SideEffect   string          `json:"side_effect"`
	Input        json.RawMessage `json:"input"`
	Prompt       string          `json:"prompt,omitempty"` // agent
	Status       TaskStatus      `json:"status"`
	StepStarted  time.Time       `json:"step_started"`
	IssuedAt     time.Time       `json:"issued_at"`
	// AttemptDeadline is when this attempt times out; Deadline is the
	// step's deadline for all attempts together (the action's "original
	// deadline").
	AttemptDeadline *time.Time `json:"attempt_deadline,omitempty"`
	Deadline        *time.Time `json:"deadline,omitempty"`
	LastError       *TaskError `json:"last_error,omitempty"`
	// Call is set on the task of an agent's tool call; Calls on an agent
	// task holds its tool calls by call id.
	Call  *ToolCallRef         `json:"call,omitempty"`
	Calls map[string]*ToolCall `json:"calls,omitempty"`
}

// TaskError is a failure reported for a task.
type TaskError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// HumanTask is an open task for people.
type HumanTask struct {
	ID          string          `json:"id"`
	Token       string          `json:"token"`
	Node        string          `json:"node"`
	Instance    string          `json:"instance"`
	Generation  int             `json:"generation"`
	Title       string          `json:"title"`
	Description string          `json:"description,omitempty"`
	Assignees   []string        `json:"assignees"`
	Form        json.RawMessage `json:"form,omitempty"`
	Decisions   []string        `json:"decisions"`
	OpenedAt    time.Time       `json:"opened_at"`
	Deadline    *time.Time      `json:"deadline,omitempty"`
}

// Child is a started child run of a workflow step.
type Child struct {
	ID                 string          `json:"id"`
	Token              string          `json:"token"`
	Node               string          `json:"node"`
	Instance           string          `json:"instance"`
	Generation         int             `json:"generation"`
	Ref                string          `json:"ref"`
	PublishedVersionID string          `json:"published_version_id"`
	Input              json.RawMessage `json:"input"`
	Deadline           *time.Time      `json:"deadline,omitempty"`
	// Blocked is set once the child's timeout opened an incident.
	Blocked bool `json:"blocked,omitempty"`
}

// BufferedSignal is a received signal that no step has consumed yet.
type BufferedSignal struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
	Seq     int64           `json:"seq"`
	At      time.Time       `json:"at"`
}

// RunError says why a run failed or timed out.
type RunError struct {
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
	Node     string `json:"node,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// ActiveIncidents lists the ids of active incidents, sorted.
func (s *State) ActiveIncidents() []string {
	var out []string
	for _, id := range sortedKeys(s.Incidents) {
		if s.Incidents[id].Status == IncidentActive {
			out = append(out, id)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func timePtr(t time.Time) *time.Time { return &t }

// clone deep-copies a state, so Step can work on it and leave the caller's
// untouched when it refuses an event. Raw JSON values and times are never
// modified in place and are shared.
func (s *State) clone() *State {
	c := *s
	c.Vars = cloneOrMake(s.Vars)
	c.Scopes = make(map[string]*Scope, len(s.Scopes))
	for k, v := range s.Scopes {
		sc := *v
		sc.Outputs = cloneOrMake(v.Outputs)
		c.Scopes[k] = &sc
	}
	c.Tokens = make(map[string]*Token, len(s.Tokens))
	for k, v := range s.Tokens {
		t := *v
		if v.Loop != nil {
			l := *v.Loop
			l.Items = slices.Clone(v.Loop.Items)
			l.Collected = slices.Clone(v.Loop.Collected)
			t.Loop = &l
		}
		c.Tokens[k] = &t
	}
	c.Ready = slices.Clone(s.Ready)
	c.Tasks = make(map[string]*Task, len(s.Tasks))
	for k, v := range s.Tasks {
		t := *v
		if v.LastError != nil {
			e := *v.LastError
			t.LastError = &e
		}
		if v.Calls != nil {
			t.Calls = make(map[string]*ToolCall, len(v.Calls))
			for id, call := range v.Calls {
				cc := *call
				if call.Error != nil {
					e := *call.Error
					cc.Error = &e
				}
				t.Calls[id] = &cc
			}
		}
		c.Tasks[k] = &t
	}
	c.Timers = make(map[string]*Timer, len(s.Timers))
	for k, v := range s.Timers {
		t := *v
		c.Timers[k] = &t
	}
	c.Humans = make(map[string]*HumanTask, len(s.Humans))
	for k, v := range s.Humans {
		h := *v
		h.Assignees = slices.Clone(v.Assignees)
		h.Decisions = slices.Clone(v.Decisions)
		c.Humans[k] = &h
	}
	c.Children = make(map[string]*Child, len(s.Children))
	for k, v := range s.Children {
		ch := *v
		c.Children[k] = &ch
	}
	c.Signals = slices.Clone(s.Signals)
	c.Incidents = make(map[string]*Incident, len(s.Incidents))
	for k, v := range s.Incidents {
		c.Incidents[k] = v.clone()
	}
	c.Generations = cloneOrMake(s.Generations)
	if s.Error != nil {
		e := *s.Error
		c.Error = &e
	}
	return &c
}

// cloneOrMake copies a map, never returning nil: the kernel writes to it.
func cloneOrMake[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return maps.Clone(m)
}
