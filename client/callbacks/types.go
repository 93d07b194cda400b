// Package callbacks holds the wire types of the callbacks API (GET /api/openapi.json of the services listener).
package callbacks

import (
	"encoding/json"
	"time"
)

// Execution is one attempt to deliver one event to one configuration.
type Execution struct {
	ID string `json:"id"`
	// groups the attempts of one delivery
	DeliveryID        string `json:"deliveryId"`
	ConfigurationID   string `json:"configurationId"`
	ConfigurationName string `json:"configurationName"`
	// the subscription that consumed the event (EVENT trigger)
	SubscriptionID string `json:"subscriptionId,omitempty"`
	EventID        string `json:"eventId"`
	EventType      string `json:"eventType"`
	// 1-based number of this attempt within its delivery
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"maxAttempts"`
	State       string `json:"state"`
	Trigger     string `json:"trigger"`
	// the execution a manual retry repeats
	RetryOf     string             `json:"retryOf,omitempty"`
	ScheduledAt time.Time          `json:"scheduledAt"`
	StartedAt   *time.Time         `json:"startedAt"`
	FinishedAt  *time.Time         `json:"finishedAt"`
	DurationMs  *int64             `json:"durationMs"`
	Request     *ExecutionRequest  `json:"request"`
	Response    *ExecutionResponse `json:"response"`
	Error       *ExecutionError    `json:"error"`
	// when FAILED_RETRYING: when the next attempt is due
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

// FieldFilter is one condition on a field.
type FieldFilter struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	// operand of every operator except in and notIn; times are RFC 3339
	Value json.RawMessage `json:"value,omitempty"`
	// operands of in and notIn
	Values []json.RawMessage `json:"values,omitempty"`
}

// FilterRequest selects, orders and pages the items of a resource; it is the
// body of every POST /{resource}/filter.
type FilterRequest struct {
	// all filters must hold (AND)
	Filters []FieldFilter `json:"filters,omitempty"`
	// default: the resource's default order; id breaks ties
	Sort []SortOrder `json:"sort,omitempty"`
	// 0-based page (offset paging); not with cursor
	Page *int `json:"page,omitempty"`
	// items per page, default 20
	Size *int `json:"size,omitempty"`
	// nextCursor of a previous answer with the same filters and sort (keyset paging)
	Cursor string `json:"cursor,omitempty"`
}

// SortOrder orders by one field.
type SortOrder struct {
	Field string `json:"field"`
	// default ASC
	Direction string `json:"direction,omitempty"`
}

// PaginationResponse is one page of a resource.
type PaginationResponse[T any] struct {
	Content []T `json:"content"`
	// absent in cursor paging
	Page *int `json:"page,omitempty"`
	Size int  `json:"size"`
	// items matching the filters, over all pages
	TotalElements int64 `json:"totalElements"`
	TotalPages    int64 `json:"totalPages"`
	HasNext       bool  `json:"hasNext"`
	// opaque; valid with the same filters and sort, across daemon restarts
	NextCursor string `json:"nextCursor,omitempty"`
}

// ReplayRequest is the body of POST /callback-executions/replay: events
// received in [since, until] are delivered again, as new deliveries, to the
// active configurations subscribed to their type (or to one configuration).
type ReplayRequest struct {
	// RFC 3339
	Since string `json:"since"`
	// RFC 3339; default now
	Until string `json:"until,omitempty"`
	// replay to this configuration only
	ConfigurationID string `json:"configurationId,omitempty"`
	// most events replayed, oldest first; default 1000
	Limit *int `json:"limit,omitempty"`
}

// ReplayResult says what a replay scheduled.
type ReplayResult struct {
	// events found in the window
	Events int `json:"events"`
	// new deliveries scheduled
	Deliveries int `json:"deliveries"`
	// more events matched than limit; replay again from the last one
	Truncated bool `json:"truncated"`
	// LastReceivedAt is when the last replayed event was received.
	LastReceivedAt *time.Time `json:"lastReceivedAt"`
}

// RetryRequest is the body of POST /callback-executions/retry.
type RetryRequest struct {
	ExecutionID string `json:"executionId"`
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
	Status int `json:"status"`
	// the first 1024 bytes of the body
	BodyExcerpt   string `json:"bodyExcerpt"`
	BodyTruncated bool   `json:"bodyTruncated"`
}

// ExecutionError says why an attempt failed or was cancelled.
type ExecutionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
