package client

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// LocalProviderID is the built-in identity provider's id: its sign-in
// signs in the local operator (docs/platform-api.md, "Identity").
const LocalProviderID = "local"

// Sign-in flows of a client configuration's sign-in entry.
const (
	FlowDevice            = "device"
	FlowAuthorizationCode = "authorization_code"
)

// The local operator and the local workspace the daemon bootstraps.
const (
	LocalIssuer          = "urn:agent-bridge:local-idp"
	LocalOperatorSubject = "local-operator"
	LocalTenantName      = "Local"
	LocalProjectName     = "Default"
	LocalEnvironmentName = "Development"
)

// Run statuses (Run.Status); succeeded, failed, cancelled and timed_out
// are terminal.
const (
	RunRunning   = "running"
	RunWaiting   = "waiting"
	RunSuspended = "suspended"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
	RunTimedOut  = "timed_out"
)

// RunTerminal reports whether a run with this status has ended.
func RunTerminal(status string) bool {
	switch status {
	case RunSucceeded, RunFailed, RunCancelled, RunTimedOut:
		return true
	}
	return false
}

// CodeRuntimeState refuses a change the run's or task's state does not allow.
const CodeRuntimeState = "PF-RUNTIME-STATE"

// FormatYAML is the source format of a publish request.
const FormatYAML = "yaml"

// Activation statuses.
const (
	ActivationActive  = "active"
	ActivationRetired = "retired"
)

// File statuses.
const (
	FileUploading = "uploading"
	FileReady     = "ready"
)

// Kinds of a provider source: it starts runs or sends signals.
const (
	SourceKindRun    = "run"
	SourceKindSignal = "signal"
)

// Step test statuses.
const (
	StepTestRunning   = "running"
	StepTestWaiting   = "waiting"
	StepTestSucceeded = "succeeded"
)

// TestSecretNew asks a test listen for a new signing secret.
const TestSecretNew = "new"

// StudioSessions is the path of the local editor host's debug sessions.
const StudioSessions = "/studio/local/debug/sessions"

// FormatETag is the ETag (and If-Match value) of revision rev.
func FormatETag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// Headers of a trigger delivery (Standard Webhooks).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// SignWebhook answers the webhook-signature header value of a delivery
// signed with a trigger's secret (whsec_<base64>), as a Standard Webhooks
// sender makes it.
func SignWebhook(secret, id string, at time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("trigger: the secret is not whsec_ base64: %w", err)
	}
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		return "", err
	}
	return wh.Sign(id, at, body)
}

// Page is one page of a platform list: next_cursor is null on the last.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}
