package platform_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
)

// httpDef is a definition of the http adapter tests: an action bound to
// the built-in http adapter, or a workflow, whose input names the base URL
// of an httptest server (base) and more properties; body follows.
func httpDef(kind, id, props, body string) string {
	return "kind: " + kind + "\nid: " + id + "\nversion: 1\ninput:\n  type: object\n  required: [base]\n  properties:\n" +
		"    base: {type: string}\n" + props + body
}

// httpAction is an action of the http adapter tests: spec, then a call of
// method on path under base with more config.
func httpAction(id, props, spec, method, path, more string) string {
	return httpDef("action", id, props, spec+"connector: http\nconfig:\n  method: "+method+"\n  url: =input.base + \""+path+"\"\n"+more)
}

// Definitions of the http adapter tests, one workflow per behaviour.
var (
	// httpCreateAction declares an output schema without status, headers
	// or body: its output is the response body.
	httpCreateAction = httpAction("acme/http-create", "    subject: {type: string}\n", `sideEffect: idempotency_key
output:
  type: object
  required: [ticketId]
  properties:
    ticketId: {type: string}
`, "POST", "/api/tickets", `  query: {source: workflow}
  headers: {X-Subject: =input.subject}
  body:
    subject: =input.subject
    priority: normal
`)
	// httpStatusAction's output schema names status: its output is the
	// envelope.
	httpStatusAction = httpAction("acme/http-status", "", `sideEffect: read_only
output:
  type: object
  required: [status]
  properties:
    status: {type: integer}
    body: {}
`, "GET", "/api/health", "")
	httpFlow = httpDef("workflow", "acme/http-flow", "    subject: {type: string}\n", `output:
  type: object
  properties:
    ticketId: {type: string}
    status: {type: integer}
    healthy: {type: boolean}
steps:
  - id: create
    action: acme/http-create@1
    with: {base: =input.base, subject: =input.subject}
  - id: health
    action: acme/http-status@1
    with: {base: =input.base}
  - id: done
    succeed:
      result:
        ticketId: =steps.create.output.ticketId
        status: =steps.health.output.status
        healthy: =steps.health.output.body.ok
`)
	// httpChargeAction is unsafe: an attempt that times out is ambiguous.
	httpChargeAction = httpAction("acme/http-charge", "", `sideEffect: unsafe
output: {type: object}
timeout: 1s
retry: {maxAttempts: 1}
`, "POST", "/charge", "  body: {amount: 10}\n")
	httpChargeFlow = httpDef("workflow", "acme/http-charge-flow", "", `steps:
  - id: charge
    action: acme/http-charge@1
    with: {base: =input.base}
`)
	// httpSyncAction is safe to repeat: a 500 is retried by the policy.
	httpSyncAction = httpAction("acme/http-sync", "", `sideEffect: idempotent
output:
  type: object
  properties:
    synced: {type: integer}
retry: {maxAttempts: 2, initialInterval: 50ms}
`, "PUT", "/sync", "")
	httpSyncFlow = httpDef("workflow", "acme/http-sync-flow", "", `output:
  type: object
  properties:
    synced: {type: integer}
steps:
  - id: sync
    action: acme/http-sync@1
    with: {base: =input.base}
  - id: done
    succeed:
      result: {synced: =steps.sync.output.synced}
`)
)

// activateHTTP publishes actions and workflow and activates the workflow.
func (h *harness) activateHTTP(name, workflow string, actions ...string) string {
	h.t.Helper()
	op := h.localToken()
	for i, a := range actions {
		h.mustPublish(op, "actions", a, name+"-action-"+string(rune('a'+i)))
	}
	wf := h.mustPublish(op, "workflows", workflow, name+"-workflow").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, name+"-activation", "").ID
}

// onlyIncident answers the single incident of run id.
func (h *harness) onlyIncident(tok, id string) engine.Incident {
	h.t.Helper()
	var incs []engine.Incident
	h.must(200, h.get(ePath(h)+"/runs/"+id+"/incidents", tok), &incs)
	if len(incs) != 1 {
		h.t.Fatalf("run %s has %d incidents, want 1: %+v", id, len(incs), incs)
	}
	return incs[0]
}

// An http workflow succeeds with outputs mapped by each action's output
// schema: the body alone, or the envelope.
func TestHTTPAdapterSucceeds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	var created atomic.Pointer[http.Request]
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/tickets":
			b, _ := io.ReadAll(r.Body)
			body.Store(string(b))
			if r.Header.Get("X-Subject") == "broken" {
				_, _ = io.WriteString(w, `{"ticketId":42}`) // not the declared output
				return
			}
			created.Store(r.Clone(r.Context()))
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"ticketId":"T-42","extra":[1,2]}`)
		case "/api/health":
			_, _ = io.WriteString(w, `{"ok":true}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	act := h.activateHTTP("http-flow", httpFlow, httpCreateAction, httpStatusAction)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"base": srv.URL, "subject": "printer"}}, "http-flow-1")
	done := h.waitRun(op, run.ID, "succeeded")
	var out map[string]any
	is.NoErr(json.Unmarshal(done.State.Output, &out))
	is.Equal(out, map[string]any{"ticketId": "T-42", "status": 200.0, "healthy": true})
	r := created.Load()
	is.True(r != nil)
	is.Equal(r.Method, "POST")
	is.Equal(r.URL.RawQuery, "source=workflow")
	is.Equal(r.Header.Get("X-Subject"), "printer")
	is.Equal(r.Header.Get("Content-Type"), "application/json")
	is.True(r.Header.Get("Idempotency-Key") != "")
	is.Equal(body.Load(), `{"priority":"normal","subject":"printer"}`)

	// A response the pinned output schema refuses fails the step for good.
	run = h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"base": srv.URL, "subject": "broken"}}, "http-flow-2")
	h.waitRun(op, run.ID, "suspended")
	inc := h.onlyIncident(op, run.ID)
	is.Equal(inc.Code, "PF-TASK-FAILED")
	is.Equal(inc.NodeID, "create")
	is.Equal(inc.Error.Code, "OUTPUT_INVALID")
}

// An unsafe call that outlives its attempt's timeout has an unknown
// outcome: an ambiguous incident, and the call is not repeated.
func TestHTTPAdapterTimeoutAmbiguous(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select { // hang past the attempt's timeout
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	act := h.activateHTTP("http-charge", httpChargeFlow, httpChargeAction)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"base": srv.URL}}, "http-charge-1")
	h.waitRun(op, run.ID, "suspended")
	inc := h.onlyIncident(op, run.ID)
	is.Equal(inc.Code, "PF-TASK-AMBIGUOUS")
	is.Equal(inc.NodeID, "charge")
	is.Equal(inc.SideEffect, "unsafe")
	is.True(!inc.RetrySafe)
	// Never repeated: the server saw exactly one request.
	time.Sleep(300 * time.Millisecond)
	is.Equal(hits.Load(), int64(1))
	h.waitRun(op, run.ID, "suspended")
}

// A safe call answered 500 is retried by the policy until its attempts are
// used up; retry_safe after the server recovered completes the run.
func TestHTTPAdapterRetrySafe(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	var hits atomic.Int64
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if !healthy.Load() {
			w.Header().Set("Authorization", "Bearer s3cret")
			http.Error(w, "database is down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"synced":3}`)
	}))
	defer srv.Close()
	act := h.activateHTTP("http-sync", httpSyncFlow, httpSyncAction)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"base": srv.URL}}, "http-sync-1")
	h.waitRun(op, run.ID, "suspended")
	inc := h.onlyIncident(op, run.ID)
	is.Equal(inc.Code, "PF-TASK-RETRIES-EXHAUSTED")
	is.Equal(inc.Attempt, 2)
	is.True(inc.RetrySafe)
	is.Equal(inc.Error.Code, "HTTP_500")
	is.Equal(inc.Error.Message, "the server answered 500 Internal Server Error: database is down")
	is.Equal(hits.Load(), int64(2)) // maxAttempts

	healthy.Store(true)
	var res engine.Resolved
	h.must(200, h.resolveIncident(op, inc.ID, `"1"`, map[string]any{"receipt_id": "0190a0b0-0000-7000-8000-0000000000a1",
		"kind": "retry_safe", "reason": "the database is back"}), &res)
	is.Equal(res.Incident.Status, "resolved")
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"synced":3}`)
	is.Equal(hits.Load(), int64(3))
}

// Cancelling a run cuts its call in flight (after the cancellation has
// committed): the server sees the request end, and the run's state says
// the call may still have had an effect.
func TestCancelCutsCallInFlight(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	arrived, cut := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a closed connection only after the body
		arrived <- struct{}{}
		<-r.Context().Done()
		cut <- struct{}{}
	}))
	defer srv.Close()
	defer srv.CloseClientConnections() // a failing test must not hang in Close
	// A long attempt timeout: only the cancellation can cut the call.
	slowCharge := httpAction("acme/http-charge", "", `sideEffect: unsafe
output: {type: object}
timeout: 1m
retry: {maxAttempts: 1}
`, "POST", "/charge", "  body: {amount: 10}\n")
	act := h.activateHTTP("http-cut", httpChargeFlow, slowCharge)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"base": srv.URL}}, "http-cut-1")
	select {
	case <-arrived:
	case <-time.After(30 * time.Second): // generous: free when it passes, room for a loaded -race run
		t.Fatal("the call never arrived")
	}
	var r engine.Run
	h.must(200, h.cancelRun(op, run.ID, map[string]any{"reason": "stop the charge"}), &r)
	is.Equal(r.Status, "cancelled")
	is.Equal(*r.ExternalEffectsMayContinue, true)
	select {
	case <-cut:
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight was not cut")
	}
}
