package activation

import (
	"encoding/json"
	"time"
)

// Statuses of an activation.
const (
	StatusActive  = "active"
	StatusRetired = "retired"
)

// Request is the body of POST E/activations (ActivationRequest).
type Request struct {
	PublishedVersionID string `json:"published_version_id" api:"required" format:"uuid" doc:"a published workflow version of the environment's project"`
	// InputDefaults are merged under a run's input when it starts.
	InputDefaults json.RawMessage `json:"input_defaults,omitempty" doc:"object of default input values, at most 64 KiB; checked against the workflow's input schema (required properties may be left out)"`
	// ConnectionBindings map a connection binding name to a connection id.
	ConnectionBindings map[string]string `json:"connection_bindings,omitempty" doc:"binding name (1..200 characters) to connection id (UUID); at most 100"`
	Name               string            `json:"name,omitempty" doc:"display name, at most 200 characters"`
}

// RetirementRequest is the optional body of POST E/activations/{identifier}/retire.
type RetirementRequest struct {
	Reason string `json:"reason,omitempty" doc:"why the activation is retired, at most 2000 characters"`
}

// Activation is an activation. Its ETag is Revision: 1 while active, 2
// once retired.
type Activation struct {
	ID                 string            `json:"id" format:"uuid"`
	EnvironmentID      string            `json:"environment_id" format:"uuid"`
	ProjectID          string            `json:"project_id" format:"uuid"`
	PublishedVersionID string            `json:"published_version_id" format:"uuid"`
	WorkflowID         string            `json:"workflow_id"`
	WorkflowVersion    int               `json:"workflow_version"`
	Digest             string            `json:"digest" doc:"digest of the workflow artifact"`
	Name               *string           `json:"name"`
	InputDefaults      json.RawMessage   `json:"input_defaults"`
	ConnectionBindings map[string]string `json:"connection_bindings"`
	Status             string            `json:"status" doc:"active or retired"`
	Revision           int64             `json:"revision"`
	CreatedAt          time.Time         `json:"created_at"`
	CreatedBy          string            `json:"created_by" format:"uuid"`
	RetiredAt          *time.Time        `json:"retired_at"`
	RetiredBy          *string           `json:"retired_by"`
	RetirementReason   *string           `json:"retirement_reason"`
}

// Export is the body of GET E/activations/{identifier}/export: everything
// needed to reproduce the activation in another environment (publish
// workflow.source there, then POST an ActivationRequest with the new
// version id, the input defaults and bindings to that environment's
// connections).
type Export struct {
	Activation Activation     `json:"activation"`
	Workflow   ExportWorkflow `json:"workflow"`
	// ExportedAt is RFC 3339 UTC with exactly three fractional digits, so
	// that the body's length does not vary with the clock (HEAD and GET
	// answer the same Content-Length).
	ExportedAt string `json:"exported_at" format:"date-time"`
}

// exportTimeLayout is the fixed-width layout of Export.ExportedAt.
const exportTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// ExportWorkflow is the bound published workflow version.
type ExportWorkflow struct {
	PublishedVersionID string          `json:"published_version_id" format:"uuid"`
	ID                 string          `json:"id"`
	Version            int             `json:"version"`
	Digest             string          `json:"digest"`
	Artifact           json.RawMessage `json:"artifact"`
	Source             string          `json:"source"`
	Format             string          `json:"format"`
	CatalogDigest      string          `json:"catalog_digest"`
}
