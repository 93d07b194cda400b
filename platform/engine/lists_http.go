package engine

import (
	"fmt"
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
	e := &api.Error{Code: api.CodeFilter, Message: msg}
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

// listRuns serves GET E/runs (run_summaries.list): newest first.
func (s *Service) listRuns(c *api.Call) error {
	lq := newListQuery(c)
	statuses := lq.list("status", "statuses are running, waiting, suspended, succeeded, failed, cancelled and timed_out",
		func(v string) bool { return slices.Contains(runStatuses, kernel.Status(v)) })
	paused, pausedV := lq.flag("paused")
	activation := lq.one("activation_id")
	if activation != "" && !auth.IsCanonicalUUID(activation) && lq.err == nil {
		lq.err = api.InvalidParameter(api.CodeValidation, "activation_id", "activation_id must be a canonical lowercase UUID")
	}
	workflow := lq.text("workflow")
	wfID, wfVersion, ok := parseWorkflowFilter(workflow)
	if !ok && lq.err == nil {
		lq.err = api.InvalidParameter(api.CodeValidation, "workflow", "workflow is a workflow id, or id@version with a positive version")
	}
	corr, biz := lq.text("correlation_key"), lq.text("business_key")
	after, before := lq.time("created_after"), lq.time("created_before")
	lq.span("created_after", after, "created_before", before)
	includeTest, _ := lq.flag("include_test")
	includeArchived, _ := lq.flag("include_archived")
	if lq.err != nil {
		return lq.err
	}
	q, err := c.PageQuery("run-summaries", map[string]string{"order": "created_at desc, id desc",
		"status": strings.Join(statuses, ","), "paused": pausedV, "activation_id": activation, "workflow": workflow,
		"correlation_key": corr, "business_key": biz, "created_after": stamp(after), "created_before": stamp(before),
		"include_test": strconv.FormatBool(includeTest), "include_archived": strconv.FormatBool(includeArchived)})
	if err != nil {
		return err
	}
	f := RunFilter{Scope: c.PathScope(), Statuses: statuses, ActivationID: activation, WorkflowID: wfID, WorkflowVersion: wfVersion,
		CorrelationKey: corr, BusinessKey: biz, CreatedAfter: after, CreatedBefore: before, IncludeTest: includeTest, IncludeArchived: includeArchived,
		After: q.After, Limit: q.Fetch()}
	if pausedV != "" {
		f.Paused = &paused
	}
	items, err := s.ListRuns(c.Context(), f)
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(r RunSummary) string { return fmt.Sprintf("%d/%s", store.Millis(r.CreatedAt), r.ID) })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// parseWorkflowFilter splits "id" or "id@version" ("" is no filter).
func parseWorkflowFilter(v string) (id string, version int, ok bool) {
	if v == "" {
		return "", 0, true
	}
	id, ver, found := strings.Cut(v, "@")
	if id == "" || strings.TrimSpace(id) != id {
		return "", 0, false
	}
	if !found {
		return id, 0, true
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 || strconv.Itoa(n) != ver {
		return "", 0, false
	}
	return id, n, true
}

// runSteps serves GET E/runs/{run}/steps (runs.steps).
func (s *Service) runSteps(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	q, err := limitedPage(c, "run-steps", map[string]string{"run": id, "order": "started"}, DefaultStepLogLimit, MaxStepLogLimit)
	if err != nil {
		return err
	}
	steps, err := s.RunSteps(c.Context(), StepQuery{Scope: c.PathScope(), RunID: id, After: q.After, Limit: q.Fetch()})
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, steps, func(st PositionedStep) string { return st.Position })
	if err != nil {
		return err
	}
	out := api.Page[Step]{Items: make([]Step, len(page.Items)), NextCursor: page.NextCursor}
	for i, st := range page.Items {
		out.Items[i] = st.Step
	}
	return c.OK(out)
}

// runLogs serves GET E/runs/{run}/logs (runs.logs): lines in id order.
func (s *Service) runLogs(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	lq := newListQuery(c)
	level := lq.one("level")
	if level == "" {
		level = logLevels[0]
	}
	if !slices.Contains(logLevels, level) && lq.err == nil {
		lq.err = api.InvalidParameter(api.CodeValidation, "level", "level is info, warn or error")
	}
	types := lq.list("type", "a type is 1 to 200 characters", func(v string) bool { return v != "" && len([]rune(v)) <= maxFilterLen })
	since, until := lq.time("since"), lq.time("until")
	lq.span("since", since, "until", until)
	afterRaw := lq.one("after")
	var after int64
	if afterRaw != "" && lq.err == nil {
		if after, err = strconv.ParseInt(afterRaw, 10, 64); err != nil || after < 0 || strings.TrimLeft(afterRaw, "0123456789") != "" {
			lq.err = api.InvalidParameter(api.CodeValidation, "after", "after is a log line id, a whole number from 0")
		}
	}
	if lq.err != nil {
		return lq.err
	}
	if _, ok := c.R.URL.Query()["cursor"]; ok && afterRaw != "" {
		return filterError("after and cursor are alternatives; send one of them", "after", "cursor")
	}
	q, err := limitedPage(c, "run-logs", map[string]string{"run": id, "order": "id", "level": level,
		"type": strings.Join(types, ","), "since": stamp(since), "until": stamp(until)}, DefaultStepLogLimit, MaxStepLogLimit)
	if err != nil {
		return err
	}
	if q.After != "" {
		if after, err = strconv.ParseInt(q.After, 10, 64); err != nil {
			return badCursor()
		}
	}
	items, err := s.RunLogs(c.Context(), LogQuery{Scope: c.PathScope(), RunID: id, MinLevel: level, Types: types, Since: since, Until: until,
		After: after, Limit: q.Fetch()})
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(l LogEntry) string { return strconv.FormatInt(l.ID, 10) })
	if err != nil {
		return err
	}
	return c.OK(page)
}
