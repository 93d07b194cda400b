package platform_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

// dbExec runs a statement through the daemon's writer.
func (h *harness) dbExec(query string, args ...any) {
	h.t.Helper()
	if err := h.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(query, args...)
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
}

// listPage is a page of any list.
type listPage[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// listGet reads one page of path with the query q.
func listGet[T any](h *harness, tok, path string, q url.Values) listPage[T] {
	h.t.Helper()
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p listPage[T]
	h.must(200, h.get(path, tok), &p)
	return p
}

// listAll follows next_cursor from the first page of path with q.
func listAll[T any](h *harness, tok, path string, q url.Values) []T {
	h.t.Helper()
	var out []T
	q = cloneValues(q)
	for range 1000 {
		p := listGet[T](h, tok, path, q)
		out = append(out, p.Items...)
		if p.NextCursor == nil {
			return out
		}
		q.Set("cursor", *p.NextCursor)
	}
	h.t.Fatal("too many pages")
	return nil
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// qs builds a query from name, value pairs (a name may repeat).
func qs(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return q
}

// mapped applies f to every item (nil for none).
func mapped[T any](items []T, f func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, f(it))
	}
	return out
}

func summaryIDs(items []engine.RunSummary) []string {
	return mapped(items, func(r engine.RunSummary) string { return r.ID })
}

// listProblem asserts a 422 with code naming the query parameter.
func listProblem(h *harness, tok, path string, q url.Values, code, param string) {
	h.t.Helper()
	p := h.problem(422, code, h.get(path+"?"+q.Encode(), tok))
	for _, d := range p.Diagnostics {
		if d.Parameter == param {
			return
		}
	}
	h.t.Fatalf("%s?%s: no diagnostic for %s: %+v", path, q.Encode(), param, p)
}

// badQuery is a refused query: the problem code and the parameter named.
type badQuery struct {
	q           url.Values
	code, param string
}

func listProblems(h *harness, tok, path string, cases []badQuery) {
	h.t.Helper()
	for _, c := range cases {
		listProblem(h, tok, path, c.q, c.code, c.param)
	}
}

// flowHarness is a harness with the flow workflow activated: the
// operator's token and the activation id.
func flowHarness(t *testing.T) (*is.I, *harness, string, string) {
	h := newHarness(t)
	op := h.localToken()
	return is.New(t), h, op, setupFlow(h)
}

func TestRunListFilters(t *testing.T) {
	t.Parallel()
	is, h, op, act := flowHarness(t)
	E := ePath(h)
	start := func(key string, input map[string]any, extra ...string) string {
		body := map[string]any{"activation_id": act, "input": input}
		for i := 0; i+1 < len(extra); i += 2 {
			body[extra[i]] = extra[i+1]
		}
		return h.mustStartRun(op, body, key).ID
	}
	r1 := start("l1", map[string]any{"name": "Ada"}, "business_key", "b-1", "correlation_key", "c-1")
	r2 := start("l2", map[string]any{"name": "Ada", "mode": "fail"})
	r3 := start("l3", map[string]any{"name": "Ada", "mode": "wait", "pause": "1h"})
	r4 := start("l4", map[string]any{"name": "Bob"}, "business_key", "b-4")
	r5 := start("l5", map[string]any{"name": "Tess"})
	h.waitRun(op, r1, "succeeded")
	h.waitRun(op, r2, "failed")
	h.waitRun(op, r3, "waiting")
	h.waitRun(op, r4, "succeeded")
	h.waitRun(op, r5, "succeeded")

	// Fixed creation times, one minute apart; r5 is a test run.
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	for i, id := range []string{r1, r2, r3, r4, r5} {
		h.dbExec(`UPDATE platform_runs SET created_at = ? WHERE id = ?`, at(i+1).UnixMilli(), id)
	}
	h.dbExec(`UPDATE platform_runs SET test = 1 WHERE id = ?`, r5)

	runs := E + "/runs"
	ids := func(q url.Values) []string { return summaryIDs(listAll[engine.RunSummary](h, op, runs, q)) }
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }

	// Newest first; test runs only on request; include_archived changes nothing yet.
	is.Equal(ids(nil), []string{r4, r3, r2, r1})
	is.Equal(ids(qs("include_test", "true")), []string{r5, r4, r3, r2, r1})
	is.Equal(ids(qs("include_test", "false")), []string{r4, r3, r2, r1})
	is.Equal(ids(qs("include_archived", "true")), []string{r4, r3, r2, r1})

	// The summary.
	all := listGet[engine.RunSummary](h, op, runs, qs("include_test", "true")).Items
	first, waiting, test := all[4], all[2], all[0]
	is.Equal(first.ActivationID, act)
	is.Equal(first.Workflow, "acme/flow@1")
	is.Equal(first.Status, "succeeded")
	is.Equal(*first.BusinessKey, "b-1")
	is.Equal(*first.CorrelationKey, "c-1")
	is.Equal(first.CreatedAt, at(1))
	is.True(first.EndedAt != nil && first.EndedAt.Equal(first.UpdatedAt))
	is.True(!first.Paused && !first.Test && first.ParentRunID == nil && first.CallerRunID == nil)
	is.Equal(waiting.Status, "waiting")
	is.Equal(waiting.EndedAt, nil)
	is.True(test.Test)
	raw := string(h.get(runs+"?limit=1", op).body)
	for _, f := range []string{`"activation_id"`, `"workflow"`, `"paused":false`, `"test":false`, `"parent_run_id":null`,
		`"caller_run_id":null`, `"created_at":"2025-03-01T12:04:00Z"`, `"updated_at"`, `"ended_at"`, `"next_cursor":"`} {
		is.True(strings.Contains(raw, f)) // a field of the summary
	}

	// Filters.
	for _, c := range []struct {
		q    url.Values
		want []string
	}{
		{qs("status", "succeeded"), []string{r4, r1}},
		{qs("status", "failed,waiting"), []string{r3, r2}},
		{qs("status", "succeeded", "status", "failed"), []string{r4, r2, r1}},
		{qs("status", "succeeded", "include_test", "true"), []string{r5, r4, r1}},
		{qs("status", "cancelled"), nil},
		{qs("paused", "false"), []string{r4, r3, r2, r1}},
		{qs("paused", "true"), nil},
		{qs("activation_id", act), []string{r4, r3, r2, r1}},
		{qs("activation_id", "0190a0b0-0000-7000-8000-00000000dead"), nil},
		{qs("workflow", "acme/flow"), []string{r4, r3, r2, r1}},
		{qs("workflow", "acme/flow@1"), []string{r4, r3, r2, r1}},
		{qs("workflow", "acme/flow@2"), nil},
		{qs("workflow", "acme/other"), nil},
		{qs("business_key", "b-1"), []string{r1}},
		{qs("business_key", "b-4"), []string{r4}},
		{qs("correlation_key", "c-1"), []string{r1}},
		{qs("correlation_key", "c-4"), nil},
		{qs("created_after", rfc(at(2))), []string{r4, r3}},
		{qs("created_after", rfc(at(2).Add(-time.Millisecond))), []string{r4, r3, r2}},
		{qs("created_before", rfc(at(3))), []string{r2, r1}},
		{qs("created_before", rfc(at(3).Add(time.Nanosecond))), []string{r3, r2, r1}},
		{qs("created_after", rfc(at(1)), "created_before", rfc(at(4))), []string{r3, r2}},
		{qs("created_after", at(1).In(time.FixedZone("", 2*3600)).Format(time.RFC3339), "created_before", rfc(at(4))), []string{r3, r2}},
		{qs("created_after", rfc(at(4).Add(-400*24*time.Hour)), "created_before", rfc(at(4))), []string{r3, r2, r1}},
		{qs("created_after", rfc(at(1).Add(-time.Millisecond)), "created_before", rfc(at(1).Add(time.Millisecond))), []string{r1}},
	} {
		is.Equal(ids(c.q), c.want) // filter c.q
	}
	// An unencoded '+' of an offset arrives as a space and is still understood.
	var spaced listPage[engine.RunSummary]
	h.must(200, h.get(runs+"?created_after=2025-03-01T14:03:00+02:00", op), &spaced)
	is.Equal(summaryIDs(spaced.Items), []string{r4})

	// Invalid values name their parameter; contradictory ones answer PF-FILTER.
	listProblems(h, op, runs, []badQuery{
		{qs("status", "bogus"), "PF-VALIDATION", "status"},
		{qs("status", "succeeded,"), "PF-VALIDATION", "status"},
		{qs("status", "paused"), "PF-VALIDATION", "status"},
		{qs("paused", "yes"), "PF-VALIDATION", "paused"},
		{qs("include_test", "1"), "PF-VALIDATION", "include_test"},
		{qs("include_test", "true", "include_test", "true"), "PF-VALIDATION", "include_test"},
		{qs("include_archived", "maybe"), "PF-VALIDATION", "include_archived"},
		{qs("activation_id", "nope"), "PF-VALIDATION", "activation_id"},
		{qs("workflow", "acme/flow@x"), "PF-VALIDATION", "workflow"},
		{qs("workflow", "acme/flow@01"), "PF-VALIDATION", "workflow"},
		{qs("workflow", "@1"), "PF-VALIDATION", "workflow"},
		{qs("business_key", strings.Repeat("k", 201)), "PF-VALIDATION", "business_key"},
		{qs("correlation_key", ""), "PF-VALIDATION", "correlation_key"},
		{qs("created_after", "2025-03-01"), "PF-VALIDATION", "created_after"},
		{qs("created_after", "2025-03-01T12:00:00"), "PF-VALIDATION", "created_after"},
		{qs("created_before", "yesterday"), "PF-VALIDATION", "created_before"},
		{qs("created_after", rfc(at(2)), "created_before", rfc(at(2))), "PF-FILTER", "created_after"},
		{qs("created_after", rfc(at(3)), "created_before", rfc(at(2))), "PF-FILTER", "created_before"},
		{qs("created_after", rfc(at(4).Add(-401*24*time.Hour)), "created_before", rfc(at(4))), "PF-FILTER", "created_before"},
		{qs("created_after", rfc(at(4).Add(-400*24*time.Hour-time.Millisecond)), "created_before", rfc(at(4))), "PF-FILTER", "created_after"},
		{qs("limit", "0"), "PF-VALIDATION", "limit"},
		{qs("limit", "101"), "PF-VALIDATION", "limit"},
		{qs("order", "asc"), "PF-VALIDATION", "order"},
	})

	// Limits and paging.
	is.Equal(len(listGet[engine.RunSummary](h, op, runs, qs("limit", "100")).Items), 4)
	one := listGet[engine.RunSummary](h, op, runs, qs("limit", "1"))
	is.Equal(summaryIDs(one.Items), []string{r4})
	is.True(one.NextCursor != nil)
	is.Equal(ids(qs("limit", "1")), []string{r4, r3, r2, r1})
	is.Equal(ids(qs("limit", "2", "include_test", "true")), []string{r5, r4, r3, r2, r1})
	is.Equal(ids(qs("limit", "1", "status", "succeeded,failed")), []string{r4, r2, r1})
	two := listGet[engine.RunSummary](h, op, runs, qs("limit", "2"))
	last := listGet[engine.RunSummary](h, op, runs, qs("limit", "2", "cursor", *two.NextCursor))
	is.Equal(summaryIDs(last.Items), []string{r2, r1})
	is.Equal(last.NextCursor, nil)
	// A cursor is bound to every filter.
	for _, q := range []url.Values{qs("status", "succeeded"), qs("include_test", "true"), qs("workflow", "acme/flow"),
		qs("created_before", rfc(at(9)))} {
		q.Set("cursor", *two.NextCursor)
		listProblem(h, op, runs, q, "PF-VALIDATION", "cursor")
	}
	// ... but the limit may change between pages, and false is the default of include_test.
	is.Equal(summaryIDs(listGet[engine.RunSummary](h, op, runs, qs("limit", "5", "include_test", "false", "cursor", *two.NextCursor)).Items), []string{r2, r1})
	listProblem(h, op, runs+"/"+r1+"/logs", qs("cursor", *two.NextCursor), "PF-VALIDATION", "cursor")

	// Access: 401, 403 and 404 as other routes; a viewer reads the list.
	h.problem(401, "PF-UNAUTHENTICATED", h.get(runs, ""))
	_, viewer := h.user("lena", "viewer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID})
	is.Equal(len(listGet[engine.RunSummary](h, viewer, runs, nil).Items), 4)
	other := h.environment(h.ws.ProjectID, "staging")
	otherRuns := h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID) + "/runs"
	h.problem(403, "PF-FORBIDDEN", h.get(otherRuns, viewer))
	is.Equal(len(listGet[engine.RunSummary](h, op, otherRuns, nil).Items), 0)
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(h.ws.TenantID, h.ws.ProjectID, "0190a0b0-0000-7000-8000-00000000dead")+"/runs", op))
}

// stepSummary is "node:status" for each step.
func stepSummary(steps []engine.Step) []string {
	return mapped(steps, func(s engine.Step) string { return s.NodeID + ":" + s.Status })
}

func TestRunStepsList(t *testing.T) {
	t.Parallel()
	is, h, op, act := flowHarness(t)
	E := ePath(h)
	start := func(key string, input map[string]any) string {
		return h.mustStartRun(op, map[string]any{"activation_id": act, "input": input}, key).ID
	}
	ok := start("s-ok", map[string]any{"name": "Ada"})
	failed := start("s-fail", map[string]any{"name": "Ada", "mode": "fail"})
	waiting := start("s-wait", map[string]any{"name": "Ada", "mode": "wait", "pause": "1h"})
	cancelled := start("s-cancel", map[string]any{"name": "Ada", "mode": "wait", "pause": "1h"})
	h.waitRun(op, ok, "succeeded")
	h.waitRun(op, failed, "failed")
	h.waitRun(op, waiting, "waiting")
	h.waitRun(op, cancelled, "waiting")
	h.must(200, h.cancelRun(op, cancelled, map[string]string{"reason": "no longer needed"}), nil)
	steps := func(id string, q url.Values) []engine.Step {
		return listAll[engine.Step](h, op, E+"/runs/"+id+"/steps", q)
	}

	// A completed run: every step in the order it started.
	done := steps(ok, nil)
	is.Equal(stepSummary(done), []string{"greet:completed", "nothing:completed", "bump:completed", "route:completed", "done:completed"})
	kinds := map[string]string{}
	for i, s := range done {
		kinds[s.NodeID] = s.Kind
		is.Equal(s.Instance, s.NodeID)
		is.Equal(s.Generation, 1)
		is.True(s.EndedAt != nil && !s.EndedAt.Before(s.StartedAt))
		is.True(s.EndedSeq >= s.StartedSeq)
		is.Equal(s.LastError, nil)
		if i > 0 {
			is.True(s.StartedSeq >= done[i-1].StartedSeq && !s.StartedAt.Before(done[i-1].StartedAt))
		}
	}
	is.Equal(kinds, map[string]string{"greet": "action", "nothing": "action", "bump": "set", "route": "switch", "done": "succeed"})
	is.Equal(done[0].Attempts, 1)
	is.Equal(done[2].Attempts, 0)
	is.Equal(done[0].StartedSeq, int64(1))

	// A failed run: the fail step failed with the run's error.
	f := steps(failed, nil)
	is.Equal(stepSummary(f), []string{"greet:completed", "nothing:completed", "bump:completed", "route:completed", "broken:failed"})
	is.Equal(f[4].LastError.Code, "ASKED_TO_FAIL")
	is.Equal(f[4].LastError.Message, "failing on purpose")
	is.True(f[4].EndedAt != nil)

	// A waiting run: the wait step waits for its timer.
	w := steps(waiting, nil)
	is.Equal(stepSummary(w), []string{"greet:completed", "nothing:completed", "bump:completed", "route:completed", "pause:waiting"})
	is.Equal(w[4].Kind, "wait")
	is.Equal(w[4].WaitingFor, "timer")
	is.True(w[4].Deadline != nil && w[4].Deadline.Sub(w[4].StartedAt) == time.Hour)
	is.Equal(w[4].EndedAt, nil)

	// A cancelled run: the step the cancellation interrupted.
	c := steps(cancelled, nil)
	is.Equal(stepSummary(c)[4], "pause:cancelled")
	is.True(c[4].EndedAt != nil && c[4].WaitingFor == "")

	// Paging: any limit gives the same list.
	path := E + "/runs/" + ok + "/steps"
	for _, l := range []string{"1", "2", "500"} {
		is.Equal(steps(ok, qs("limit", l)), done)
	}
	p1 := listGet[engine.Step](h, op, path, qs("limit", "1"))
	is.Equal(len(p1.Items), 1)
	is.True(p1.NextCursor != nil)
	full := listGet[engine.Step](h, op, path, qs("limit", "5"))
	is.Equal(len(full.Items), 5)
	is.Equal(full.NextCursor, nil)
	listProblems(h, op, path, []badQuery{
		{qs("limit", "0"), "PF-VALIDATION", "limit"},
		{qs("limit", "501"), "PF-VALIDATION", "limit"},
		{qs("limit", "-1"), "PF-VALIDATION", "limit"},
		{qs("limit", "1", "limit", "2"), "PF-VALIDATION", "limit"},
		{qs("cursor", "forged"), "PF-VALIDATION", "cursor"},
		{qs("status", "completed"), "PF-VALIDATION", "status"},
	})
	// A cursor of another run's steps is refused.
	listProblem(h, op, E+"/runs/"+failed+"/steps", qs("cursor", *p1.NextCursor), "PF-VALIDATION", "cursor")

	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/0190a0b0-0000-7000-8000-00000000dead/steps", op))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/nope/steps", op))
	h.problem(401, "PF-UNAUTHENTICATED", h.get(path, ""))
	other := h.environment(h.ws.ProjectID, "staging")
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)+"/runs/"+ok+"/steps", op))
}

// fanoutWorkflow greets every name in a forEach, then runs a parallel
// whose second branch fails while the first waits.
const fanoutWorkflow = `kind: workflow
id: acme/fanout
version: 1
input:
  type: object
  properties:
    names: {type: array, items: {type: string}}
steps:
  - id: each
    forEach: =input.names
    as: who
    steps:
      - id: hello
        action: acme/greet@1
        with:
          name: =who
  - id: both
    parallel:
      - name: slow
        steps:
          - id: nap
            wait: 1h
      - name: fast
        steps:
          - id: quit
            fail:
              code: STOP
              message: stopping the other branch
`

func TestRunStepsListLoopsAndBranches(t *testing.T) {
	t.Parallel()
	is, h, op, _ := flowHarness(t)
	wf := h.mustPublish(op, "workflows", fanoutWorkflow, "fanout-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "fanout-activation", "").ID
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"names": []string{"Ada", "Bob"}}}, "fanout").ID
	h.waitRun(op, run, "failed")
	steps := listAll[engine.Step](h, op, ePath(h)+"/runs/"+run+"/steps", nil)
	got := mapped(steps, func(s engine.Step) string {
		return fmt.Sprintf("%s/%s#%d:%s:%s", s.NodeID, s.Instance, s.Generation, s.Kind, s.Status)
	})
	is.Equal(got, []string{
		"each/each#1:forEach:completed",
		"hello/hello[0]#1:action:completed",
		"hello/hello[1]#2:action:completed",
		"both/both#1:parallel:cancelled",
		"nap/nap#1:wait:cancelled",
		"quit/quit#1:fail:failed",
	})
	is.Equal(steps[5].LastError.Code, "STOP")
	is.Equal(len(listAll[engine.Step](h, op, ePath(h)+"/runs/"+run+"/steps", qs("limit", "1"))), 6)
}

// logTypes lists the types of log lines.
func logTypes(lines []engine.LogEntry) []string {
	return mapped(lines, func(l engine.LogEntry) string { return l.Type })
}

func TestRunLogsList(t *testing.T) {
	t.Parallel()
	is, h, op, act := flowHarness(t)
	E := ePath(h)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}}, "log-ok").ID
	h.waitRun(op, run, "succeeded")
	path := E + "/runs/" + run + "/logs"
	logs := func(q url.Values) []engine.LogEntry { return listAll[engine.LogEntry](h, op, path, q) }

	// Step starts and completions, then the run's end, in id order.
	all := logs(nil)
	types := logTypes(all)
	is.Equal(types[0], "step_started")
	is.Equal(types[len(types)-1], "run_succeeded")
	count := map[string]int{}
	for i, l := range all {
		count[l.Type]++
		is.Equal(l.Level, "info")
		is.True(l.Message != "")
		if i > 0 {
			is.True(l.ID > all[i-1].ID)
			is.True(!l.At.Before(all[i-1].At))
		}
	}
	is.Equal(count["step_started"], 5)
	is.Equal(count["step_completed"], 4)
	is.Equal(count["run_succeeded"], 1)
	is.Equal(*all[0].NodeID, "greet")
	is.Equal(*all[0].Seq, int64(1))
	is.True(strings.Contains(string(all[0].Data), `"type":"step_started"`))
	is.Equal(all[len(all)-1].NodeID, nil)

	// Filters: type (repeatable), minimum level, since and until.
	is.Equal(logTypes(logs(qs("type", "run_succeeded"))), []string{"run_succeeded"})
	is.Equal(len(logs(qs("type", "step_started,run_succeeded"))), 6)
	is.Equal(len(logs(qs("type", "step_started", "type", "step_completed"))), 9)
	is.Equal(len(logs(qs("level", "info"))), len(all))
	is.Equal(len(logs(qs("level", "warn"))), 0)
	h.dbExec(`INSERT INTO platform_run_logs(run_key, at, level, type, message) VALUES ((SELECT run_key FROM platform_runs WHERE id = ?1), ?2, 'error', 'test_note', 'an error'),
		((SELECT run_key FROM platform_runs WHERE id = ?1), ?2, 'warn', 'test_note', 'a warning')`, run, all[len(all)-1].At.UnixMilli())
	is.Equal(len(logs(qs("level", "warn"))), 2)
	errs := logs(qs("level", "error"))
	is.Equal(len(errs), 1)
	is.Equal(errs[0].Message, "an error")
	is.Equal(string(errs[0].Data), "null")
	is.Equal(errs[0].Seq, nil)
	all = logs(nil)
	firstAt, lastAt := all[0].At, all[len(all)-1].At
	is.Equal(len(logs(qs("since", firstAt.Format(time.RFC3339Nano)))), len(all))
	is.Equal(len(logs(qs("since", lastAt.Add(time.Millisecond).Format(time.RFC3339Nano)))), 0)
	is.Equal(len(logs(qs("until", firstAt.Format(time.RFC3339Nano)))), 0)
	is.Equal(len(logs(qs("since", firstAt.Format(time.RFC3339Nano), "until", lastAt.Add(time.Millisecond).Format(time.RFC3339Nano)))), len(all))
	exact := lastAt.Add(time.Millisecond) // a range of exactly 400 days is accepted
	is.Equal(len(logs(qs("since", exact.Add(-400*24*time.Hour).Format(time.RFC3339Nano), "until", exact.Format(time.RFC3339Nano)))), len(all))

	// after resumes behind a line; a short last page has no cursor.
	mid := all[2].ID
	rest := logs(qs("after", strconv.FormatInt(mid, 10)))
	is.Equal(len(rest), len(all)-3)
	is.Equal(rest[0].ID, all[3].ID)
	is.Equal(len(logs(qs("after", "0"))), len(all))
	tail := listGet[engine.LogEntry](h, op, path, qs("after", strconv.FormatInt(all[len(all)-1].ID, 10)))
	is.Equal(len(tail.Items), 0)
	is.Equal(tail.NextCursor, nil)
	page := listGet[engine.LogEntry](h, op, path, qs("after", strconv.FormatInt(mid, 10), "limit", "2"))
	is.Equal(len(page.Items), 2)
	is.True(page.NextCursor != nil)
	next := listGet[engine.LogEntry](h, op, path, qs("limit", "2", "cursor", *page.NextCursor))
	is.Equal(next.Items[0].ID, all[5].ID)

	// Paging and limits.
	for _, l := range []string{"1", "3", "500"} {
		is.Equal(logs(qs("limit", l)), all)
	}
	is.Equal(len(listGet[engine.LogEntry](h, op, path, qs("limit", "500")).Items), len(all))
	listProblems(h, op, path, []badQuery{
		{qs("limit", "0"), "PF-VALIDATION", "limit"},
		{qs("limit", "501"), "PF-VALIDATION", "limit"},
		{qs("limit", "1e2"), "PF-VALIDATION", "limit"},
		{qs("after", "-1"), "PF-VALIDATION", "after"},
		{qs("after", "x"), "PF-VALIDATION", "after"},
		{qs("after", "+1"), "PF-VALIDATION", "after"},
		{qs("level", "debug"), "PF-VALIDATION", "level"},
		{qs("type", ""), "PF-VALIDATION", "type"},
		{qs("since", "2025-13-01T00:00:00Z"), "PF-VALIDATION", "since"},
		{qs("until", "now"), "PF-VALIDATION", "until"},
		{qs("since", firstAt.Format(time.RFC3339Nano), "until", firstAt.Format(time.RFC3339Nano)), "PF-FILTER", "until"},
		{qs("since", firstAt.Add(-401*24*time.Hour).Format(time.RFC3339Nano), "until", firstAt.Format(time.RFC3339Nano)), "PF-FILTER", "since"},
		{qs("after", "1", "cursor", *page.NextCursor), "PF-FILTER", "after"},
		{qs("level", "warn", "cursor", *page.NextCursor), "PF-VALIDATION", "cursor"},
	})
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/0190a0b0-0000-7000-8000-00000000dead/logs", op))
	h.problem(401, "PF-UNAUTHENTICATED", h.get(path, ""))
	_, viewer := h.user("lou", "viewer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID})
	is.Equal(len(listGet[engine.LogEntry](h, viewer, path, nil).Items), len(all))

	// Following a run: poll with after= the last id seen until the run ends.
	wait := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada", "mode": "wait", "pause": "300ms"}}, "log-follow").ID
	h.waitRun(op, wait, "waiting")
	followPath := E + "/runs/" + wait + "/logs"
	var seen []engine.LogEntry
	var after int64
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) == 0 || seen[len(seen)-1].Type != "run_succeeded" {
		if time.Now().After(deadline) {
			t.Fatalf("no run_succeeded line: %v", logTypes(seen))
		}
		p := listGet[engine.LogEntry](h, op, followPath, qs("after", fmt.Sprint(after), "limit", "3"))
		seen = append(seen, p.Items...)
		if len(p.Items) > 0 {
			after = p.Items[len(p.Items)-1].ID
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	is.Equal(seen, listAll[engine.LogEntry](h, op, followPath, nil))
	is.True(slices.Contains(logTypes(seen), "wait_elapsed"))
}
