package mcp

// The tools' inputs and outputs. Their JSON Schemas, derived from these
// types by the SDK, are the tools' input and output schemas; outputs are
// the bridge API's own objects (docs/bridge-api.md) so a host reads the
// same fields over MCP and over HTTP.

import (
	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/bridge/provider"
)

// StatusIn is bridge_status's input: nothing.
type StatusIn struct{}

// StatusOut is the panel tool of docs/bridge-api.md: where the daemon actually listens
// and whether it is healthy.
type StatusOut struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	APIVersion string `json:"apiVersion" jsonschema:"version of the bridge API description"`
	// BridgeURL and ServicesURL are the actual addresses (daemon.json).
	BridgeURL   string `json:"bridgeUrl" jsonschema:"the bridge listener's actual address"`
	ServicesURL string `json:"servicesUrl,omitempty" jsonschema:"the services listener's actual address"`
	// ConfiguredBridgePort is the port config.yaml asks for; PortDiffers
	// says the daemon listens elsewhere (port 0, or a port taken).
	ConfiguredBridgePort int                     `json:"configuredBridgePort,omitempty"`
	PortDiffers          bool                    `json:"portDiffers" jsonschema:"true when the bridge listens on another port than the configured one"`
	Health               string                  `json:"health" jsonschema:"ready, or why the daemon is not"`
	Client               string                  `json:"client" jsonschema:"the client this token acts as"`
	Providers            []bridge.ProviderStatus `json:"providers" jsonschema:"one entry per profile: the agent CLI it found"`
	Jobs                 map[string]int          `json:"jobs" jsonschema:"this client's jobs by state"`
}

// SubmitJobIn is submit_job's input (POST /v1/bridge/jobs).
type SubmitJobIn struct {
	Prompt         string            `json:"prompt" jsonschema:"the task for the agent, 1 to 100000 characters"`
	Profile        string            `json:"profile,omitempty" jsonschema:"bridge profile (default: default)"`
	WorkDir        string            `json:"workDir,omitempty" jsonschema:"absolute path of an existing directory the agent works in"`
	Metadata       map[string]string `json:"metadata,omitempty" jsonschema:"at most 32 string entries"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty" jsonschema:"1 to 128 characters; a repeat with the same request answers the same job"`
}

// JobIn names a job.
type JobIn struct {
	JobID string `json:"jobId" jsonschema:"the job's UUID"`
}

// JobResultIn is job_result's input.
type JobResultIn struct {
	JobID string `json:"jobId" jsonschema:"the job's UUID"`
	// TimeoutSeconds bounds the wait; 0 answers at once.
	TimeoutSeconds *int `json:"timeoutSeconds,omitempty" jsonschema:"how long to wait for the job to end, 0 to 600 seconds (default 60); 0 answers at once"`
}

// JobResultOut is a job's result, or its state while it is not done.
type JobResultOut struct {
	JobID      string           `json:"jobId"`
	State      string           `json:"state"`
	Done       bool             `json:"done" jsonschema:"false when the wait timed out before the job ended"`
	Attempt    int              `json:"attempt"`
	Result     *string          `json:"result" jsonschema:"the agent's final answer once the job succeeded"`
	Error      *bridge.JobError `json:"error"`
	Usage      provider.Usage   `json:"usage"`
	FinishedAt *string          `json:"finishedAt"`
	Demo       bool             `json:"demo" jsonschema:"the echo demo answered, not an agent"`
}

// SendMessageIn is send_message's input (POST /v1/bridge/jobs/{id}/messages).
type SendMessageIn struct {
	JobID          string `json:"jobId" jsonschema:"the job's UUID"`
	Text           string `json:"text" jsonschema:"the next user message, 1 to 100000 characters"`
	IdempotencyKey string `json:"idempotencyKey,omitempty" jsonschema:"1 to 128 characters"`
}

// SendMessageOut is the accepted message and the job after it.
type SendMessageOut struct {
	Message bridge.Message `json:"message"`
	Job     bridge.Job     `json:"job"`
}

// ListJobsIn is list_jobs's input (GET /v1/bridge/jobs).
type ListJobsIn struct {
	Limit int    `json:"limit,omitempty" jsonschema:"page size 1 to 200 (default 100)"`
	After string `json:"after,omitempty" jsonschema:"the next cursor of the previous page"`
	Order string `json:"order,omitempty" jsonschema:"asc (default) or desc by creation"`
}

// ListJobsOut is one page of the client's jobs.
type ListJobsOut struct {
	Jobs    []bridge.Job `json:"jobs"`
	Next    string       `json:"next,omitempty" jsonschema:"cursor of the next page"`
	HasMore bool         `json:"hasMore"`
}

// StartRunIn is start_workflow_run's input (POST /v1/bridge/workflow-runs).
type StartRunIn struct {
	TemplateID     string            `json:"templateId" jsonschema:"a workflow published and active in the local project, optionally id@version"`
	Inputs         map[string]string `json:"inputs" jsonschema:"the run's inputs, all strings"`
	IdempotencyKey string            `json:"idempotencyKey,omitempty" jsonschema:"1 to 128 characters"`
}

// RunIn names a workflow run.
type RunIn struct {
	RunID string `json:"runId" jsonschema:"the workflow run's id"`
}

// WorkflowRun is a bridge workflow run.
type WorkflowRun struct {
	ID            string                   `json:"id"`
	Client        string                   `json:"client"`
	TemplateID    string                   `json:"templateId"`
	Workflow      string                   `json:"workflow" jsonschema:"id@version that runs"`
	Status        string                   `json:"status"`
	Inputs        any                      `json:"inputs"`
	Output        any                      `json:"output"`
	Error         *bridge.WorkflowRunError `json:"error"`
	CreatedAt     string                   `json:"createdAt"`
	UpdatedAt     string                   `json:"updatedAt"`
	PlatformRunID string                   `json:"platformRunId"`
	Links         map[string]string        `json:"links"`
}
