package platform_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

// Tests of the Incident and Run state tables and of the Errors table of
// docs/platform-api.md at the HTTP level: every refused request is checked to change
// nothing.

// Definitions of the state table tests: a caller whose child workflow step
// times out (an incident not tied to an action), and a workflow whose
// parallel branches each issue a worker task.
const (
	timedCallerWorkflow = `kind: workflow
id: acme/timed-caller
version: 1
output:
  type: object
  properties:
    greeting: {type: string}
steps:
  - id: child
    workflow: acme/flow@1
    with:
      name: ada
      mode: wait
      pause: 1h
    timeout: 200ms
  - id: done
    succeed:
      result:
        greeting: =steps.child.output.greeting
`
	splitWorkflow = `kind: workflow
id: acme/split-flow
version: 1
input: {type: object}
steps:
  - id: both
    parallel:
      - name: pay
        steps:
          - id: charge
            action: acme/charge@1
            with: {amount: 7}
      - name: price
        steps:
          - id: rate
            action: acme/lookup-rate@1
            with: {currency: EUR}
`
)

// runBody answers the raw body of GET E/runs/{id}, to compare a run before
// and after a refused request.
func (h *harness) runBody(tok, id string) string {
	h.t.Helper()
	r := h.get(ePath(h)+"/runs/"+id, tok)
	h.must(200, r, nil)
	return string(r.body)
}

// resolveBody is a ResolveRequest; output and evidence are left out when nil
// or "".
func resolveBody(receipt, kind string, output any, evidence string) map[string]any {
	b := map[string]any{"receipt_id": receipt, "kind": kind, "reason": "decided by the test"}
	if output != nil {
		b["output"] = output
	}
	if evidence != "" {
		b["evidence_reference"] = evidence
	}
	return b
}

// The "no matching failed task" branch of PF-RUNTIME-STATE guards the
// kernel's invariant that an active task incident's task is held in status
// incident; no sequence of HTTP requests breaks that invariant, so the
// branch is reached here by removing the task from the stored state (as
// the legacy and replay tests tamper with it) and resolving over HTTP.
func TestIncidentResolveNoMatchingTask(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	run, inc := h.suspendedRun(op, act, "nomatch-start")
	is.True(inc.TaskID != "")
	is.True(inc.RetrySafe) // read_only: retry_safe passes the side-effect check
	h.dbExec(`UPDATE platform_runs SET state = json_remove(state, '$.tasks."' || ? || '"') WHERE id = ?`, inc.TaskID, run.ID)
	before := h.runBody(op, run.ID)

	p := h.problem(409, "PF-RUNTIME-STATE", h.resolveIncident(op, inc.ID, "1",
		resolveBody("0190a0b0-0000-7000-8000-0000000000c1", "retry_safe", nil, "")))
	is.True(strings.Contains(p.Message, "no failed task"))
	p = h.problem(409, "PF-RUNTIME-STATE", h.resolveIncident(op, inc.ID, "1",
		resolveBody("0190a0b0-0000-7000-8000-0000000000c2", "accept_reconciled_result", map[string]any{"ok": true}, "ticket-1")))
	is.True(strings.Contains(p.Message, "no failed task"))

	is.Equal(h.onlyIncident(op, run.ID), inc)
	is.Equal(h.runBody(op, run.ID), before)
}

// retry_safe on an unsafe action, output with retry_safe, and reconciled
// results without output or evidence are refused and change nothing; the
// same receipt then carries an accepted decision (a refusal stores none).
func TestIncidentReconciliationRequired(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select { // hang past the attempt's timeout
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	act := h.activateHTTP("tables-charge", httpChargeFlow, httpChargeAction)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"base": srv.URL}}, "tables-charge-1")
	h.waitRun(op, run.ID, "suspended")
	inc := h.onlyIncident(op, run.ID)
	is.Equal(inc.Code, "PF-TASK-AMBIGUOUS")
	is.Equal(inc.SideEffect, "unsafe")
	before := h.runBody(op, run.ID)

	receipt := "0190a0b0-0000-7000-8000-0000000000d1"
	p := h.problem(409, "PF-RUNTIME-RECONCILIATION_REQUIRED", h.resolveIncident(op, inc.ID, "1",
		resolveBody(receipt, "retry_safe", nil, "")))
	is.True(strings.Contains(p.Message, "unsafe"))
	h.problem(422, "PF-RUNTIME-OUTPUT", h.resolveIncident(op, inc.ID, "1",
		resolveBody(receipt, "retry_safe", map[string]any{"charged": true}, "")))
	for name, b := range map[string]map[string]any{
		"no output":      resolveBody(receipt, "accept_reconciled_result", nil, "ticket-7"),
		"null output":    {"receipt_id": receipt, "kind": "accept_reconciled_result", "reason": "r", "output": nil, "evidence_reference": "ticket-7"},
		"blank evidence": resolveBody(receipt, "accept_reconciled_result", map[string]any{"charged": true}, "   "),
		"empty evidence": {"receipt_id": receipt, "kind": "accept_reconciled_result", "reason": "r", "output": map[string]any{"charged": true}, "evidence_reference": ""},
		"no evidence":    resolveBody(receipt, "accept_reconciled_result", map[string]any{"charged": true}, ""),
	} {
		t.Run(name, func(t *testing.T) {
			checkProblem(t, 409, "PF-RUNTIME-RECONCILIATION_REQUIRED", h.resolveIncident(op, inc.ID, "1", b))
		})
	}
	is.Equal(h.onlyIncident(op, run.ID), inc)
	is.Equal(h.runBody(op, run.ID), before)

	var done engine.Resolved
	h.must(200, h.resolveIncident(op, inc.ID, "1",
		resolveBody(receipt, "accept_reconciled_result", map[string]any{"charged": true}, "bank-statement-3")), &done)
	is.Equal(done.Incident.Status, "resolved")
	is.Equal(done.Incident.Resolution.EvidenceReference, "bank-statement-3")
	is.Equal(h.waitRun(op, run.ID, "succeeded").Status, "succeeded")
}

// A workflow step whose child run outlives its timeout opens an incident
// tied to the child, not to an action: retry_safe is refused.
func TestIncidentRetrySafeNotTiedToAction(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	setupFlow(h)
	wf := h.mustPublish(op, "workflows", timedCallerWorkflow, "timed-caller-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "timed-caller-activation", "").ID
	run := h.mustStartRun(op, map[string]any{"activation_id": act}, "timed-caller-1")
	h.waitRun(op, run.ID, "suspended")
	inc := h.onlyIncident(op, run.ID)
	is.Equal(inc.Code, "PF-TASK-DEADLINE")
	is.Equal(inc.NodeID, "child")
	is.True(inc.ChildID != "")
	is.Equal(inc.TaskID, "")
	is.True(!inc.RetrySafe)
	h.waitRun(op, inc.ChildID, "cancelled") // the timed-out child is cancelled
	before := h.runBody(op, run.ID)

	receipt := "0190a0b0-0000-7000-8000-0000000000e1"
	p := h.problem(409, "PF-RUNTIME-RECONCILIATION_REQUIRED", h.resolveIncident(op, inc.ID, "1",
		resolveBody(receipt, "retry_safe", nil, "")))
	is.True(strings.Contains(p.Message, "not tied to an action"))
	h.problem(422, "PF-RUNTIME-OUTPUT", h.resolveIncident(op, inc.ID, "1",
		resolveBody(receipt, "accept_reconciled_result", map[string]any{"greeting": 1}, "ticket-9")))
	is.Equal(h.onlyIncident(op, run.ID), inc)
	is.Equal(h.runBody(op, run.ID), before)

	// A reconciled result of the callee's output schema completes the step.
	h.must(200, h.resolveIncident(op, inc.ID, "1",
		resolveBody(receipt, "accept_reconciled_result", map[string]any{"greeting": "hi", "count": 1}, "ticket-9")), nil)
	is.Equal(string(h.waitRun(op, run.ID, "succeeded").State.Output), `{"greeting":"hi"}`)
}

// Cancelling a run suspended by an incident cancels it and closes the
// incident with kind run_ended; the incident then refuses decisions.
func TestCancelRunSuspendedByIncident(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	run, inc := h.suspendedRun(op, act, "cancel-suspended")

	var r engine.Run
	h.must(200, h.cancelRun(op, run.ID, map[string]string{"reason": "no longer needed"}), &r)
	is.Equal(r.Status, "cancelled")
	is.True(r.ExternalEffectsMayContinue != nil)
	is.Equal(h.waitRun(op, run.ID, "cancelled").Status, "cancelled")
	closed := h.onlyIncident(op, run.ID)
	is.Equal(closed.ID, inc.ID)
	is.Equal(closed.Status, "resolved")
	is.Equal(closed.Revision, 2)
	is.True(closed.Resolution != nil)
	is.Equal(string(closed.Resolution.Kind), "run_ended")
	is.Equal(closed.Resolution.ReceiptID, "")
	kinds := historyKinds(h.runHistory(op, run.ID))
	is.Equal(kinds[len(kinds)-1], "cancel_requested")

	// The environment index follows the state.
	var page incidentPage
	h.must(200, h.get(ePath(h)+"/incidents?status=active", op), &page)
	is.Equal(len(page.Items), 0)
	h.must(200, h.get(ePath(h)+"/incidents?status=resolved", op), &page)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0], closed)

	// No decision applies any more; a second cancel answers the same run.
	before := h.runBody(op, run.ID)
	h.problem(409, "PF-RUNTIME-STATE", h.resolveIncident(op, inc.ID, "2",
		resolveBody("0190a0b0-0000-7000-8000-0000000000f1", "terminate", nil, "")))
	h.must(200, h.cancelRun(op, run.ID, map[string]string{"reason": "again"}), nil)
	is.Equal(h.runBody(op, run.ID), before)
	is.Equal(h.onlyIncident(op, run.ID), closed)
}

// Retry of a succeeded and of a failed run: a new run with parent_run_id,
// the parent unchanged; key reuse with another body and a principal
// without run.start are refused and create nothing.
func TestRetryEndedRuns(t *testing.T) {
	t.Parallel()
	is, h, op, act := flowHarness(t)
	ok := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}}, "rt-ok")
	h.waitRun(op, ok.ID, "succeeded")
	bad := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada", "mode": "fail"}}, "rt-bad")
	h.waitRun(op, bad.ID, "failed")
	runCount := func() int {
		return len(listAll[engine.RunSummary](h, op, ePath(h)+"/runs", nil))
	}

	for _, parent := range []engine.Run{ok, bad} {
		before := h.runBody(op, parent.ID)
		body := map[string]any{"activation_id": act, "input": map[string]any{"name": "Grace"}}
		var child engine.Run
		h.must(201, h.retryRun(op, parent.ID, body, "rt-retry-"+parent.ID), &child)
		is.True(child.ID != parent.ID)
		is.True(child.ParentRunID != nil)
		is.Equal(*child.ParentRunID, parent.ID)
		is.Equal(string(h.waitRun(op, child.ID, "succeeded").State.Output), `{"count":1,"greeting":"hello Grace"}`)
		is.Equal(h.runBody(op, parent.ID), before)

		// The same key with another body conflicts and starts nothing.
		n := runCount()
		other := map[string]any{"activation_id": act, "input": map[string]any{"name": "Linus"}}
		h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.retryRun(op, parent.ID, other, "rt-retry-"+parent.ID))
		is.Equal(runCount(), n)
		is.Equal(h.runBody(op, parent.ID), before)
	}

	// run.retry without run.start is not enough, nor run.start without
	// run.retry.
	env := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
	h.grant(h.link("human", "rory"), env, "", "run.read", "run.retry")
	rory := h.ext.token(t, "rory", nil)
	h.grant(h.link("human", "stan"), env, "", "run.read", "run.start")
	stan := h.ext.token(t, "stan", nil)
	n := runCount()
	before := h.runBody(op, bad.ID)
	body := map[string]any{"activation_id": act, "input": map[string]any{"name": "Ada"}}
	h.problem(403, "PF-FORBIDDEN", h.retryRun(rory, bad.ID, body, "rt-rory"))
	h.problem(403, "PF-FORBIDDEN", h.retryRun(stan, bad.ID, body, "rt-stan"))
	is.Equal(runCount(), n)
	is.Equal(h.runBody(op, bad.ID), before)
	// Both capabilities together are.
	h.grant(h.link("human", "rita"), env, "", "run.read", "run.retry", "run.start")
	var child engine.Run
	h.must(201, h.retryRun(h.ext.token(t, "rita", nil), bad.ID, body, "rt-rita"), &child)
	is.Equal(*child.ParentRunID, bad.ID)
}

// Pause and resume refusals: authentication, unknown run, capability,
// missing key and key reuse with another body; none changes the run.
func TestPauseResumeRefusals(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupApproval(op)
	run := h.startWaiting(op, act, "pr-start")
	unknown := "0190a0b0-0000-7000-8000-00000000dead"
	_, viewer := h.user("vic", "viewer", h.localScope())
	paused := func() bool {
		var r engine.Run
		h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &r)
		is.Equal(r.AcceptedSequence, run.AcceptedSequence) // pausing accepts no event
		return r.Paused
	}

	for _, verb := range []string{"pause", "resume"} {
		h.problem(401, "PF-UNAUTHENTICATED", h.pauseRun("", run.ID, verb, map[string]any{}, "pr-anon"))
		h.problem(404, "PF-NOT-FOUND", h.pauseRun(op, unknown, verb, map[string]any{}, "pr-unknown"))
		h.problem(403, "PF-FORBIDDEN", h.pauseRun(viewer, run.ID, verb, map[string]any{}, "pr-viewer"))
		h.problem(422, "PF-IDEMPOTENCY", h.pauseRun(op, run.ID, verb, map[string]any{}, ""))
	}
	is.True(!paused())

	// Pause, then the pause key with another body after a resume: refused,
	// the run is not paused again.
	h.must(200, h.pauseRun(op, run.ID, "pause", map[string]any{"reason": "a"}, "pr-p"), nil)
	is.True(paused())
	h.problem(422, "PF-IDEMPOTENCY", h.pauseRun(op, run.ID, "resume", map[string]any{}, ""))
	h.problem(403, "PF-FORBIDDEN", h.pauseRun(viewer, run.ID, "resume", map[string]any{}, "pr-viewer-2"))
	is.True(paused())
	h.must(200, h.pauseRun(op, run.ID, "resume", map[string]any{"reason": "a"}, "pr-r"), nil)
	is.True(!paused())
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.pauseRun(op, run.ID, "pause", map[string]any{"reason": "b"}, "pr-p"))
	is.True(!paused())

	// Paused again under a new key, the resume key with another body is
	// refused and the run stays paused.
	h.must(200, h.pauseRun(op, run.ID, "pause", map[string]any{"reason": "c"}, "pr-p2"), nil)
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.pauseRun(op, run.ID, "resume", map[string]any{"reason": "b"}, "pr-r"))
	is.True(paused())
	// The same key and body replay the committed answer without resuming.
	replay := h.pauseRun(op, run.ID, "resume", map[string]any{"reason": "a"}, "pr-r")
	is.Equal(replay.status, 200)
	is.Equal(replay.header.Get("Idempotent-Replayed"), "true")
	is.True(paused())
}

// Incident list limits, run.read on steps and logs, and the shortest
// Idempotency-Key.
func TestIncidentListLimitsAndRunReadAccess(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	run, inc := h.suspendedRun(op, act, "k")
	E := ePath(h)

	for _, l := range []string{"0", "101"} {
		listProblem(h, op, E+"/incidents", qs("limit", l), "PF-VALIDATION", "limit")
	}
	for _, l := range []string{"1", "100"} {
		page := listGet[engine.Incident](h, op, E+"/incidents", qs("limit", l))
		is.Equal(len(page.Items), 1)
		is.Equal(page.Items[0].ID, inc.ID)
		is.True(page.NextCursor == nil)
	}

	// incident.read alone reads incidents, not steps or logs.
	env := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
	h.grant(h.link("human", "iris"), env, "", "incident.read")
	iris := h.ext.token(t, "iris", nil)
	h.must(200, h.get(E+"/incidents", iris), nil)
	h.must(200, h.get(E+"/runs/"+run.ID+"/incidents", iris), nil)
	h.problem(403, "PF-FORBIDDEN", h.get(E+"/runs/"+run.ID+"/steps", iris))
	h.problem(403, "PF-FORBIDDEN", h.get(E+"/runs/"+run.ID+"/logs", iris))
	h.must(200, h.get(E+"/runs/"+run.ID+"/steps", op), nil)
	h.must(200, h.get(E+"/runs/"+run.ID+"/logs", op), nil)

	// The run above was started with the one-character key "k"; the same
	// key replays it.
	replay := h.startRun(op, map[string]any{"activation_id": act}, "k")
	is.Equal(replay.status, 201)
	is.Equal(replay.header.Get("Idempotent-Replayed"), "true")
	var again engine.Run
	replay.json(t, &again)
	is.Equal(again.ID, run.ID)
}

// A worker task leased while its run is suspended by an incident on
// another branch keeps its lease; terminating the incident cancels the run
// and revokes the lease, so the worker's heartbeat and report are refused.
func TestTerminateRevokesLeases(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "split-worker")
	h, op, w := f.h, f.op, f.w
	wf := h.mustPublish(op, "workflows", splitWorkflow, "split-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "split-activation", "").ID
	run := h.mustStartRun(op, map[string]any{"activation_id": act}, "split-1")
	tasks := h.mustClaim(w, map[string]any{"worker_id": "split-1", "queues": []string{"billing", "rates"}, "max_tasks": 2})
	is.Equal(len(tasks), 2)
	byNode := map[string]engine.ClaimedTask{tasks[0].NodeID: tasks[0], tasks[1].NodeID: tasks[1]}
	charge, rate := byNode["charge"], byNode["rate"]
	is.Equal(charge.RunID, run.ID)
	is.Equal(rate.RunID, run.ID)

	// A failure that is not retryable suspends the run; the other lease is
	// still held.
	h.must(200, h.taskCall(w, "fail", failure(rate.ID, "split-1", "NO_RATE", false)), nil)
	h.waitRun(op, run.ID, "suspended")
	inc := h.onlyIncident(op, run.ID)
	is.Equal(inc.Code, "PF-TASK-FAILED")
	is.Equal(inc.NodeID, "rate")
	h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": charge.ID, "worker_id": "split-1"}), nil)
	leased := h.listTasks(op, "?status=leased").Items
	is.Equal(len(leased), 1)
	is.Equal(leased[0].ID, charge.ID)

	var done engine.Resolved
	h.must(200, h.resolveIncident(op, inc.ID, "1", resolveBody("0190a0b0-0000-7000-8000-0000000000a7", "terminate", nil, "")), &done)
	is.Equal(done.Run.Status, "cancelled")
	is.Equal(*done.Run.ExternalEffectsMayContinue, true)
	is.Equal(h.waitRun(op, run.ID, "cancelled").Status, "cancelled")

	p := h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": charge.ID, "worker_id": "split-1"}))
	is.True(strings.Contains(p.Message, "withdrawn"))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "complete", complete(charge.ID, "split-1", map[string]any{"receipt": "late"})))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "fail", failure(charge.ID, "split-1", "LATE", true)))
	is.Equal(len(h.listTasks(op, "").Items), 0)
	is.Equal(h.waitRun(op, run.ID, "cancelled").Status, "cancelled")
}
