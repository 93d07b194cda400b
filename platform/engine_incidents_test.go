package platform_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"github.com/agentbridge/bridge/platform/platformtest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

type incidentPage struct {
	Items      []engine.Incident `json:"items"`
	NextCursor *string           `json:"next_cursor"`
}

// suspendedRun starts a run of the slow workflow and waits for its
// incident.
func (h *harness) suspendedRun(tok, act, key string) (engine.Run, engine.Incident) {
	h.t.Helper()
	run := h.mustStartRun(tok, map[string]any{"activation_id": act}, key)
	h.waitRun(tok, run.ID, "suspended")
	var incs []engine.Incident
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID+"/incidents", tok), &incs)
	if len(incs) != 1 {
		h.t.Fatalf("run %s has %d incidents, want 1", run.ID, len(incs))
	}
	return run, incs[0]
}

func (h *harness) resolveIncident(tok, id, ifMatch string, body any) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "POST", path: ePath(h) + "/incidents/" + id + "/resolve", token: tok, hdr: hdr, body: body})
}

func setupSlow(h *harness) string {
	h.t.Helper()
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.SlowAction, "slow-action")
	wf := h.mustPublish(op, "workflows", platformtest.SlowWorkflow, "slow-workflow").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "slow-activation", "").ID
}

func TestIncidentTerminate(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	run, inc := h.suspendedRun(op, act, "inc-start")
	is.Equal(inc.RunID, run.ID)
	is.Equal(inc.Code, "PF-TASK-DEADLINE")
	is.Equal(inc.Status, "active")
	is.Equal(inc.Revision, 1)
	is.Equal(inc.NodeID, "call")
	is.True(inc.Resolution == nil)

	// The environment list, with the status filter.
	var page incidentPage
	h.must(200, h.get(ePath(h)+"/incidents", op), &page)
	is.Equal(len(page.Items), 1)
	is.Equal(page.Items[0], inc)
	h.must(200, h.get(ePath(h)+"/incidents?status=active", op), &page)
	is.Equal(len(page.Items), 1)
	h.must(200, h.get(ePath(h)+"/incidents?status=resolved", op), &page)
	is.Equal(len(page.Items), 0)
	h.problem(422, "PF-VALIDATION", h.get(ePath(h)+"/incidents?status=open", op))

	// If-Match is required and must be a positive revision.
	receipt := "0190a0b0-0000-7000-8000-000000000001"
	terminate := map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": strings.Repeat("r", 2000)}
	h.problem(422, "PF-ETAG", h.resolveIncident(op, inc.ID, "", terminate))
	h.problem(422, "PF-ETAG", h.resolveIncident(op, inc.ID, `"0"`, terminate))
	h.problem(409, "PF-INCIDENT-REVISION", h.resolveIncident(op, inc.ID, `"2"`, terminate))

	// Body validation.
	for name, b := range map[string]any{
		"blank reason":     map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": "  "},
		"empty reason":     map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": ""},
		"long reason":      map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": strings.Repeat("r", 2001)},
		"no reason":        map[string]any{"receipt_id": receipt, "kind": "terminate"},
		"bad receipt":      map[string]any{"receipt_id": "r-1", "kind": "terminate", "reason": "r"},
		"bad kind":         map[string]any{"receipt_id": receipt, "kind": "retry", "reason": "r"},
		"unknown field":    map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": "r", "extra": 1},
		"evidence on stop": map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": "r", "evidence_reference": "t-1"},
	} {
		t.Run(name, func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.resolveIncident(op, inc.ID, "1", b))
		})
	}
	h.problem(422, "PF-RUNTIME-OUTPUT", h.resolveIncident(op, inc.ID, "1",
		map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": "r", "output": map[string]any{"ok": true}}))
	// Kernel refusals: the deadline passed; a reconciled result needs evidence.
	h.problem(409, "PF-RUNTIME-DEADLINE", h.resolveIncident(op, inc.ID, "1",
		map[string]any{"receipt_id": receipt, "kind": "retry_safe", "reason": "r"}))
	h.problem(409, "PF-RUNTIME-RECONCILIATION_REQUIRED", h.resolveIncident(op, inc.ID, "1",
		map[string]any{"receipt_id": receipt, "kind": "accept_reconciled_result", "reason": "r", "output": map[string]any{"ok": true}}))
	h.problem(404, "PF-NOT-FOUND", h.resolveIncident(op, "0190a0b0-0000-7000-8000-00000000dead", "1", terminate))
	h.problem(404, "PF-NOT-FOUND", h.resolveIncident(op, "nope", "1", terminate))

	// Terminate: the incident is resolved, the run cancelled.
	res := h.resolveIncident(op, inc.ID, `"1"`, terminate)
	var done engine.Resolved
	h.must(200, res, &done)
	is.Equal(res.header.Get("ETag"), `"2"`)
	is.Equal(done.Incident.Status, "resolved")
	is.Equal(done.Incident.Revision, 2)
	is.Equal(string(done.Incident.Resolution.Kind), "terminate")
	is.Equal(done.Incident.Resolution.ReceiptID, receipt)
	is.Equal(done.Run.Status, "cancelled")
	is.Equal(*done.Run.ExternalEffectsMayContinue, true)
	is.Equal(h.waitRun(op, run.ID, "cancelled").ID, run.ID)
	is.Equal(historyKinds(h.runHistory(op, run.ID))[len(h.runHistory(op, run.ID))-1], "incident_resolved")

	// The same receipt and request replay the committed result.
	replay := h.resolveIncident(op, inc.ID, "1", terminate)
	is.Equal(replay.status, 200)
	is.Equal(string(replay.body), string(res.body))
	is.Equal(replay.header.Get("ETag"), `"2"`)
	// Reused with another body, another revision or by another person.
	other := map[string]any{"receipt_id": receipt, "kind": "terminate", "reason": "other"}
	h.problem(409, "PF-INCIDENT-RECEIPT-CONFLICT", h.resolveIncident(op, inc.ID, "1", other))
	h.problem(409, "PF-INCIDENT-RECEIPT-CONFLICT", h.resolveIncident(op, inc.ID, "2", terminate))
	_, olga := h.user("olga", "operator", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID})
	h.problem(409, "PF-INCIDENT-RECEIPT-CONFLICT", h.resolveIncident(olga, inc.ID, "1", terminate))
	// A new decision on the resolved incident.
	h.problem(409, "PF-RUNTIME-STATE", h.resolveIncident(op, inc.ID, "2",
		map[string]any{"receipt_id": "0190a0b0-0000-7000-8000-000000000002", "kind": "terminate", "reason": "again"}))

	// Closed history stays visible.
	var incs []engine.Incident
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID+"/incidents", op), &incs)
	is.Equal(len(incs), 1)
	is.Equal(incs[0], done.Incident)
	h.must(200, h.get(ePath(h)+"/incidents?status=resolved", olga), &page)
	is.Equal(len(page.Items), 1)
	h.must(200, h.get(ePath(h)+"/incidents?status=active", op), &page)
	is.Equal(len(page.Items), 0)
}

func TestIncidentAcceptAndList(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	run1, inc1 := h.suspendedRun(op, act, "acc-1")
	_, inc2 := h.suspendedRun(op, act, "acc-2")

	// Pages of one.
	var ids []string
	path := ePath(h) + "/incidents?limit=1"
	for {
		var page incidentPage
		h.must(200, h.get(path, op), &page)
		for _, i := range page.Items {
			ids = append(ids, i.ID)
		}
		if page.NextCursor == nil {
			break
		}
		path = ePath(h) + "/incidents?limit=1&cursor=" + *page.NextCursor
	}
	want := []string{inc1.ID, inc2.ID}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	is.Equal(ids, want)

	// An accepted reconciled result completes the step; the run continues.
	body := map[string]any{"receipt_id": "0190a0b0-0000-7000-8000-000000000003", "kind": "accept_reconciled_result",
		"reason": "checked with billing", "output": map[string]any{"ok": true}, "evidence_reference": "ticket-42"}
	h.problem(422, "PF-RUNTIME-OUTPUT", h.resolveIncident(op, inc1.ID, "1", map[string]any{"receipt_id": "0190a0b0-0000-7000-8000-000000000004",
		"kind": "accept_reconciled_result", "reason": "r", "output": map[string]any{"ok": "yes"}, "evidence_reference": "t"}))
	// The output is within the 1 MiB payload limit; a body far beyond it is
	// refused before it is read.
	padded := func(over int) map[string]any {
		const frame = len(`{"ok":true,"pad":""}`)
		return map[string]any{"receipt_id": "0190a0b0-0000-7000-8000-000000000005", "kind": "accept_reconciled_result", "reason": "r",
			"output": map[string]any{"ok": true, "pad": strings.Repeat("p", 1<<20-frame+over)}, "evidence_reference": "t"}
	}
	h.problem(422, "PF-RUNTIME-OUTPUT", h.resolveIncident(op, inc1.ID, "1", padded(1)))
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.resolveIncident(op, inc1.ID, "1", padded(64<<10)))
	var done engine.Resolved
	h.must(200, h.resolveIncident(op, inc1.ID, "1", body), &done)
	is.Equal(done.Incident.Resolution.EvidenceReference, "ticket-42")
	is.Equal(*done.Run.ExternalEffectsMayContinue, false)
	out := h.waitRun(op, run1.ID, "succeeded")
	is.Equal(out.State.Output, json.RawMessage(`{"ok":true}`))
	// The receipt belongs to its incident.
	h.problem(409, "PF-INCIDENT-RECEIPT-CONFLICT", h.resolveIncident(op, inc2.ID, "1", body))
}

func TestIncidentAccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	run, inc := h.suspendedRun(op, act, "access-start")
	E := ePath(h)
	body := map[string]any{"receipt_id": "0190a0b0-0000-7000-8000-000000000005", "kind": "terminate", "reason": "r"}
	routes := []req{
		{method: "GET", path: E + "/runs/" + run.ID + "/incidents"},
		{method: "GET", path: E + "/incidents"},
		{method: "POST", path: E + "/incidents/" + inc.ID + "/resolve", body: body, hdr: map[string]string{"If-Match": "1"}},
	}
	for _, r := range routes {
		h.problem(401, "PF-UNAUTHENTICATED", h.do(r))
	}
	_, viewer := h.user("vera", "viewer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID})
	for _, r := range routes {
		r.token = viewer
		h.problem(403, "PF-FORBIDDEN", h.do(r))
	}
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/0190a0b0-0000-7000-8000-00000000dead/incidents", op))
	other := h.environment(h.ws.ProjectID, "staging")
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)+"/runs/"+run.ID+"/incidents", op))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "POST", token: op, body: body, hdr: map[string]string{"If-Match": "1"},
		path: h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID) + "/incidents/" + inc.ID + "/resolve"}))
	h.waitRun(op, run.ID, "suspended")
}

// An incident of a run whose state cannot be shown appears in the
// environment's list as a safe placeholder, before and after the run is
// cancelled; the rest of the list is unaffected.
func TestIncidentListShowsLegacyRunsAsPlaceholders(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	legacy, legacyInc := h.suspendedRun(op, act, "legacy-inc-1")
	_, other := h.suspendedRun(op, act, "legacy-inc-2")
	is.NoErr(h.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE platform_runs SET state = json_set(state, '$.format', 0) WHERE id = ?`, legacy.ID)
		return err
	}))
	list := func() map[string]engine.Incident {
		var page incidentPage
		h.must(200, h.get(ePath(h)+"/incidents", op), &page)
		out := map[string]engine.Incident{}
		for _, i := range page.Items {
			out[i.ID] = i
		}
		return out
	}
	got := list()
	is.Equal(len(got), 2)
	is.Equal(got[other.ID], other)
	is.Equal(got[legacyInc.ID], engine.Incident{ID: legacyInc.ID, RunID: legacy.ID, Status: "active", OpenedAt: got[legacyInc.ID].OpenedAt, Unavailable: true})
	is.True(!got[legacyInc.ID].OpenedAt.IsZero())

	h.must(200, h.cancelRun(op, legacy.ID, map[string]any{"reason": "cannot be shown"}), nil)
	got = list()
	is.Equal(got[legacyInc.ID].Status, "resolved")
	is.True(got[legacyInc.ID].Unavailable)
	is.Equal(got[other.ID], other)
}
