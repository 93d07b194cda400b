package steptest

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/trigger"
)

// Draft test activation limits (docs/platform-api.md, "Limits").
const (
	DefaultActivationSeconds = 900
	MaxActivationSeconds     = 3600
	maxDefaultsBytes         = 64 << 10
	// MaxListenBody bounds a test delivery (the webhook limit).
	MaxListenBody = trigger.MaxWebhookBody
)

// Test activation lifecycle: active until deleted or expired.
const (
	ActivationActive  = "active"
	ActivationDeleted = "deleted"
	ActivationExpired = "expired"
)

// Secret references of a listen request.
const (
	// SecretNew makes a new whsec_ secret, shown once in the answer.
	SecretNew = "new"
	// SecretTriggerPrefix reuses a webhook trigger's secret of the
	// environment: "trigger:<id>".
	SecretTriggerPrefix = "trigger:"
)

// TestActivationRequest is the body of POST E/test-activations. It names
// the draft revision; it carries none of the draft document's fields.
type TestActivationRequest struct {
	DraftID                string            `json:"draft_id" api:"required" format:"uuid"`
	DraftRevision          int64             `json:"draft_revision" api:"required" doc:"a saved revision of the draft"`
	InputDefaults          json.RawMessage   `json:"input_defaults,omitempty" doc:"a JSON object (at most 64 KiB) filling absent top-level input properties"`
	ConnectionBindings     map[string]string `json:"connection_bindings,omitempty"`
	AcknowledgedSideEffect string            `json:"acknowledged_side_effect,omitempty" doc:"the draft's strongest side effect class, required when it is idempotent, idempotency_key or unsafe"`
	ExpiresInSeconds       int               `json:"expires_in_seconds,omitempty" doc:"1..3600, default 900"`
}

// TestActivation answers POST E/test-activations and DELETE.
type TestActivation struct {
	ID             string    `json:"id" format:"uuid"`
	ActivationID   string    `json:"activation_id" format:"uuid" doc:"the activation its runs name (left out of E/activations)"`
	ArtifactDigest string    `json:"artifact_digest"`
	SideEffect     string    `json:"side_effect" doc:"the strongest side effect class of the draft's steps"`
	ExpiresAt      time.Time `json:"expires_at"`
	Status         string    `json:"status" enum:"active,deleted,expired"`
	DraftID        string    `json:"draft_id" format:"uuid"`
	DraftRevision  int64     `json:"draft_revision"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      string    `json:"created_by" format:"uuid"`
}

// TestRunRequest is the body of POST E/test-activations/{id}/runs.
type TestRunRequest struct {
	Input json.RawMessage `json:"input,omitempty" doc:"the run input, a JSON object (at most 1 MiB)"`
}

// ListenRequest is the body of POST E/test-activations/{id}/listen.
type ListenRequest struct {
	SecretRef string `json:"secret_ref" api:"required" doc:"new (a new whsec_ secret, shown once) or trigger:<id> (the secret of a webhook trigger of the environment)"`
	MaxBody   int    `json:"max_body_bytes,omitempty" doc:"1..1048576, default 1048576"`
	Tolerance int    `json:"tolerance_seconds,omitempty" doc:"1..3600, default 300"`
}

// Listen answers a listen request.
type Listen struct {
	ID        string    `json:"id" format:"uuid"`
	TestURL   string    `json:"test_url" doc:"POST signed requests here (Standard Webhooks); each starts a test run"`
	ExpiresAt time.Time `json:"expires_at"`
	MaxBody   int       `json:"max_body_bytes"`
	Tolerance int       `json:"tolerance_seconds"`
	Secret    string    `json:"secret,omitempty" writeOnly:"true" doc:"secret_ref new: the whsec_ signing secret, shown only here"`
}

// TestDelivery answers an accepted test delivery.
type TestDelivery struct {
	TestActivationID string `json:"test_activation_id" format:"uuid"`
	WebhookID        string `json:"webhook_id"`
	RunID            string `json:"run_id" format:"uuid"`
	Replayed         bool   `json:"replayed"`
}

// checkActivation applies the request rules that need no stored state
// and answers the lifetime.
func checkActivation(req *TestActivationRequest) (time.Duration, error) {
	if !auth.IsCanonicalUUID(req.DraftID) {
		return 0, api.Invalid("/draft_id", "draft_id is a canonical lowercase UUID")
	}
	if req.DraftRevision < 1 {
		return 0, api.Invalid("/draft_revision", "draft_revision is a positive revision")
	}
	if !object(req.InputDefaults) {
		return 0, api.Invalid("/input_defaults", "input_defaults is a JSON object")
	}
	if len(req.InputDefaults) > maxDefaultsBytes {
		return 0, api.Invalid("/input_defaults", "input_defaults has at most %d bytes", maxDefaultsBytes)
	}
	if err := checkBindings("connection_bindings", req.ConnectionBindings); err != nil {
		return 0, err
	}
	if req.AcknowledgedSideEffect != "" && effectRank[req.AcknowledgedSideEffect] == 0 {
		return 0, api.Invalid("/acknowledged_side_effect", "acknowledged_side_effect is read_only, idempotent, idempotency_key or unsafe")
	}
	switch {
	case req.ExpiresInSeconds == 0:
		req.ExpiresInSeconds = DefaultActivationSeconds
	case req.ExpiresInSeconds < 1 || req.ExpiresInSeconds > MaxActivationSeconds:
		return 0, api.Invalid("/expires_in_seconds", "expires_in_seconds is from 1 to %d", MaxActivationSeconds)
	}
	return time.Duration(req.ExpiresInSeconds) * time.Second, nil
}

// checkListen applies the listen request rules and the defaults.
func checkListen(req *ListenRequest) error {
	if req.SecretRef != SecretNew && !(strings.HasPrefix(req.SecretRef, SecretTriggerPrefix) &&
		auth.IsCanonicalUUID(strings.TrimPrefix(req.SecretRef, SecretTriggerPrefix))) {
		return api.Invalid("/secret_ref", "secret_ref is new or trigger:<trigger id>")
	}
	switch {
	case req.MaxBody == 0:
		req.MaxBody = MaxListenBody
	case req.MaxBody < 1 || req.MaxBody > MaxListenBody:
		return api.Invalid("/max_body_bytes", "max_body_bytes is from 1 to %d", MaxListenBody)
	}
	max := int(trigger.MaxTolerance / time.Second)
	switch {
	case req.Tolerance == 0:
		req.Tolerance = int(trigger.DefaultTolerance / time.Second)
	case req.Tolerance < 1 || req.Tolerance > max:
		return api.Invalid("/tolerance_seconds", "tolerance_seconds is from 1 to %d", max)
	}
	return nil
}

// testWebhookPath is the delivery path of a listen route.
func testWebhookPath(id string) string { return "/test-webhooks/" + id }
