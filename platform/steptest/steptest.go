package steptest

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/lang"
)

// Step test limits (docs/platform-api.md, "Step tests and test activations").
const (
	// MaxStepSeconds bounds a step test; MaxAgentSeconds an agent step's.
	MaxStepSeconds  = 300
	MaxAgentSeconds = 900
	// MaxLivePerCreator and MaxLivePerEnvironment bound the step tests
	// that have not ended; more answer 429 PF-STEPTEST-BUSY.
	MaxLivePerCreator     = 4
	MaxLivePerEnvironment = 16
	maxTools              = 64
	maxToolName           = 200
	maxStepID             = 200
)

// Step test statuses (docs/platform-api.md, "Step test status").
const (
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusTimedOut  = "timed_out"
	StatusCancelled = "cancelled"
)

// Pending item kinds.
const (
	PendingConfirm = "confirm"
	PendingReview  = "review"
	PendingPerson  = "person"
)

// StepTestRequest is the body of POST E/step-tests.
type StepTestRequest struct {
	Kind                   string                     `json:"kind" api:"required" doc:"the step's kind as the draft declares it: action, agent, decision, human, workflow, set, wait or signal"`
	StepID                 string                     `json:"step_id" api:"required" doc:"the id of the step to run"`
	Input                  json.RawMessage            `json:"input,omitempty" doc:"a JSON object (at most 1 MiB): the step's input for action, agent, decision and workflow steps (it replaces the step's with), the run input the step's expressions read for the others"`
	DraftID                string                     `json:"draft_id" api:"required" format:"uuid"`
	DraftRevision          int64                      `json:"draft_revision" api:"required" doc:"a saved revision of the draft"`
	ConnectionBindings     map[string]string          `json:"connection_bindings,omitempty" doc:"binding name to connection id (at most 100)"`
	ReleaseBindings        map[string]string          `json:"release_bindings,omitempty" doc:"binding name to release id (at most 100)"`
	AcknowledgedSideEffect string                     `json:"acknowledged_side_effect,omitempty" doc:"the step's side effect class, required when it is idempotent, idempotency_key or unsafe"`
	ToolMocks              map[string]json.RawMessage `json:"tool_mocks,omitempty" doc:"agent steps: tool name (its action reference) to the output the tool answers instead of running; it must fit the tool's output schema"`
	RealTools              []string                   `json:"real_tools,omitempty" doc:"agent steps: tools that really run (the step's class is then the strongest of theirs; each call of a side-effecting one waits for a confirm answer); other tools are refused"`
	TimeoutSeconds         int                        `json:"timeout_seconds,omitempty" doc:"1..300 (agent steps 1..900); default the maximum"`
}

// StepTestCreated answers POST E/step-tests.
type StepTestCreated struct {
	ID         string    `json:"id" format:"uuid"`
	RunID      string    `json:"run_id" format:"uuid"`
	Status     string    `json:"status" doc:"running"`
	SideEffect string    `json:"side_effect" doc:"none, read_only, idempotent, idempotency_key or unsafe"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// StepTest is a step test as GET E/step-tests/{id} shows it.
type StepTest struct {
	StepTestCreated
	Kind           string          `json:"kind"`
	StepID         string          `json:"step_id"`
	DraftID        string          `json:"draft_id" format:"uuid"`
	DraftRevision  int64           `json:"draft_revision"`
	TimeoutSeconds int             `json:"timeout_seconds"`
	CreatedAt      time.Time       `json:"created_at"`
	CreatedBy      string          `json:"created_by" format:"uuid"`
	Pending        []PendingItem   `json:"pending,omitempty" doc:"while waiting: what the step waits for"`
	Output         json.RawMessage `json:"output,omitempty" doc:"once succeeded: the step outputs by step id"`
	Error          json.RawMessage `json:"error,omitempty" doc:"once failed or timed out: the run's error"`
}

// PendingItem is something a waiting step test needs answered.
type PendingItem struct {
	Kind        string   `json:"kind" enum:"confirm,review,person"`
	NodeID      string   `json:"node_id"`
	InstanceKey string   `json:"instance_key"`
	Decisions   []string `json:"decisions,omitempty" doc:"person: the step's decisions; confirm: true answers the first, false the last"`
	// Tool, SideEffect and Input describe a confirm item's call.
	Tool       string          `json:"tool,omitempty" doc:"confirm: the tool (action reference) the agent calls"`
	SideEffect string          `json:"side_effect,omitempty" doc:"confirm: the tool's side effect class"`
	Input      json.RawMessage `json:"input,omitempty" doc:"confirm: the call's input, secret values redacted"`
	Output     json.RawMessage `json:"output,omitempty" doc:"review: the agent's answer, secret values redacted"`
	CreatedAt  *time.Time      `json:"created_at,omitempty" doc:"confirm and review: when the item was raised"`
}

// StepTestAnswer is the body of POST E/step-tests/{id}/answers.
type StepTestAnswer struct {
	InstanceKey string `json:"instance_key" api:"required" doc:"the pending item's instance_key"`
	Confirm     bool   `json:"confirm" api:"required"`
}

// options are the request fields kept with a step test.
type options struct {
	TimeoutSeconds     int                        `json:"timeout_seconds"`
	ConnectionBindings map[string]string          `json:"connection_bindings,omitempty"`
	ReleaseBindings    map[string]string          `json:"release_bindings,omitempty"`
	ToolMocks          map[string]json.RawMessage `json:"tool_mocks,omitempty"`
	RealTools          []string                   `json:"real_tools,omitempty"`
	// RealToolEffects are the side effect classes of RealTools, by name.
	RealToolEffects map[string]string `json:"real_tool_effects,omitempty"`
}

// checkStepTest applies the request rules that need no stored state and
// answers the time limit.
func checkStepTest(req *StepTestRequest) (time.Duration, error) {
	if !testableKinds[req.Kind] {
		return 0, api.Invalid("/kind", "kind is action, agent, decision, human, workflow, set, wait or signal")
	}
	if req.StepID == "" || utf8.RuneCountInString(req.StepID) > maxStepID {
		return 0, api.Invalid("/step_id", "step_id has 1 to %d characters", maxStepID)
	}
	if !auth.IsCanonicalUUID(req.DraftID) {
		return 0, api.Invalid("/draft_id", "draft_id is a canonical lowercase UUID")
	}
	if req.DraftRevision < 1 {
		return 0, api.Invalid("/draft_revision", "draft_revision is a positive revision")
	}
	if !object(req.Input) {
		return 0, api.Invalid("/input", "input is a JSON object")
	}
	if err := checkBindings("connection_bindings", req.ConnectionBindings); err != nil {
		return 0, err
	}
	if err := checkBindings("release_bindings", req.ReleaseBindings); err != nil {
		return 0, err
	}
	if req.AcknowledgedSideEffect != "" && effectRank[req.AcknowledgedSideEffect] == 0 {
		return 0, api.Invalid("/acknowledged_side_effect", "acknowledged_side_effect is read_only, idempotent, idempotency_key or unsafe")
	}
	if err := checkTools(req); err != nil {
		return 0, err
	}
	max := MaxStepSeconds
	if req.Kind == string(lang.StepAgent) {
		max = MaxAgentSeconds
	}
	switch {
	case req.TimeoutSeconds == 0:
		req.TimeoutSeconds = max
	case req.TimeoutSeconds < 1 || req.TimeoutSeconds > max:
		return 0, api.Invalid("/timeout_seconds", "timeout_seconds is from 1 to %d for a %s step", max, req.Kind)
	}
	return time.Duration(req.TimeoutSeconds) * time.Second, nil
}

// checkTools: tool_mocks and real_tools are for agent steps, at most 64
// names each, a tool never both mocked and real.
func checkTools(req *StepTestRequest) error {
	if len(req.ToolMocks) == 0 && len(req.RealTools) == 0 {
		return nil
	}
	if req.Kind != string(lang.StepAgent) {
		return at422(CodeTools, "/tool_mocks", "tool_mocks and real_tools are for agent steps")
	}
	if len(req.ToolMocks) > maxTools || len(req.RealTools) > maxTools {
		return api.Invalid("/real_tools", "at most %d tools each in tool_mocks and real_tools", maxTools)
	}
	for name := range req.ToolMocks {
		if name == "" || len(name) > maxToolName {
			return api.Invalid("/tool_mocks", "a tool name has 1 to %d characters", maxToolName)
		}
	}
	seen := map[string]bool{}
	for _, name := range req.RealTools {
		switch {
		case name == "" || len(name) > maxToolName:
			return api.Invalid("/real_tools", "a tool name has 1 to %d characters", maxToolName)
		case seen[name]:
			return api.Invalid("/real_tools", "tool %q is listed twice", name)
		case req.ToolMocks[name] != nil:
			return at422(CodeTools, "/real_tools", "tool %q is both mocked and real", name)
		}
		seen[name] = true
	}
	return nil
}

// stepTools checks the named tools against the agent step's own tools.
func stepTools(a artifact, stepID string, req *StepTestRequest) error {
	var declared map[string]bool
	for _, n := range a.nodes {
		if n["id"] != stepID {
			continue
		}
		declared = map[string]bool{}
		if ag, ok := n["agent"].(map[string]any); ok {
			list, _ := ag["tools"].([]any)
			for _, t := range list {
				if s, ok := t.(string); ok {
					declared[s] = true
				}
			}
		}
	}
	for name := range req.ToolMocks {
		if !declared[name] {
			return at422(CodeTools, "/tool_mocks", "step %q has no tool %q", stepID, name)
		}
	}
	for _, name := range req.RealTools {
		if !declared[name] {
			return at422(CodeTools, "/real_tools", "step %q has no tool %q", stepID, name)
		}
	}
	return nil
}

// statusOf maps a run to a step test status: a run waiting for a timer,
// a signal, a person or an incident is waiting; ended runs keep theirs.
func statusOf(run string, paused bool) string {
	switch run {
	case "running":
		if paused {
			return StatusWaiting
		}
		return StatusRunning
	case "waiting", "suspended":
		return StatusWaiting
	}
	return run
}

// ended reports whether a step test status is final.
func ended(status string) bool {
	return status != StatusRunning && status != StatusWaiting
}
