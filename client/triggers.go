package client

import (
	"encoding/json"
	"time"
)

// Schedule is a schedule as the routes show it. Its ETag is Revision.
type Schedule struct {
	ID       string `json:"id"`
	Revision int64  `json:"revision"`
	Status   string `json:"status"`
	// the calendar in canonical form (fields separated by one space)
	Cron         string          `json:"cron"`
	Timezone     string          `json:"timezone"`
	MissedPolicy string          `json:"missed_policy"`
	ActivationID string          `json:"activation_id"`
	Input        json.RawMessage `json:"input"`
	// NextDueAt is the next occurrence the scheduler will handle (null
	// unless enabled).
	NextDueAt *time.Time `json:"next_due_at"`
	// PrincipalID is the execution principal: who saved or enabled the
	// current revision; the runs are started as it.
	PrincipalID string `json:"principal_id"`
	// why a scan blocked the schedule: activation_not_ready, owner_lost_grant, no_future_occurrence or input_rejected
	BlockedReason *string   `json:"blocked_reason"`
	CreatedAt     time.Time `json:"created_at"`
	CreatedBy     string    `json:"created_by"`
	UpdatedAt     time.Time `json:"updated_at"`
	UpdatedBy     string    `json:"updated_by"`
}

// ScheduleRequest is the body of POST E/schedules.
type ScheduleRequest struct {
	// replace that schedule (If-Match with its revision required); a new id without If-Match creates a schedule with that id
	ID string `json:"id,omitempty"`
	// five-field UTC calendar: minute hour day-of-month month day-of-week (see docs/platform-api.md, Schedules), at most 256 characters
	Cron string `json:"cron"`
	// always UTC (the default)
	Timezone string `json:"timezone,omitempty"`
	// always skip (the default): missed occurrences become one skipped range
	MissedPolicy string `json:"missed_policy,omitempty"`
	// an active activation of the environment
	ActivationID string `json:"activation_id"`
	// the runs' input, a JSON object of at most 1 MiB (default {}); checked against the workflow's input schema
	Input json.RawMessage `json:"input,omitempty"`
}

// Upcoming is the answer of POST E/schedules: the schedule and its next
// five due times.
type Upcoming struct {
	Schedule
	// the next five occurrences (fewer when the calendar has fewer representable ones)
	Upcoming []time.Time `json:"upcoming"`
}

// Occurrence is a started occurrence (its run) or an immutable range of
// skipped ones.
type Occurrence struct {
	Kind string `json:"kind"`
	// From and To are the first and last occurrence of a skipped range;
	// both are the occurrence of a started one.
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	RunID *string   `json:"run_id"`
	// Revision is the schedule revision that handled the occurrence.
	Revision int64 `json:"revision"`
	// ObservedAt is when the scheduler handled it (database time).
	ObservedAt time.Time `json:"observed_at"`
}

// Trigger is a trigger as the routes show it; the signing secret is never
// part of it (CreatedTrigger shows it once).
type Trigger struct {
	ID string `json:"id"`
	// 1 while enabled, 2 once disabled or replaced
	Revision     int64  `json:"revision"`
	Status       string `json:"status"`
	Name         string `json:"name"`
	ActivationID string `json:"activation_id"`
	// the mapping expression ("": the body is the input)
	Mapping   string   `json:"mapping"`
	Headers   []string `json:"headers"`
	Tolerance int      `json:"tolerance_seconds"`
	// the path to deliver to: /webhooks/{id} on the services listener
	URL string `json:"url"`
	// who created it: the runs are started as this principal
	PrincipalID string     `json:"principal_id"`
	Replaces    *string    `json:"replaces"`
	ReplacedBy  *string    `json:"replaced_by"`
	CreatedAt   time.Time  `json:"created_at"`
	DisabledAt  *time.Time `json:"disabled_at"`
	DisabledBy  *string    `json:"disabled_by"`
}

// TriggerRequest is the body of POST E/triggers and of
// POST E/triggers/{id}/replace.
type TriggerRequest struct {
	// display name, at most 200 characters
	Name string `json:"name,omitempty"`
	// an active activation of the environment
	ActivationID string `json:"activation_id"`
	// workflow expression (CEL) over input.body (the parsed JSON body) and input.headers (the chosen headers, lower-case names) that gives the run input, a JSON object; default: the body itself. At most 4096 characters
	Mapping string `json:"mapping,omitempty"`
	// request headers the mapping may read (at most 20 names; the webhook-* headers are never offered)
	Headers []string `json:"headers,omitempty"`
	// how far webhook-timestamp may be from the server's clock, 1..3600 seconds (default 300)
	Tolerance int `json:"tolerance_seconds,omitempty"`
}

// CreatedTrigger is the answer of a creation or replacement: the trigger
// and its signing secret, shown this once.
type CreatedTrigger struct {
	Trigger
	// the whsec_ signing secret (Standard Webhooks), shown only in this answer
	Secret string `json:"secret"`
}

// TriggerDelivery is the answer to an accepted webhook: the run it started (or
// had started, for a replayed webhook-id).
type TriggerDelivery struct {
	TriggerID string `json:"trigger_id"`
	WebhookID string `json:"webhook_id"`
	RunID     string `json:"run_id"`
	// true when this webhook-id was accepted before: no second run started
	Replayed bool `json:"replayed"`
}
