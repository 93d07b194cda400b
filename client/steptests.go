package client

import (
	"encoding/json"
	"time"
)

// TestPolicy is an environment's test policy; Revision 0 is the default
// (disabled, never stored).
type TestPolicy struct {
	TestCalls string `json:"test_calls"`
	// 0 while the environment has no stored policy
	Revision  int64      `json:"revision"`
	UpdatedAt *time.Time `json:"updated_at"`
	UpdatedBy *string    `json:"updated_by"`
}

// TestPolicyRequest is the body of PUT E/test-policy.
type TestPolicyRequest struct {
	// disabled, read_only (steps without side effects or read_only actions) or all (side-effecting steps too, each acknowledged)
	TestCalls string `json:"test_calls"`
}

// StepTest is a step test as GET E/step-tests/{id} shows it.
type StepTest struct {
	StepTestCreated
	Kind           string    `json:"kind"`
	StepID         string    `json:"step_id"`
	DraftID        string    `json:"draft_id"`
	DraftRevision  int64     `json:"draft_revision"`
	TimeoutSeconds int       `json:"timeout_seconds"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      string    `json:"created_by"`
	// while waiting: what the step waits for
	Pending []PendingItem `json:"pending,omitempty"`
	// once succeeded: the step outputs by step id
	Output json.RawMessage `json:"output,omitempty"`
	// once failed or timed out: the run's error
	Error json.RawMessage `json:"error,omitempty"`
}

// StepTestRequest is the body of POST E/step-tests.
type StepTestRequest struct {
	// the step's kind as the draft declares it: action, agent, decision, human, workflow, set, wait or signal
	Kind string `json:"kind"`
	// the id of the step to run
	StepID string `json:"step_id"`
	// a JSON object (at most 1 MiB): the step's input for action, agent, decision and workflow steps (it replaces the step's with), the run input the step's expressions read for the others
	Input   json.RawMessage `json:"input,omitempty"`
	DraftID string          `json:"draft_id"`
	// a saved revision of the draft
	DraftRevision int64 `json:"draft_revision"`
	// binding name to connection id (at most 100)
	ConnectionBindings map[string]string `json:"connection_bindings,omitempty"`
	// binding name to release id (at most 100)
	ReleaseBindings map[string]string `json:"release_bindings,omitempty"`
	// the step's side effect class, required when it is idempotent, idempotency_key or unsafe
	AcknowledgedSideEffect string `json:"acknowledged_side_effect,omitempty"`
	// agent steps: tool name to the output the tool answers instead of running
	ToolMocks map[string]json.RawMessage `json:"tool_mocks,omitempty"`
	// agent steps: tools that really run (the step is then unsafe)
	RealTools []string `json:"real_tools,omitempty"`
	// 1..300 (agent steps 1..900); default the maximum
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// StepTestCreated answers POST E/step-tests.
type StepTestCreated struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	// running
	Status string `json:"status"`
	// none, read_only, idempotent, idempotency_key or unsafe
	SideEffect string    `json:"side_effect"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// StepTestAnswer is the body of POST E/step-tests/{id}/answers.
type StepTestAnswer struct {
	// the pending item's instance_key
	InstanceKey string `json:"instance_key"`
	Confirm     bool   `json:"confirm"`
}

// TestActivation answers POST E/test-activations and DELETE.
type TestActivation struct {
	ID string `json:"id"`
	// the activation its runs name (left out of E/activations)
	ActivationID   string `json:"activation_id"`
	ArtifactDigest string `json:"artifact_digest"`
	// the strongest side effect class of the draft's steps
	SideEffect    string    `json:"side_effect"`
	ExpiresAt     time.Time `json:"expires_at"`
	Status        string    `json:"status"`
	DraftID       string    `json:"draft_id"`
	DraftRevision int64     `json:"draft_revision"`
	CreatedAt     time.Time `json:"created_at"`
	CreatedBy     string    `json:"created_by"`
}

// TestActivationRequest is the body of POST E/test-activations. It names
// the draft revision; it carries none of the draft document's fields.
type TestActivationRequest struct {
	DraftID string `json:"draft_id"`
	// a saved revision of the draft
	DraftRevision int64 `json:"draft_revision"`
	// a JSON object (at most 64 KiB) filling absent top-level input properties
	InputDefaults      json.RawMessage   `json:"input_defaults,omitempty"`
	ConnectionBindings map[string]string `json:"connection_bindings,omitempty"`
	// the draft's strongest side effect class, required when it is idempotent, idempotency_key or unsafe
	AcknowledgedSideEffect string `json:"acknowledged_side_effect,omitempty"`
	// 1..3600, default 900
	ExpiresInSeconds int `json:"expires_in_seconds,omitempty"`
}

// TestRunRequest is the body of POST E/test-activations/{id}/runs.
type TestRunRequest struct {
	// the run input, a JSON object (at most 1 MiB)
	Input json.RawMessage `json:"input,omitempty"`
}

// ListenRequest is the body of POST E/test-activations/{id}/listen.
type ListenRequest struct {
	// new (a new whsec_ secret, shown once) or trigger:<id> (the secret of a webhook trigger of the environment)
	SecretRef string `json:"secret_ref"`
	// 1..1048576, default 1048576
	MaxBody int `json:"max_body_bytes,omitempty"`
	// 1..3600, default 300
	Tolerance int `json:"tolerance_seconds,omitempty"`
}

// Listen answers a listen request.
type Listen struct {
	ID string `json:"id"`
	// POST signed requests here (Standard Webhooks); each starts a test run
	TestURL   string    `json:"test_url"`
	ExpiresAt time.Time `json:"expires_at"`
	MaxBody   int       `json:"max_body_bytes"`
	Tolerance int       `json:"tolerance_seconds"`
	// secret_ref new: the whsec_ signing secret, shown only here
	Secret string `json:"secret,omitempty"`
}

// TestDelivery answers an accepted test delivery.
type TestDelivery struct {
	TestActivationID string `json:"test_activation_id"`
	WebhookID        string `json:"webhook_id"`
	RunID            string `json:"run_id"`
	Replayed         bool   `json:"replayed"`
}

// PendingItem is something a waiting step test needs answered.
type PendingItem struct {
	Kind        string `json:"kind"`
	NodeID      string `json:"node_id"`
	InstanceKey string `json:"instance_key"`
	// person: the step's decisions; confirm: true answers the first, false the last
	Decisions []string `json:"decisions,omitempty"`
	// confirm: the tool (action reference) the agent calls, its side
	// effect class and the call's input (secret values redacted)
	Tool       string          `json:"tool,omitempty"`
	SideEffect string          `json:"side_effect,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	// review: the agent's answer (secret values redacted)
	Output json.RawMessage `json:"output,omitempty"`
	// confirm and review: when the item was raised
	CreatedAt *time.Time `json:"created_at,omitempty"`
}
