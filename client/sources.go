package client

import (
	"encoding/json"
	"time"
)

// Connection is one immutable connection revision as the routes show it:
// never its secrets, only their names.
type Connection struct {
	// the revision id (connection_revision_id of a provider source)
	ID string `json:"id"`
	// the connection every revision belongs to
	ConnectionID string `json:"connection_id"`
	// 1 for the first revision, +1 for each later one
	Revision int64             `json:"revision"`
	Name     string            `json:"name"`
	Provider string            `json:"provider"`
	Config   map[string]string `json:"config"`
	// names of the sealed secrets
	SecretKeys []string `json:"secret_keys"`
	// who created the revision
	PrincipalID string    `json:"principal_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// ConnectionRequest is the body of POST E/connections and of POST
// E/connections/{connection}/revisions.
type ConnectionRequest struct {
	// display name, 1 to 200 characters
	Name string `json:"name"`
	// provider id: slack, whatsapp, telegram or github (a new revision keeps its connection's provider)
	Provider string `json:"provider"`
	// settings of the provider account, keys from the provider package's config_keys (account_id pins the account); values 1 to 500 characters
	Config map[string]string `json:"config,omitempty"`
	// exactly the provider package's secret_keys, each 1 to 1024 characters; sealed at rest and never shown
	Secrets map[string]string `json:"secrets"`
}

// Source is a provider source as the routes show it.
type Source struct {
	ID                   string            `json:"id"`
	Name                 string            `json:"name"`
	Provider             string            `json:"provider"`
	Package              string            `json:"package"`
	PackageVersion       string            `json:"package_version"`
	AdapterVersion       string            `json:"adapter_version"`
	SchemaDigest         string            `json:"schema_digest"`
	ConnectionRevisionID string            `json:"connection_revision_id"`
	Policy               map[string]string `json:"policy"`
	Kind                 string            `json:"kind"`
	ActivationID         *string           `json:"activation_id"`
	RunID                *string           `json:"run_id"`
	Signal               *string           `json:"signal"`
	// "": the normalized event is passed as is
	Mapping string      `json:"mapping"`
	Scope   SourceScope `json:"scope"`
	// the binding of the connection revision to this source (revoked when it is disabled)
	BindingID string `json:"binding_id"`
	// the owner: runs start (or signals are sent) as this principal while it keeps its grants
	PrincipalID string `json:"principal_id"`
	Disabled    bool   `json:"disabled"`
	// the path providers deliver to: /provider-ingress/{id} on the services listener
	IngressURL string     `json:"ingress_url"`
	CreatedAt  time.Time  `json:"created_at"`
	DisabledAt *time.Time `json:"disabled_at"`
	DisabledBy *string    `json:"disabled_by"`
}

// SourceRequest is the body of POST E/provider-sources (docs/platform-api.md, "Provider
// source request").
type SourceRequest struct {
	// display name, 1 to 200 characters
	Name string `json:"name"`
	// messaging provider id (slack, whatsapp, telegram, github)
	Provider string `json:"provider"`
	// provider package name (GET P/provider-packages)
	Package        string `json:"package"`
	PackageVersion string `json:"package_version"`
	// may be omitted only when one declaration matches
	AdapterVersion string `json:"adapter_version,omitempty"`
	// the package's schema_digest: SHA-256 of the canonical JSON of the declared event schemas plus the sorted dispatchable kinds
	SchemaDigest string `json:"schema_digest"`
	// a revision of a connection of the environment for the same provider
	ConnectionRevisionID string `json:"connection_revision_id"`
	// exact copy of the connection revision's config; account_id pinned as a non-empty string when the connection defines it
	Policy map[string]string `json:"policy"`
	Kind   string            `json:"kind"`
	// kind run: the activation a receipt starts
	ActivationID string `json:"activation_id,omitempty"`
	// kind signal: the run a receipt signals
	RunID string `json:"run_id,omitempty"`
	// kind signal: the declared signal name, 1 to 200 characters
	Signal string `json:"signal,omitempty"`
	// workflow expression (CEL) over input.event (the normalized event), input.kind, input.event_id and input.account_id giving the run input or signal payload; default: the normalized event. At most 4096 characters
	Mapping string `json:"mapping,omitempty"`
}

// Receipt is a receipt as the routes show it: never its payload.
type Receipt struct {
	ID        string `json:"id"`
	SourceID  string `json:"source_id"`
	EventKind string `json:"event_kind"`
	// the provider's event id; with source_id and event_kind the event's identity
	EventID string `json:"event_id"`
	// the provider account of the event ("" when the provider names none)
	AccountID string `json:"account_id"`
	Status    string `json:"status"`
	// safe reason code of the last transition
	Reason *string `json:"reason"`
	// dispatch attempts made
	Attempts   int       `json:"attempts"`
	ReceivedAt time.Time `json:"received_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// when a pending receipt is due (after a transient failure: 30 seconds later)
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	DispatchedAt  *time.Time `json:"dispatched_at"`
	RunID         *string    `json:"run_id"`
	// the id of the signal event delivered (kind signal)
	SignalID *string `json:"signal_id"`
}

// SourceScope is the environment a source belongs to.
type SourceScope struct {
	TenantID      string `json:"tenant_id"`
	ProjectID     string `json:"project_id"`
	EnvironmentID string `json:"environment_id"`
}

// Package is one built-in provider package declaration.
type Package struct {
	Provider       string `json:"provider"`
	Name           string `json:"package"`
	Version        string `json:"package_version"`
	AdapterVersion string `json:"adapter_version"`
	Title          string `json:"title"`
	// keys a connection's config may hold; account_id pins the provider account
	ConfigKeys []string `json:"config_keys"`
	// secrets a connection must hold (sealed, never shown)
	SecretKeys []string `json:"secret_keys"`
	EventKinds []string `json:"event_kinds"`
	// JSON schema of each kind's normalized event
	EventSchemas map[string]json.RawMessage `json:"event_schemas"`
	// kinds a source may dispatch; the others are only ignored
	Dispatchable []string `json:"dispatchable"`
	// lowercase hex SHA-256 of the canonical JSON of event_schemas followed by the canonical JSON of the sorted dispatchable kinds
	SchemaDigest string `json:"schema_digest"`
	AuthDoc      string `json:"authentication"`
	ChallengeDoc string `json:"challenge"`
}
