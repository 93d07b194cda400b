package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// List limits (docs/platform-api.md, "Limits"): run summaries page with the generic
// limit (api.DefaultPageLimit, api.MaxPageLimit); steps and logs with
// their own.
const (
	DefaultStepLogLimit = 200
	MaxStepLogLimit     = 500
	// MaxListRange bounds an explicit time range of a list filter.
	MaxListRange = 400 * 24 * time.Hour
	// maxFilterLen bounds a free-text filter value (keys, types).
	maxFilterLen = 200
)

// RunSummary is a run in the run list: what a run is without its state.
type RunSummary struct {
	ID             string     `json:"id" format:"uuid"`
	ActivationID   string     `json:"activation_id" format:"uuid"`
	Workflow       string     `json:"workflow" doc:"the workflow as id@version"`
	Status         string     `json:"status" doc:"running, waiting, suspended, succeeded, failed, cancelled or timed_out"`
	Paused         bool       `json:"paused"`
	Test           bool       `json:"test"`
	Archived       bool       `json:"archived,omitempty" doc:"the run is archived (listed only with include_archived=true)"`
	ParentRunID    *string    `json:"parent_run_id" format:"uuid" doc:"the retried run"`
	CallerRunID    *string    `json:"caller_run_id" format:"uuid" doc:"the run whose workflow step started this one"`
	CorrelationKey *string    `json:"correlation_key"`
	BusinessKey    *string    `json:"business_key"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at" doc:"the time of the last accepted event"`
	EndedAt        *time.Time `json:"ended_at,omitempty" doc:"once the run has ended: the time of its last accepted event"`
}

// Step is one step instance of a run (one activation of a node).
type Step struct {
	NodeID     string `json:"node_id"`
	Instance   string `json:"instance" doc:"the node id with the forEach iteration suffix"`
	Generation int    `json:"generation" doc:"the node's activation count at the start of this instance"`
	Kind       string `json:"kind" doc:"the step kind (action, agent, decision, workflow, wait, signal, human, forEach, parallel, switch, set, fail, succeed)"`
	Status     string `json:"status" doc:"running, retrying, waiting, suspended, completed, failed, timed_out or cancelled"`
	// WaitingFor is what an active step waits for (task, timer, signal,
	// human, child, join, loop, incident).
	WaitingFor string            `json:"waiting_for,omitempty"`
	Deadline   *time.Time        `json:"deadline,omitempty" doc:"an active step's deadline or due time"`
	StartedAt  time.Time         `json:"started_at"`
	StartedSeq int64             `json:"started_seq" doc:"the accepted event that started the step"`
	EndedAt    *time.Time        `json:"ended_at,omitempty"`
	EndedSeq   int64             `json:"ended_seq,omitempty"`
	Attempts   int               `json:"attempts" doc:"action and agent steps: the attempt the step is on (retries add one); 0 for other steps"`
	LastError  *kernel.TaskError `json:"last_error,omitempty"`
}

// LogEntry is one line of a run's log: a history record or an engine note.
type LogEntry struct {
	ID      int64           `json:"id" doc:"increasing; the after parameter resumes behind it"`
	At      time.Time       `json:"at"`
	Seq     *int64          `json:"seq" doc:"the accepted event the line belongs to"`
	Level   string          `json:"level" doc:"info, warn or error"`
	Type    string          `json:"type" doc:"step_started, step_completed, run_succeeded, event_refused, ..."`
	NodeID  *string         `json:"node_id"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data" doc:"the history record or the note's details (null when none)"`
}

// registerLists adds run_summaries.list, runs.steps and runs.logs.
func (s *Service) registerLists(add func(api.Route)) {
	stepLogLimit := []api.Param{
		{Name: "limit", Type: "integer", Description: "page size, 1 to 500 (default 200)"},
		{Name: "cursor", Description: "next_cursor of the previous page; valid only for the same run and filters"},
	}
	add(api.Route{Method: "GET", Path: base, Capability: auth.CapRunRead, Page: true, Handler: s.listRuns,
		OperationID: "listRuns", Tag: tagRuns, Summary: "List the runs of the environment (run_summaries.list)",
		Description: "Run summaries, newest first (created_at, then id, descending). Test runs are left out unless include_test=true, archived runs unless include_archived=true. " +
			"A contradictory filter (created_after not before created_before, or a range over 400 days) answers 422 PF-FILTER; " +
			"an invalid value 422 PF-VALIDATION naming the parameter. The cursor is bound to every filter and the order.",
		Query: []api.Param{
			{Name: "status", Description: "run statuses, repeated or comma separated: running, waiting, suspended, succeeded, failed, cancelled, timed_out"},
			{Name: "paused", Type: "boolean", Description: "true: paused runs only; false: runs not paused"},
			{Name: "activation_id", Description: "runs of this activation"},
			{Name: "workflow", Description: "runs of this workflow: id, or id@version"},
			{Name: "correlation_key", Description: "exact correlation key"},
			{Name: "business_key", Description: "exact business key"},
			{Name: "created_after", Description: "RFC 3339 time with offset; runs created strictly after it"},
			{Name: "created_before", Description: "RFC 3339 time with offset; runs created strictly before it"},
			{Name: "include_test", Type: "boolean", Description: "include test runs (default false)"},
			{Name: "include_archived", Type: "boolean", Description: "include archived runs (default false; POST E/runs/{run}/archive)"},
		},
		Response: api.Page[RunSummary]{}})
	add(api.Route{Method: "GET", Path: base + "/{run}/steps", Capability: auth.CapRunRead, Handler: s.runSteps,
		OperationID: "listRunSteps", Tag: tagRuns, Summary: "List a run's step instances (runs.steps)",
		Description: "One item per step instance, in the order they started, derived from the accepted events' history records " +
			"and the run's current state for what is still active.",
		Query: stepLogLimit, Response: api.Page[Step]{}})
	add(api.Route{Method: "GET", Path: base + "/{run}/logs", Capability: auth.CapRunRead, Handler: s.runLogs,
		OperationID: "listRunLogs", Tag: tagRuns, Summary: "List a run's log lines (runs.logs)",
		Description: "History records and engine notes in the order they were written (id order). A follower polls with " +
			"after=<the last id it saw>: next_cursor is only set when the page is full. after and cursor together answer 422 PF-FILTER.",
		Query: slices.Concat(stepLogLimit, []api.Param{
			{Name: "after", Type: "integer", Description: "lines with an id greater than this (0 or more); instead of cursor"},
			{Name: "level", Description: "minimum level: info (default), warn or error"},
			{Name: "type", Description: "line types, repeated or comma separated"},
			{Name: "since", Description: "RFC 3339 time with offset; lines at or after it"},
			{Name: "until", Description: "RFC 3339 time with offset; lines strictly before it"},
		}),
		Response: api.Page[LogEntry]{}})
}

// listQuery reads the filters of a list request. The first error wins;
// later reads are skipped once one failed.
type listQuery struct {
	vals url.Values
	err  error
}

func newListQuery(c *api.Call) *listQuery { return &listQuery{vals: c.R.URL.Query()} }

// one answers the single value of name ("" when absent).
func (q *listQuery) one(name string) string {
	if q.err != nil {
		return ""
	}
	vs := q.vals[name]
	switch {
	case len(vs) == 0:
		return ""
	case len(vs) > 1:
		q.err = api.InvalidParameter(api.CodeValidation, name, "the %s query parameter may appear once", name)
		return ""
	case vs[0] == "":
		q.err = api.InvalidParameter(api.CodeValidation, name, "%s must not be empty", name)
		return ""
	}
	return vs[0]
}

// text answers a free-text filter of at most maxFilterLen characters.
func (q *listQuery) text(name string) string {
	v := q.one(name)
	if q.err == nil && len([]rune(v)) > maxFilterLen {
		q.err = api.InvalidParameter(api.CodeValidation, name, "%s has at most %d characters", name, maxFilterLen)
		return ""
	}
	return v
}

// list answers the values of a repeatable, comma-separated parameter,
// sorted and without duplicates; each must satisfy ok.
func (q *listQuery) list(name, want string, ok func(string) bool) []string {
	if q.err != nil {
		return nil
	}
	var out []string
	for _, v := range q.vals[name] {
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if !ok(item) {
				q.err = api.InvalidParameter(api.CodeValidation, name, "%q is not a valid %s; %s", item, name, want)
				return nil
			}
			out = append(out, item)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// flag answers a boolean parameter ("true" or "false", default false) and
// its normalized value for the cursor ("" when absent).
func (q *listQuery) flag(name string) (bool, string) {
	switch v := q.one(name); v {
	case "":
		return false, ""
	case "true", "false":
		return v == "true", v
	default:
		if q.err == nil {
			q.err = api.InvalidParameter(api.CodeValidation, name, "%s is true or false", name)
		}
		return false, ""
	}
}

// time answers an RFC 3339 time with offset (nil when absent). A '+' of
// an offset that arrives as a space (an unencoded query) is accepted.
func (q *listQuery) time(name string) *time.Time {
	v := q.one(name)
	if v == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t, err = time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "+", 1))
	}
	if err != nil {
		q.err = api.InvalidParameter(api.CodeValidation, name, "%s must be an RFC 3339 time with an offset, such as 2025-01-31T09:30:00Z", name)
		return nil
	}
	return &t
}

// span checks an explicit time range: from must be before to, and the
// range at most MaxListRange long (422 PF-FILTER naming both parameters).
// A single bound is open-ended and not checked.
func (q *listQuery) span(fromName string, from *time.Time, toName string, to *time.Time) {
	if q.err != nil || from == nil || to == nil {
		return
	}
	var msg string
	switch {
	case !from.Before(*to):
		msg = fmt.Sprintf("the time range is empty: %s must be before %s", fromName, toName)
	case to.Sub(*from) > MaxListRange:
		msg = fmt.Sprintf("the time range is longer than 400 days; narrow %s and %s", fromName, toName)
	default:
		return
	}
	q.err = filterError(msg, fromName, toName)
}

// filterError is 422 PF-FILTER: filters that contradict each other, with
// a diagnostic for each parameter involved.
func filterError(msg string, params ...string) error {
	e := &api.Error{Status: http.StatusUnprocessableEntity, Code: api.CodeFilter, Message: msg}
	for _, p := range params {
		e.Diagnostics = append(e.Diagnostics, api.Diagnostic{Code: "invalid", Parameter: p, Message: msg})
	}
	return e
}

// stamp is a time's normalized form for a cursor's filters.
func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// floorMs and ceilMs convert a time to the stored milliseconds, rounding
// down or up, so that comparisons with sub-millisecond bounds are exact.
func floorMs(t time.Time) int64 { return store.Millis(t) }

func ceilMs(t time.Time) int64 {
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return store.Millis(t) + 1
	}
	return store.Millis(t)
}

// limitedPage is Call.PageQuery with a limit of 1..max (default def)
// instead of the generic one: PageQuery, which applies the generic bound,
// sees the request without its limit.
func limitedPage(c *api.Call, collection string, filters map[string]string, def, max int) (api.PageQuery, error) {
	vals := c.R.URL.Query()
	n := def
	if vs, ok := vals["limit"]; ok {
		bad := api.InvalidParameter(api.CodeValidation, "limit", "limit must be a whole number from 1 to %d", max)
		if len(vs) != 1 {
			return api.PageQuery{}, api.InvalidParameter(api.CodeValidation, "limit", "the limit query parameter may appear once")
		}
		raw := vs[0]
		if raw == "" || len(raw) > 4 || strings.TrimLeft(raw, "0123456789") != "" {
			return api.PageQuery{}, bad
		}
		var err error
		if n, err = strconv.Atoi(raw); err != nil || n < 1 || n > max {
			return api.PageQuery{}, bad
		}
		orig := c.R
		vals.Del("limit")
		r := orig.WithContext(orig.Context())
		u := *orig.URL
		u.RawQuery = vals.Encode()
		r.URL = &u
		c.R = r
		defer func() { c.R = orig }()
	}
	q, err := c.PageQuery(collection, filters)
	q.Limit = n
	return q, err
}

// stepFacts builds a run's step instances from its history records (fed
// in seq order) and its state.
type stepFacts struct {
	kinds map[string]string // node id to step kind
	steps []*stepFact
	byKey map[stepKey]*stepFact
}

type stepKey struct {
	node string
	gen  int
}

// stepFact is a Step with its position (started seq, index of the
// step_started record in its event) and where its last error came from.
type stepFact struct {
	Step
	pos      stepPos
	errSeq   int64
	timedOut bool
}

// stepPos orders steps: by the event that started them, then by the
// record's index in that event.
type stepPos struct{ seq, idx int64 }

func (p stepPos) String() string { return fmt.Sprintf("%d.%d", p.seq, p.idx) }

func parseStepPos(s string) (stepPos, bool) {
	a, b, ok := strings.Cut(s, ".")
	seq, err1 := strconv.ParseInt(a, 10, 64)
	idx, err2 := strconv.ParseInt(b, 10, 64)
	return stepPos{seq, idx}, ok && err1 == nil && err2 == nil
}

func (p stepPos) after(q stepPos) bool { return p.seq > q.seq || (p.seq == q.seq && p.idx > q.idx) }

func newStepFacts(kinds map[string]string) *stepFacts {
	return &stepFacts{kinds: kinds, byKey: map[stepKey]*stepFact{}}
}

// event adds the records of one accepted event; failure is the error of a
// task_failed event (nil otherwise) and failedTask its task.
func (f *stepFacts) event(records []kernel.Record, failedTask string, failure *kernel.TaskError) {
	for i := range records {
		r := &records[i]
		if r.Type == kernel.RecordStepStarted {
			st := &stepFact{Step: Step{NodeID: r.NodeID, Instance: r.Instance, Generation: r.Generation, Kind: f.kinds[r.NodeID],
				Status: "running", StartedAt: r.ObservedAt, StartedSeq: r.Seq}, pos: stepPos{r.Seq, int64(i)}}
			f.steps = append(f.steps, st)
			f.byKey[stepKey{r.NodeID, r.Generation}] = st
			continue
		}
		st := f.byKey[stepKey{r.NodeID, r.Generation}]
		if st == nil {
			continue
		}
		switch r.Type {
		case kernel.RecordStepCompleted:
			st.Status, st.EndedAt, st.EndedSeq = "completed", timePtr(r.ObservedAt), r.Seq
		case kernel.RecordTimedOut:
			st.timedOut = true
		case kernel.RecordTaskRetryScheduled:
			st.Attempts = max(st.Attempts, r.Attempt+1)
			if failure != nil && failedTask == r.TaskID {
				st.setError(failure, r.Seq)
			}
		}
	}
}

func (st *stepFact) setError(e *kernel.TaskError, seq int64) {
	if e != nil && seq >= st.errSeq {
		c := *e
		st.LastError, st.errSeq = &c, seq
	}
}

func timePtr(t time.Time) *time.Time { return &t }

// finish settles what the records leave open from the run's state: active
// steps, attempts, errors from incidents and tasks, and how the steps the
// end of the run interrupted ended. It answers the steps in start order.
func (f *stepFacts) finish(st *kernel.State) []*stepFact {
	for _, inc := range st.Incidents {
		if s := f.byKey[stepKey{inc.NodeID, inc.Generation}]; s != nil {
			s.Attempts = max(s.Attempts, inc.Attempt)
			s.setError(inc.Error, inc.OpenedSeq)
		}
	}
	for _, t := range st.Tasks {
		if s := f.byKey[stepKey{t.Node, t.Generation}]; s != nil {
			s.Attempts = max(s.Attempts, t.Attempt)
			s.setError(t.LastError, st.Seq)
		}
	}
	for _, tok := range st.Tokens {
		if tok.Phase == kernel.PhaseEnter {
			continue // moved on to a node it has not entered yet
		}
		s := f.byKey[stepKey{tok.Node, tok.Generation}]
		if s == nil || s.EndedAt != nil {
			continue
		}
		s.Status, s.WaitingFor, s.Deadline = activeStatus(st, tok), string(tok.Wait), tok.Deadline
		if t := st.Timers[tok.TimerID]; t != nil && s.Deadline == nil {
			s.Deadline = timePtr(t.Due)
		}
	}
	ended := st.Status.Terminal()
	blamed := false
	for i := len(f.steps) - 1; i >= 0; i-- {
		s := f.steps[i]
		if s.Kind == "action" || s.Kind == "agent" {
			s.Attempts = max(s.Attempts, 1)
		}
		if ended && s.EndedAt == nil {
			s.EndedAt, s.EndedSeq = timePtr(st.Now), st.Seq
			e := st.Error
			switch {
			case !blamed && e != nil && e.Node == s.NodeID && e.Instance == s.Instance:
				// The latest instance the run's error names ended the run.
				blamed = true
				s.Status = "failed"
				if st.Status == kernel.StatusTimedOut {
					s.Status = "timed_out"
				}
				if s.LastError == nil {
					s.LastError = &kernel.TaskError{Code: e.Code, Message: e.Message}
				}
			case s.timedOut:
				s.Status = "timed_out"
			case s.Kind == "succeed" && st.Status == kernel.StatusSucceeded:
				s.Status = "completed"
			default:
				s.Status = "cancelled"
			}
		}
	}
	return f.steps
}

// activeStatus is the status of the step instance of an active token.
func activeStatus(st *kernel.State, tok *kernel.Token) string {
	switch tok.Wait {
	case kernel.WaitTimer, kernel.WaitSignal, kernel.WaitHuman:
		return "waiting"
	case kernel.WaitIncident:
		return "suspended"
	case kernel.WaitTask:
		if t := st.Tasks[tok.TaskID]; t != nil {
			switch t.Status {
			case kernel.TaskBackoff:
				return "retrying"
			case kernel.TaskIncident:
				return "suspended"
			}
		}
	}
	return "running"
}
