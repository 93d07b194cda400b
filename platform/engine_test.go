package platform_test

import (
	"encoding/json"
	"github.com/agentbridge/bridge/platform/platformtest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

// setupFlow publishes the run test definitions, activates the workflow in
// the bootstrapped environment and answers the activation id.
func setupFlow(h *harness) string {
	h.t.Helper()
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.GreetAction, "flow-greet")
	h.mustPublish(op, "actions", platformtest.NothingAction, "flow-nothing")
	wf := h.mustPublish(op, "workflows", platformtest.FlowWorkflow, "flow-workflow").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "flow-activation", "").ID
}

func (h *harness) startRun(tok string, body any, key string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return h.do(req{method: "POST", path: ePath(h) + "/runs", token: tok, hdr: hdr, body: body})
}

func (h *harness) mustStartRun(tok string, body any, key string) engine.Run {
	h.t.Helper()
	var r engine.Run
	h.must(201, h.startRun(tok, body, key), &r)
	return r
}

// waitRun polls a run until it has status (30 s at most: generous for a
// loaded CI machine running -race, free when the run gets there).
func (h *harness) waitRun(tok, id, status string) engine.Run {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r engine.Run
		h.must(200, h.get(ePath(h)+"/runs/"+id, tok), &r)
		if r.Status == status {
			return r
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("run %s is %s, want %s: %+v", id, r.Status, status, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) runHistory(tok, id string) []engine.HistoryEvent {
	h.t.Helper()
	var page struct {
		Items      []engine.HistoryEvent `json:"items"`
		NextCursor *string               `json:"next_cursor"`
	}
	h.must(200, h.get(ePath(h)+"/runs/"+id+"/history", tok), &page)
	return page.Items
}

func (h *harness) cancelRun(tok, id string, body any) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: ePath(h) + "/runs/" + id + "/cancel", token: tok, body: body})
}

func (h *harness) retryRun(tok, id string, body any, key string) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: ePath(h) + "/runs/" + id + "/retry", token: tok, body: body,
		hdr: map[string]string{"Idempotency-Key": key}})
}

func historyKinds(events []engine.HistoryEvent) []string {
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = e.Kind
	}
	return kinds
}

func TestRunToCompletion(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	body := map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}, "business_key": "order-1"}

	run := h.mustStartRun(op, body, "start-1")
	is.Equal(run.Activation.ID, act)
	is.Equal(run.AdmissionPolicy, "classified-v1")
	is.Equal(run.ParentRunID, nil)
	is.Equal(*run.BusinessKey, "order-1")
	is.Equal(run.CorrelationKey, nil)
	is.True(!run.CreatedAt.IsZero())

	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"count":1,"greeting":"hello Ada"}`)
	is.Equal(string(done.State.Input), `{"name":"Ada"}`)
	is.Equal(len(done.State.Tasks), 0)
	is.Equal(done.ExternalEffectsMayContinue, nil)
	events := h.runHistory(op, run.ID)
	is.Equal(historyKinds(events), []string{"started", "task_completed", "task_completed"})
	for i, e := range events {
		is.Equal(e.Seq, int64(i+1))
	}
	is.Equal(done.AcceptedSequence, int64(3))
	get := h.get(ePath(h)+"/runs/"+run.ID, op)
	is.Equal(get.header.Get("ETag"), `"3"`)

	// Secret input values are redacted in the run and its history.
	secret := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada", "apiKey": "s3cret-value"}}, "start-secret")
	h.waitRun(op, secret.ID, "succeeded")
	is.True(!strings.Contains(string(h.get(ePath(h)+"/runs/"+secret.ID, op).body), "s3cret-value"))
	hist := h.get(ePath(h)+"/runs/"+secret.ID+"/history", op)
	is.True(!strings.Contains(string(hist.body), "s3cret-value"))
	is.True(strings.Contains(string(hist.body), "[redacted]"))

	// Idempotent start: the same key and body replay the first answer; another body conflicts.
	replay := h.startRun(op, body, "start-1")
	is.Equal(replay.status, 201)
	is.Equal(replay.header.Get("Idempotent-Replayed"), "true")
	var again engine.Run
	replay.json(t, &again)
	is.Equal(again.ID, run.ID)
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.startRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Bob"}}, "start-1"))
	h.problem(422, "PF-IDEMPOTENCY", h.startRun(op, body, ""))

	// A fail step ends the run failed with its code.
	failed := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada", "mode": "fail"}}, "start-fail")
	f := h.waitRun(op, failed.ID, "failed")
	is.Equal(f.State.Error.Code, "ASKED_TO_FAIL")

	// The input is at most 1 MiB; a body far beyond it is refused before
	// it is read.
	mib := func(over int) map[string]any {
		const frame = len(`{"name":""}`)
		return map[string]any{"activation_id": act, "input": map[string]any{"name": strings.Repeat("n", 1<<20-frame+over)}}
	}
	h.must(201, h.startRun(op, mib(0), "start-mib"), nil)
	h.problem(422, "PF-VALIDATION", h.startRun(op, mib(1), "start-mib-1"))
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.startRun(op, mib(64<<10), "start-mib-64k"))

	// Validation.
	for name, b := range map[string]any{
		"input schema":       map[string]any{"activation_id": act, "input": map[string]any{"mode": "x"}},
		"input not object":   map[string]any{"activation_id": act, "input": []int{1}},
		"bad activation":     map[string]any{"activation_id": "nope", "input": map[string]any{"name": "Ada"}},
		"unknown activation": map[string]any{"activation_id": "0190a0b0-0000-7000-8000-00000000dead", "input": map[string]any{"name": "Ada"}},
		"unknown field":      map[string]any{"activation_id": act, "extra": 1},
		"key too long":       map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}, "correlation_key": strings.Repeat("k", 201)},
	} {
		t.Run(name, func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.startRun(op, b, "bad-"+name))
		})
	}
}

func TestRunAccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}}, "acc-start")
	h.waitRun(op, run.ID, "succeeded")
	E := ePath(h)
	body := map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}}
	for _, r := range []req{
		{method: "POST", path: E + "/runs", body: body, hdr: map[string]string{"Idempotency-Key": "x"}},
		{method: "GET", path: E + "/runs/" + run.ID},
		{method: "GET", path: E + "/runs/" + run.ID + "/history"},
		{method: "POST", path: E + "/runs/" + run.ID + "/cancel", body: map[string]string{"reason": "r"}},
		{method: "POST", path: E + "/runs/" + run.ID + "/retry", body: body, hdr: map[string]string{"Idempotency-Key": "x"}},
	} {
		h.problem(401, "PF-UNAUTHENTICATED", h.do(r))
	}
	_, viewer := h.user("vera", "viewer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID})
	h.must(200, h.get(E+"/runs/"+run.ID, viewer), nil)
	h.must(200, h.get(E+"/runs/"+run.ID+"/history", viewer), nil)
	h.problem(403, "PF-FORBIDDEN", h.startRun(viewer, body, "v-1"))
	h.problem(403, "PF-FORBIDDEN", h.cancelRun(viewer, run.ID, map[string]string{"reason": "r"}))
	h.problem(403, "PF-FORBIDDEN", h.retryRun(viewer, run.ID, body, "v-2"))

	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/0190a0b0-0000-7000-8000-00000000dead", op))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/0190a0b0-0000-7000-8000-00000000dead/history", op))
	h.problem(404, "PF-NOT-FOUND", h.cancelRun(op, "0190a0b0-0000-7000-8000-00000000dead", map[string]string{"reason": "r"}))
	h.problem(404, "PF-NOT-FOUND", h.retryRun(op, "0190a0b0-0000-7000-8000-00000000dead", body, "nf"))
	other := h.environment(h.ws.ProjectID, "staging")
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)+"/runs/"+run.ID, op))
}

func TestRunWaitCancelRetry(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	waitBody := func(pause string) map[string]any {
		return map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada", "mode": "wait", "pause": pause}}
	}

	// A short wait completes through the scheduler.
	w := h.mustStartRun(op, waitBody("300ms"), "wait-short")
	h.waitRun(op, w.ID, "waiting")
	done := h.waitRun(op, w.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"count":1,"greeting":"hello Ada"}`)
	is.Equal(historyKinds(h.runHistory(op, w.ID)), []string{"started", "task_completed", "task_completed", "timer_fired"})

	// Cancel: reason bounds, then a second cancel answers the same snapshot.
	long := h.mustStartRun(op, waitBody("1h"), "wait-long")
	h.waitRun(op, long.ID, "waiting")
	h.problem(422, "PF-VALIDATION", h.cancelRun(op, long.ID, map[string]string{"reason": ""}))
	h.problem(422, "PF-VALIDATION", h.cancelRun(op, long.ID, map[string]string{"reason": "   "}))
	h.problem(422, "PF-VALIDATION", h.cancelRun(op, long.ID, map[string]string{"reason": strings.Repeat("r", 2001)}))
	h.problem(422, "PF-VALIDATION", h.cancelRun(op, long.ID, map[string]any{}))

	// A non-terminal parent is not retried.
	retryBody := map[string]any{"activation_id": act, "input": map[string]any{"name": "Grace"}}
	h.problem(409, "PF-RUNTIME-STATE", h.retryRun(op, long.ID, retryBody, "retry-early"))

	var first, second map[string]any
	h.must(200, h.cancelRun(op, long.ID, map[string]string{"reason": strings.Repeat("r", 2000)}), &first)
	is.Equal(first["status"], "cancelled")
	is.Equal(first["external_effects_may_continue"], false)
	n := len(h.runHistory(op, long.ID))
	h.must(200, h.cancelRun(op, long.ID, map[string]string{"reason": "again"}), &second)
	is.Equal(first, second)
	is.Equal(len(h.runHistory(op, long.ID)), n)
	is.Equal(historyKinds(h.runHistory(op, long.ID))[n-1], "cancel_requested")

	// An ended run other than cancelled refuses cancellation.
	h.problem(409, "PF-RUNTIME-STATE", h.cancelRun(op, w.ID, map[string]string{"reason": "too late"}))

	// Retry of the cancelled run: a new run with parent_run_id; the parent is unchanged.
	before := h.get(ePath(h)+"/runs/"+long.ID, op)
	var retried engine.Run
	h.must(201, h.retryRun(op, long.ID, retryBody, "retry-1"), &retried)
	is.True(retried.ID != long.ID)
	is.Equal(*retried.ParentRunID, long.ID)
	is.Equal(h.waitRun(op, retried.ID, "succeeded").State.Output, json.RawMessage(`{"count":1,"greeting":"hello Grace"}`))
	after := h.get(ePath(h)+"/runs/"+long.ID, op)
	is.Equal(string(before.body), string(after.body))
	var replay engine.Run
	h.must(201, h.retryRun(op, long.ID, retryBody, "retry-1"), &replay)
	is.Equal(replay.ID, retried.ID)
	h.problem(422, "PF-IDEMPOTENCY", h.do(req{method: "POST", path: ePath(h) + "/runs/" + long.ID + "/retry", token: op, body: retryBody}))
}

func TestRunHistoryPages(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}}, "page-start")
	h.waitRun(op, run.ID, "succeeded")
	var seqs []int64
	path := ePath(h) + "/runs/" + run.ID + "/history?limit=2"
	for {
		var page struct {
			Items      []engine.HistoryEvent `json:"items"`
			NextCursor *string               `json:"next_cursor"`
		}
		h.must(200, h.get(path, op), &page)
		for _, e := range page.Items {
			seqs = append(seqs, e.Seq)
		}
		if page.NextCursor == nil {
			break
		}
		path = ePath(h) + "/runs/" + run.ID + "/history?limit=2&cursor=" + *page.NextCursor
	}
	is.Equal(seqs, []int64{1, 2, 3})
}

func TestRunSurvivesRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	act := setupFlow(h)
	run := h.mustStartRun(h.localToken(), map[string]any{"activation_id": act,
		"input": map[string]any{"name": "Ada", "mode": "wait", "pause": "1500ms"}}, "restart-start")
	h.waitRun(h.localToken(), run.ID, "waiting")
	h.restart(true)
	done := h.waitRun(h.localToken(), run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"count":1,"greeting":"hello Ada"}`)
	is.Equal(historyKinds(h.runHistory(h.localToken(), run.ID)), []string{"started", "task_completed", "task_completed", "timer_fired"})
}
