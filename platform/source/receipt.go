package source

import (
	"time"
)

// Receipt statuses (docs/platform-api.md, the Provider receipt state table).
const (
	StatusPending    = "pending"
	StatusDispatched = "dispatched"
	StatusIgnored    = "ignored"
	StatusBlocked    = "blocked"
	StatusFailed     = "failed"
)

// Safe reason codes of a receipt (docs/platform-api.md, "Provider receipts").
const (
	ReasonTransient         = "transient_failure"
	ReasonLifecycle         = "lifecycle_event"
	ReasonUnsupported       = "unsupported_event"
	ReasonNotDispatchable   = "not_dispatchable"
	ReasonBindingRevoked    = "binding_revoked"
	ReasonAuthorityLost     = "authority_lost"
	ReasonPackage           = "package_unavailable"
	ReasonTargetFinished    = "target_finished"
	ReasonTargetUnavailable = "target_unavailable"
	ReasonSchema            = "schema_failure"
	ReasonMapping           = "mapping_failed"
)

// Dispatcher limits (docs/platform-api.md, "Limits": provider dispatcher).
const (
	// DueBatch is how many due receipts one environment's turn handles.
	DueBatch = 10
	// DispatchDeadline bounds one dispatch.
	DispatchDeadline = 5 * time.Second
	// Cooldown is the wait after a transient failure.
	Cooldown = 30 * time.Second
	// MaxEnvironments is how many environments one turn visits.
	MaxEnvironments = 16
)

// Receipt is a receipt as the routes show it: never its payload.
type Receipt struct {
	ID            string     `json:"id" format:"uuid"`
	SourceID      string     `json:"source_id" format:"uuid"`
	EventKind     string     `json:"event_kind"`
	EventID       string     `json:"event_id" doc:"the provider's event id; with source_id and event_kind the event's identity"`
	AccountID     string     `json:"account_id" doc:"the provider account of the event (\"\" when the provider names none)"`
	Status        string     `json:"status" enum:"pending,dispatched,ignored,blocked,failed"`
	Reason        *string    `json:"reason" doc:"safe reason code of the last transition"`
	Attempts      int        `json:"attempts" doc:"dispatch attempts made"`
	ReceivedAt    time.Time  `json:"received_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at" doc:"when a pending receipt is due (after a transient failure: 30 seconds later)"`
	DispatchedAt  *time.Time `json:"dispatched_at"`
	RunID         *string    `json:"run_id" format:"uuid"`
	SignalID      *string    `json:"signal_id" doc:"the id of the signal event delivered (kind signal)"`
}

// receiptRow is a stored receipt with its sealed payload.
type receiptRow struct {
	Receipt
	Environment string
	sealed      string
	digest      string
}

// IngressAck is the answer to an admitted delivery: sent after the
// admission commit.
type IngressAck struct {
	SourceID string     `json:"source_id" format:"uuid"`
	Events   []AckEvent `json:"events"`
}

// AckEvent is one admitted event.
type AckEvent struct {
	ReceiptID string `json:"receipt_id" format:"uuid"`
	EventKind string `json:"event_kind"`
	EventID   string `json:"event_id"`
	Duplicate bool   `json:"duplicate" doc:"true when the event was admitted before (a provider retry): nothing new is stored"`
}
