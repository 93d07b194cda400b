package callbacks

import "time"

// Execution states. An execution is one delivery attempt:
//
//	PENDING ──────────────┬─> SUCCEEDED
//	  │  ▲                ├─> FAILED_RETRYING   (a new PENDING attempt is scheduled)
//	  ▼  │ (breaker       ├─> FAILED_PERMANENT  (attempts used up, or not retryable)
//	HELD_CIRCUIT_OPEN ────┘
//	PENDING / HELD_CIRCUIT_OPEN ──> CANCELLED   (configuration inactive, disabled or
//	                                             deleted, or its domain no longer authorized)
//
// PENDING and HELD_CIRCUIT_OPEN are open: the attempt is still to be made at
// scheduledAt. The others are final. Holding does not consume an attempt.
const (
	StatePending         = "PENDING"
	StateHeld            = "HELD_CIRCUIT_OPEN"
	StateSucceeded       = "SUCCEEDED"
	StateFailedRetrying  = "FAILED_RETRYING"
	StateFailedPermanent = "FAILED_PERMANENT"
	StateCancelled       = "CANCELLED"
)

// Triggers: what started a delivery.
const (
	TriggerEvent       = "EVENT"        // consumed from a broker topic
	TriggerDispatch    = "DISPATCH"     // Service.Dispatch from Go code
	TriggerManualRetry = "MANUAL_RETRY" // POST /callback-executions/retry
	TriggerReplay      = "REPLAY"       // POST /callback-executions/replay
)

// Attempt error codes recorded in Execution.Error.Code.
const (
	ErrCodeHTTPStatus   = "HTTP_STATUS"           // a non-2xx answer
	ErrCodeGone         = "GONE"                  // 410: the configuration is disabled
	ErrCodeRedirect     = "REDIRECT_NOT_FOLLOWED" // 3xx while follow-redirects is false
	ErrCodeTimeout      = "TIMEOUT"
	ErrCodeConnection   = "CONNECTION"
	ErrCodeSSRF         = "SSRF_BLOCKED"          // the resolved address is in a refused range
	ErrCodeDomain       = "DOMAIN_NOT_AUTHORIZED" // the host left the allow-list
	ErrCodeInactive     = "CONFIGURATION_INACTIVE"
	ErrCodeDeleted      = "CONFIGURATION_DELETED"
	ErrCodeEventExpired = "EVENT_EXPIRED" // payload removed by retention
	ErrCodeRequest      = "REQUEST"       // the request could not be built
)

// Execution is one attempt to deliver one event to one configuration.
type Execution struct {
	ID                string `json:"id" schema:"format=uuid"`
	DeliveryID        string `json:"deliveryId" schema:"format=uuid" doc:"groups the attempts of one delivery"`
	ConfigurationID   string `json:"configurationId" schema:"format=uuid"`
	ConfigurationName string `json:"configurationName"`
	SubscriptionID    string `json:"subscriptionId,omitempty" doc:"the subscription that consumed the event (EVENT trigger)"`
	EventID           string `json:"eventId" schema:"format=uuid"`
	EventType         string `json:"eventType"`
	Attempt           int    `json:"attempt" doc:"1-based number of this attempt within its delivery"`
	MaxAttempts       int    `json:"maxAttempts"`
	State             string `json:"state" schema:"enum=PENDING|HELD_CIRCUIT_OPEN|SUCCEEDED|FAILED_RETRYING|FAILED_PERMANENT|CANCELLED"`
	Trigger           string `json:"trigger" schema:"enum=EVENT|DISPATCH|MANUAL_RETRY|REPLAY"`
	RetryOf           string `json:"retryOf,omitempty" doc:"the execution a manual retry repeats"`

	ScheduledAt   time.Time          `json:"scheduledAt"`
	StartedAt     *time.Time         `json:"startedAt"`
	FinishedAt    *time.Time         `json:"finishedAt"`
	DurationMs    *int64             `json:"durationMs"`
	Request       *ExecutionRequest  `json:"request"`
	Response      *ExecutionResponse `json:"response"`
	Error         *ExecutionError    `json:"error"`
	NextAttemptAt *time.Time         `json:"nextAttemptAt" doc:"when FAILED_RETRYING: when the next attempt is due"`
	CreatedAt     time.Time          `json:"createdAt"`
	UpdatedAt     time.Time          `json:"updatedAt"`
}

// ExecutionRequest is what was sent. Headers never contain a secret (the
// signature, which does not reveal the secret, is recorded).
type ExecutionRequest struct {
	Method    string            `json:"method"`
	URL       string            `json:"url"`
	Headers   map[string]string `json:"headers"`
	BodyBytes int               `json:"bodyBytes"`
}

// ExecutionResponse is what came back.
type ExecutionResponse struct {
	Status        int    `json:"status"`
	BodyExcerpt   string `json:"bodyExcerpt" doc:"the first 1024 bytes of the body"`
	BodyTruncated bool   `json:"bodyTruncated"`
}

// ExecutionError says why an attempt failed or was cancelled.
type ExecutionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// isOpen reports whether an execution is an attempt still to be made.
func isOpen(state string) bool { return state == StatePending || state == StateHeld }

// responseExcerptBytes bounds the recorded part of a response body.
const responseExcerptBytes = 1024
