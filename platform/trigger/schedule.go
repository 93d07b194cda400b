package trigger

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Problem codes of schedules (docs/platform-api.md, "Errors").
const (
	// CodeScheduleRevision: stale revision, existing id saved without a
	// revision, new id saved with one, or schedule deleted.
	CodeScheduleRevision = "PF-SCHEDULE-REVISION"
	// CodeScheduleRange: the calendar has no representable future
	// occurrence.
	CodeScheduleRange = "PF-SCHEDULE-RANGE"
)

// Schedule statuses (the Schedule state table).
const (
	StatusEnabled  = "enabled"
	StatusDisabled = "disabled"
	StatusBlocked  = "blocked"
	StatusDeleted  = "deleted"
)

// Why a scan blocked a schedule (blocked_reason).
const (
	// BlockedActivation: the activation is retired or gone.
	BlockedActivation = "activation_not_ready"
	// BlockedGrant: the execution principal no longer holds run.start in
	// the environment (or is disabled).
	BlockedGrant = "owner_lost_grant"
	// BlockedNoOccurrence: the calendar has no representable future
	// occurrence.
	BlockedNoOccurrence = "no_future_occurrence"
	// BlockedInput: the workflow refused the schedule's input when it
	// fired.
	BlockedInput = "input_rejected"
)

// The only time zone and missed-occurrence policy (docs/platform-api.md, "Schedule
// request").
const (
	TimezoneUTC = "UTC"
	MissedSkip  = "skip"
)

// MaxInputBytes bounds a schedule's input (the run payload limit).
const MaxInputBytes = 1 << 20

// Occurrence list limits: GET E/schedules/{id}/occurrences answers 100 by
// default, at most 100.
const defaultOccurrenceLimit = 100

// ScheduleRequest is the body of POST E/schedules.
type ScheduleRequest struct {
	ID           string          `json:"id,omitempty" format:"uuid" doc:"replace that schedule (If-Match with its revision required); a new id without If-Match creates a schedule with that id"`
	Cron         string          `json:"cron" api:"required" doc:"five-field UTC calendar: minute hour day-of-month month day-of-week (see docs/platform-api.md, Schedules), at most 256 characters"`
	Timezone     string          `json:"timezone,omitempty" enum:"UTC" doc:"always UTC (the default)"`
	MissedPolicy string          `json:"missed_policy,omitempty" enum:"skip" doc:"always skip (the default): missed occurrences become one skipped range"`
	ActivationID string          `json:"activation_id" api:"required" format:"uuid" doc:"an active activation of the environment"`
	Input        json.RawMessage `json:"input,omitempty" doc:"the runs' input, a JSON object of at most 1 MiB (default {}); checked against the workflow's input schema"`
}

// Schedule is a schedule as the routes show it. Its ETag is Revision.
type Schedule struct {
	ID           string          `json:"id" format:"uuid"`
	Revision     int64           `json:"revision"`
	Status       string          `json:"status" enum:"enabled,disabled,blocked,deleted"`
	Cron         string          `json:"cron" doc:"the calendar in canonical form (fields separated by one space)"`
	Timezone     string          `json:"timezone"`
	MissedPolicy string          `json:"missed_policy"`
	ActivationID string          `json:"activation_id" format:"uuid"`
	Input        json.RawMessage `json:"input"`
	// NextDueAt is the next occurrence the scheduler will handle (null
	// unless enabled).
	NextDueAt *time.Time `json:"next_due_at"`
	// PrincipalID is the execution principal: who saved or enabled the
	// current revision; the runs are started as it.
	PrincipalID   string    `json:"principal_id" format:"uuid"`
	BlockedReason *string   `json:"blocked_reason" doc:"why a scan blocked the schedule: activation_not_ready, owner_lost_grant, no_future_occurrence or input_rejected"`
	CreatedAt     time.Time `json:"created_at"`
	CreatedBy     string    `json:"created_by" format:"uuid"`
	UpdatedAt     time.Time `json:"updated_at"`
	UpdatedBy     string    `json:"updated_by" format:"uuid"`
}

// Occurrence kinds.
const (
	OccurrenceStarted = "started"
	OccurrenceSkipped = "skipped"
)

// Occurrence is a started occurrence (its run) or an immutable range of
// skipped ones.
type Occurrence struct {
	Kind string `json:"kind" enum:"started,skipped"`
	// From and To are the first and last occurrence of a skipped range;
	// both are the occurrence of a started one.
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	RunID *string   `json:"run_id" format:"uuid"`
	// Revision is the schedule revision that handled the occurrence.
	Revision int64 `json:"revision"`
	// ObservedAt is when the scheduler handled it (database time).
	ObservedAt time.Time `json:"observed_at"`
}

// Upcoming is the answer of POST E/schedules: the schedule and its next
// five due times.
type Upcoming struct {
	Schedule
	Upcoming []time.Time `json:"upcoming" doc:"the next five occurrences (fewer when the calendar has fewer representable ones)"`
}

// row is a stored schedule with its scope.
type row struct {
	Schedule
	Tenant, Project, Environment string
}

// checked is a validated schedule request.
type checked struct {
	req   ScheduleRequest
	cal   Calendar
	input json.RawMessage
}

// checkRequest applies the ScheduleRequest rules that need no stored
// state: the calendar grammar first, then the other fields.
func checkRequest(req ScheduleRequest) (checked, error) {
	cal, err := ParseCalendar(req.Cron)
	if err != nil {
		var ce *CalendarError
		if errors.As(err, &ce) {
			return checked{}, &api.Error{Code: api.CodeValidation,
				Message:     "the request body does not match the contract: " + ce.Error(),
				Diagnostics: []api.Diagnostic{{Code: "cron_" + ce.Kind, Path: "/cron", Message: ce.Error()}}}
		}
		return checked{}, err
	}
	if req.Timezone != "" && req.Timezone != TimezoneUTC {
		return checked{}, api.Invalid("/timezone", "calendars are in UTC only; timezone must be UTC")
	}
	if req.MissedPolicy != "" && req.MissedPolicy != MissedSkip {
		return checked{}, api.Invalid("/missed_policy", "missed_policy must be skip")
	}
	if req.ID != "" && !auth.IsCanonicalUUID(req.ID) {
		return checked{}, api.Invalid("/id", "id must be a canonical lowercase UUID")
	}
	if !auth.IsCanonicalUUID(req.ActivationID) {
		return checked{}, api.Invalid("/activation_id", "activation_id must be a canonical lowercase UUID")
	}
	input, err := compactObject("/input", req.Input, MaxInputBytes)
	if err != nil {
		return checked{}, err
	}
	return checked{req: req, cal: cal, input: input}, nil
}

// compactObject checks that raw is absent or a JSON object of at most max
// bytes and answers it compact ("{}" when absent).
func compactObject(path string, raw json.RawMessage, max int) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		return nil, api.Invalid(path, "%s must be a JSON object", path[1:])
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, api.Invalid(path, "%s must be a JSON object", path[1:])
	}
	if buf.Len() > max {
		return nil, api.Invalid(path, "%s has %d bytes; at most %d are accepted", path[1:], buf.Len(), max)
	}
	return buf.Bytes(), nil
}

// firstDue is the fresh future cursor of a schedule saved or enabled at
// now: its first occurrence after the current minute. A calendar without
// one answers 422 PF-SCHEDULE-RANGE.
func firstDue(cal Calendar, now time.Time) (time.Time, error) {
	next, err := cal.Next(now, false)
	if err != nil {
		return time.Time{}, &api.Error{Code: CodeScheduleRange,
			Message:     "the calendar has no representable future occurrence",
			Diagnostics: []api.Diagnostic{{Code: "no_future_occurrence", Path: "/cron", Message: err.Error()}}}
	}
	return next, nil
}

// revisionConflict is 409 PF-SCHEDULE-REVISION, with the current revision
// as ETag when there is one.
func revisionConflict(current int64, format string, args ...any) *api.Error {
	e := api.Conflict(CodeScheduleRevision, format, args...)
	if current > 0 {
		e.Headers = map[string]string{"ETag": api.FormatETag(current)}
	}
	return e
}

// checkChange applies the revision rules shared by every change of an
// existing schedule: a deleted one cannot change, and If-Match must be its
// current revision.
func checkChange(sch Schedule, ifMatch int64) error {
	if sch.Status == StatusDeleted {
		return revisionConflict(0, "the schedule is deleted; its revisions and history stay readable but it cannot change")
	}
	if ifMatch == 0 {
		return revisionConflict(sch.Revision, "schedule %s exists; send If-Match with its revision %d to replace it", sch.ID, sch.Revision)
	}
	if ifMatch != sch.Revision {
		return revisionConflict(sch.Revision, "the schedule is at revision %d, not %d; read it again", sch.Revision, ifMatch)
	}
	return nil
}

// schedulePath is the canonical path of a schedule.
func schedulePath(sc auth.Scope, id string) string {
	return api.Prefix + "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + "/schedules/" + id
}
