package client

import (
	"encoding/json"
	"time"
)

// Version is a published version (immutable).
type Version struct {
	ID           string          `json:"id"`
	Kind         string          `json:"kind"`
	DefinitionID string          `json:"definition_id"`
	Version      int             `json:"version"`
	Digest       string          `json:"digest"`
	Artifact     json.RawMessage `json:"artifact"`
	Source       string          `json:"source"`
	Format       string          `json:"format"`
	// CatalogDigest is the digest of the project catalog lock the version
	// was compiled against when it was published.
	CatalogDigest string    `json:"catalog_digest"`
	PublishedAt   time.Time `json:"published_at"`
	PublishedBy   string    `json:"published_by"`
}

// VersionSummary is a published version in a list.
type VersionSummary struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	DefinitionID string    `json:"definition_id"`
	Version      int       `json:"version"`
	Digest       string    `json:"digest"`
	PublishedAt  time.Time `json:"published_at"`
	PublishedBy  string    `json:"published_by"`
}

// Draft is a draft with its lifecycle revisions. Its ETag is Revision.
type Draft struct {
	ID string `json:"id"`
	// Kind is the source's kind when it can be read, else null.
	Kind     *string `json:"kind"`
	Revision int64   `json:"revision"`
	// Source is the source of SourceRevision (the latest save unless the
	// read asked for ?revision=N).
	Source         string         `json:"source"`
	SourceRevision int64          `json:"source_revision"`
	Format         string         `json:"format"`
	CreatedAt      time.Time      `json:"created_at"`
	CreatedBy      string         `json:"created_by"`
	UpdatedAt      time.Time      `json:"updated_at"`
	UpdatedBy      string         `json:"updated_by"`
	Retired        bool           `json:"retired"`
	RetiredAt      *time.Time     `json:"retired_at"`
	RetiredBy      *string        `json:"retired_by"`
	Revisions      []DraftHistory `json:"revisions"`
}

// PublishRequest is the body of POST P/{collection} and of a draft save.
type PublishRequest struct {
	// the definition source, at most 1 MiB
	Source string `json:"source"`
	// source format: yaml (the default)
	Format string `json:"format,omitempty"`
}

// Activation is an activation. Its ETag is Revision: 1 while active, 2
// once retired.
type Activation struct {
	ID                 string `json:"id"`
	EnvironmentID      string `json:"environment_id"`
	ProjectID          string `json:"project_id"`
	PublishedVersionID string `json:"published_version_id"`
	WorkflowID         string `json:"workflow_id"`
	WorkflowVersion    int    `json:"workflow_version"`
	// digest of the workflow artifact
	Digest             string            `json:"digest"`
	Name               *string           `json:"name"`
	InputDefaults      json.RawMessage   `json:"input_defaults"`
	ConnectionBindings map[string]string `json:"connection_bindings"`
	// active or retired
	Status           string     `json:"status"`
	Revision         int64      `json:"revision"`
	CreatedAt        time.Time  `json:"created_at"`
	CreatedBy        string     `json:"created_by"`
	RetiredAt        *time.Time `json:"retired_at"`
	RetiredBy        *string    `json:"retired_by"`
	RetirementReason *string    `json:"retirement_reason"`
}

// ActivationRequest is the body of POST E/activations (ActivationRequest).
type ActivationRequest struct {
	// a published workflow version of the environment's project
	PublishedVersionID string `json:"published_version_id"`
	// InputDefaults are merged under a run's input when it starts.
	InputDefaults json.RawMessage `json:"input_defaults,omitempty"`
	// ConnectionBindings map a connection binding name to a connection id.
	ConnectionBindings map[string]string `json:"connection_bindings,omitempty"`
	// display name, at most 200 characters
	Name string `json:"name,omitempty"`
}

// DraftHistory is one lifecycle revision of a draft.
type DraftHistory struct {
	Revision int64 `json:"revision"`
	// save or retire
	Action string  `json:"action"`
	Kind   *string `json:"kind"`
	// SourceDigest is sha256:<hex> of the revision's source.
	SourceDigest string    `json:"source_digest"`
	SourceBytes  int       `json:"source_bytes"`
	At           time.Time `json:"at"`
	By           string    `json:"by"`
}
