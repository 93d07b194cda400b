package catalog

import (
	"encoding/json"
	"time"
)

// FormatYAML is the only source format.
const FormatYAML = "yaml"

// PublishRequest is the body of POST P/{collection} and of a draft save.
type PublishRequest struct {
	Source string `json:"source" api:"required" doc:"the definition source, at most 1 MiB"`
	Format string `json:"format,omitempty" doc:"source format: yaml (the default)"`
}

// Version is a published version (immutable).
type Version struct {
	ID           string          `json:"id" format:"uuid"`
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
	PublishedBy   string    `json:"published_by" format:"uuid"`
}

// VersionSummary is a published version in a list.
type VersionSummary struct {
	ID           string    `json:"id" format:"uuid"`
	Kind         string    `json:"kind"`
	DefinitionID string    `json:"definition_id"`
	Version      int       `json:"version"`
	Digest       string    `json:"digest"`
	PublishedAt  time.Time `json:"published_at"`
	PublishedBy  string    `json:"published_by" format:"uuid"`
}

func (v Version) summary() VersionSummary {
	return VersionSummary{ID: v.ID, Kind: v.Kind, DefinitionID: v.DefinitionID, Version: v.Version,
		Digest: v.Digest, PublishedAt: v.PublishedAt, PublishedBy: v.PublishedBy}
}

// Draft is a draft with its lifecycle revisions. Its ETag is Revision.
type Draft struct {
	ID string `json:"id" format:"uuid"`
	// Kind is the source's kind when it can be read, else null.
	Kind     *string `json:"kind"`
	Revision int64   `json:"revision"`
	// Source is the source of SourceRevision (the latest save unless the
	// read asked for ?revision=N).
	Source         string         `json:"source"`
	SourceRevision int64          `json:"source_revision"`
	Format         string         `json:"format"`
	CreatedAt      time.Time      `json:"created_at"`
	CreatedBy      string         `json:"created_by" format:"uuid"`
	UpdatedAt      time.Time      `json:"updated_at"`
	UpdatedBy      string         `json:"updated_by" format:"uuid"`
	Retired        bool           `json:"retired"`
	RetiredAt      *time.Time     `json:"retired_at"`
	RetiredBy      *string        `json:"retired_by"`
	Revisions      []DraftHistory `json:"revisions"`
}

// DraftHistory is one lifecycle revision of a draft.
type DraftHistory struct {
	Revision int64   `json:"revision"`
	Action   string  `json:"action" doc:"save or retire"`
	Kind     *string `json:"kind"`
	// SourceDigest is sha256:<hex> of the revision's source.
	SourceDigest string    `json:"source_digest"`
	SourceBytes  int       `json:"source_bytes"`
	At           time.Time `json:"at"`
	By           string    `json:"by" format:"uuid"`
}

// DraftSummary is a draft in a list.
type DraftSummary struct {
	ID        string     `json:"id" format:"uuid"`
	Kind      *string    `json:"kind"`
	Revision  int64      `json:"revision"`
	UpdatedAt time.Time  `json:"updated_at"`
	Retired   bool       `json:"retired"`
	RetiredAt *time.Time `json:"retired_at"`
}

// CompileRequest is the body of POST P/compiler/compile and validate.
type CompileRequest struct {
	Source   string `json:"source" api:"required" doc:"the definition source, at most 1 MiB"`
	Format   string `json:"format,omitempty" doc:"source format: yaml (the default)"`
	Filename string `json:"filename,omitempty" doc:"label for diagnostics only; never changes the artifact"`
	// Catalog is an explicit canonical catalog lock (the body of GET
	// P/catalog). Without it compile uses the project's current catalog
	// and validate performs partial validation.
	Catalog json.RawMessage `json:"catalog,omitempty" doc:"catalog lock; null or absent: see the route"`
	Strict  bool            `json:"strict,omitempty" doc:"treat warnings as errors (no effect on partial validation)"`
}

// DecisionEvaluationRequest is the body of POST P/compiler/evaluate-decision:
// exactly one of table (a decision table object, camelCase as in the
// language) and reference (a published decision table, id@version).
type DecisionEvaluationRequest struct {
	Table     map[string]any  `json:"table,omitempty" doc:"decision table (package decision format; version, title and description are ignored)"`
	Reference string          `json:"reference,omitempty" doc:"published decision table of the project, id@version"`
	Input     json.RawMessage `json:"input" api:"required" doc:"the input object"`
}

// StudioDecisionRequest is the body of POST /studio/local/decision/evaluate.
type StudioDecisionRequest struct {
	Table map[string]any  `json:"table" api:"required" doc:"decision table (camelCase)"`
	Input json.RawMessage `json:"input" api:"required" doc:"the input object"`
}

// DecisionEvaluation is the answer of both decision routes (snake_case).
type DecisionEvaluation struct {
	Output         any      `json:"output"`
	MatchedRuleIDs []string `json:"matched_rule_ids"`
	UsedDefault    bool     `json:"used_default"`
}

// Capabilities is the body of GET P/capabilities: what this server's
// compiler and catalog support, and what the caller may do in the project.
type Capabilities struct {
	Language           LanguageCapabilities `json:"language"`
	Adapters           []string             `json:"adapters"`
	CallerCapabilities []string             `json:"caller_capabilities"`
}

// LanguageCapabilities describes the definition language.
type LanguageCapabilities struct {
	Formats        []string `json:"formats"`
	Kinds          []string `json:"kinds"`
	ArtifactFormat []string `json:"artifact_formats"`
	StepKinds      []string `json:"step_kinds"`
	SideEffects    []string `json:"side_effects"`
	HitPolicies    []string `json:"hit_policies"`
	Expression     string   `json:"expression_language"`
	MaxSourceBytes int      `json:"max_source_bytes"`
}

// ConnectorDescriptor describes an installed connector adapter.
type ConnectorDescriptor struct {
	Adapter string `json:"adapter"`
	BuiltIn bool   `json:"built_in"`
	// DefinitionID and Version name the manifest in Source.
	DefinitionID string `json:"definition_id"`
	Version      int    `json:"version"`
	Title        string `json:"title"`
	// Source is the exact connector manifest to publish (POST P/connectors).
	Source       string   `json:"source"`
	Digest       string   `json:"digest"`
	Capabilities []string `json:"capabilities"`
	// Bindings are how an action binds to the adapter: "adapter"
	// (connector: <adapter>) and "connector" (connector: <id>@<version>
	// with an operation, once the manifest is published).
	Bindings   []string           `json:"bindings"`
	Actions    []DescriptorAction `json:"actions"`
	Connection json.RawMessage    `json:"connection_schema"`
	// PublishedVersionID is the published version of exactly Source, once
	// published in the project.
	PublishedVersionID *string `json:"published_version_id"`
	// Published lists every connector version of the project on this adapter.
	Published []VersionSummary `json:"published"`
}

// DescriptorAction is one operation of a connector.
type DescriptorAction struct {
	Name         string          `json:"name"`
	Title        *string         `json:"title"`
	SideEffect   string          `json:"side_effect"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}
