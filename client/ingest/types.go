// Package ingest holds the wire types of the webhook ingestion API.
package ingest

import (
	"time"
)

// Activity is one thing that happened to a webhook, streamed live.
type Activity struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	EventID    string    `json:"event_id"`
	Provider   string    `json:"provider"`
	Topic      string    `json:"topic,omitempty"`
	DeliveryID string    `json:"delivery_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Status     int       `json:"status,omitempty"`
	Size       int       `json:"size,omitempty"`
}

// DLQEntry is an indexed dead letter, as the management API returns it.
type DLQEntry struct {
	EventID     string            `json:"event_id"`
	DLQID       string            `json:"dlq_id"`
	Provider    string            `json:"provider"`
	Stage       string            `json:"stage"`
	Reason      string            `json:"reason"`
	Detail      string            `json:"detail"`
	Status      int               `json:"status,omitempty"`
	Topic       string            `json:"topic,omitempty"`
	PayloadSize int               `json:"payload_size"`
	Replayable  bool              `json:"replayable"`
	ReceivedAt  time.Time         `json:"received_at"`
	FailedAt    time.Time         `json:"failed_at"`
	Failures    int               `json:"failures"`
	ReplayedAt  *time.Time        `json:"replayed_at,omitempty"`
	Replays     int               `json:"replays"`
	Headers     map[string]string `json:"headers,omitempty"`
	Payload     []byte            `json:"payload,omitempty"`
}
