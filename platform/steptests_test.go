package platform_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/steptest"
)

// testedDraft is the draft of the step test tests: a side-effecting http
// call (idempotency_key), a read_only one and a person's approval.
const testedDraft = `kind: workflow
id: acme/tested
version: 1
input:
  type: object
  properties:
    base: {type: string}
    subject: {type: string}
steps:
  - id: create
    action: acme/http-create@1
    with: {base: =input.base, subject: =input.subject}
  - id: health
    action: acme/http-status@1
    with: {base: =input.base}
  - id: approve
    human:
      title: ="Approve " + input.subject
      assignees: group:sales
      decisions: [approve, reject]
  - id: done
    succeed:
      result: {}
`

// ticketServer is a loopback http server counting the calls of the
// draft's actions.
type ticketServer struct {
	srv             *httptest.Server
	creates, health atomic.Int64
}

func newTicketServer(t *testing.T) *ticketServer {
	ts := &ticketServer{}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/tickets":
			ts.creates.Add(1)
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"ticketId":"T-1"}`))
		case "/api/health":
			ts.health.Add(1)
			_, _ = w.Write([]byte(`{"ok":true}`))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

// stepHarness starts a daemon on a fake clock with the http actions
// published and the draft saved (revision 1); it answers the draft id.
func stepHarness(t *testing.T) (*harness, *fakeClock, string) {
	clk := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clk))
	op := h.localToken()
	h.mustPublish(op, "actions", httpCreateAction, "st-create")
	h.mustPublish(op, "actions", httpStatusAction, "st-status")
	draft := uuid.NewString()
	h.must(201, h.saveDraft(op, draft, testedDraft, ""), nil)
	return h, clk, draft
}

func (h *harness) putPolicy(tok, calls, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "PUT", path: ePath(h) + "/test-policy", token: tok, hdr: hdr, body: map[string]any{"test_calls": calls}})
}

func (h *harness) stepTest(tok string, body map[string]any) resp {
	h.t.Helper()
	return h.post(ePath(h)+"/step-tests", tok, body)
}

func (h *harness) readStep(tok, id string) steptest.StepTest {
	h.t.Helper()
	var v steptest.StepTest
	h.must(200, h.get(ePath(h)+"/step-tests/"+id, tok), &v)
	return v
}

// waitStep polls a step test until it has status (10 s at most).
func (h *harness) waitStep(tok, id, status string) steptest.StepTest {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := h.readStep(tok, id)
		if v.Status == status {
			return v
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("step test %s is %s, want %s", id, v.Status, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stepBody(draft, kind, step string, more map[string]any) map[string]any {
	b := map[string]any{"kind": kind, "step_id": step, "draft_id": draft, "draft_revision": 1}
	for k, v := range more {
		b[k] = v
	}
	return b
}

func TestTestPolicy(t *testing.T) {
	is := is.New(t)
	h, _, _ := stepHarness(t)
	op := h.localToken()
	path := ePath(h) + "/test-policy"

	// An environment without a policy is disabled at revision 0.
	res := h.get(path, op)
	var p steptest.Policy
	h.must(200, res, &p)
	is.Equal(p.TestCalls, steptest.CallsDisabled)
	is.Equal(p.Revision, int64(0))
	is.Equal(res.header.Get("ETag"), "")

	// The first save sends no If-Match; one naming a revision is a conflict.
	h.problem(409, "PF-REVISION", h.putPolicy(op, "all", "1"))
	res = h.putPolicy(op, "read_only", "")
	h.must(200, res, &p)
	is.Equal(p.Revision, int64(1))
	is.Equal(p.TestCalls, "read_only")
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.Equal(*p.UpdatedBy, h.principalID(op))

	// Later saves need the current revision.
	res = h.putPolicy(op, "all", "")
	h.problem(409, "PF-REVISION", res)
	is.Equal(res.header.Get("ETag"), `"1"`)
	h.problem(409, "PF-REVISION", h.putPolicy(op, "all", `"2"`))
	h.problem(422, "PF-ETAG", h.putPolicy(op, "all", "0"))
	h.problem(422, "PF-ETAG", h.putPolicy(op, "all", `W/"1"`))
	h.problem(422, "PF-VALIDATION", h.putPolicy(op, "everything", "1"))
	h.problem(422, "PF-VALIDATION", h.do(req{method: "PUT", path: path, token: op, hdr: map[string]string{"If-Match": "1"},
		body: map[string]any{"test_calls": "all", "extra": 1}}))
	h.problem(422, "PF-VALIDATION", h.do(req{method: "PUT", path: path, token: op, hdr: map[string]string{"If-Match": "1"}, body: map[string]any{}}))
	h.must(200, h.get(path, op), &p)
	is.Equal(p.Revision, int64(1)) // refusals changed nothing
	h.must(200, h.putPolicy(op, "all", `"1"`), &p)
	is.Equal(p.Revision, int64(2))
	is.Equal(p.TestCalls, "all")

	// step.test is needed (a viewer has none); an unknown environment is 404.
	_, viewer := h.user("viewer-1", "viewer", h.envScope())
	h.problem(403, "PF-FORBIDDEN", h.get(path, viewer))
	h.problem(403, "PF-FORBIDDEN", h.putPolicy(viewer, "disabled", "2"))
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(h.ws.TenantID, h.ws.ProjectID, uuid.NewString())+"/test-policy", op))
}

func TestStepTestSideEffects(t *testing.T) {
	is := is.New(t)
	h, _, draft := stepHarness(t)
	ts := newTicketServer(t)
	op := h.localToken()
	input := map[string]any{"base": ts.srv.URL, "subject": "printer"}
	create := stepBody(draft, "action", "create", map[string]any{"input": input})

	// Disabled (no policy): every step test is refused, nothing is called.
	h.problem(403, "PF-STEPTEST-DISABLED", h.stepTest(op, create))
	h.problem(403, "PF-STEPTEST-DISABLED", h.stepTest(op, stepBody(draft, "action", "health", map[string]any{"input": input})))

	// read_only: the read_only step runs, for real, as a test run.
	h.must(200, h.putPolicy(op, "read_only", ""), nil)
	var c steptest.StepTestCreated
	h.must(200, h.stepTest(op, stepBody(draft, "action", "health", map[string]any{"input": input})), &c)
	is.Equal(c.Status, steptest.StatusRunning)
	is.Equal(c.SideEffect, "read_only")
	v := h.waitStep(op, c.ID, steptest.StatusSucceeded)
	is.True(strings.Contains(string(v.Output), `"ok":true`))
	is.Equal(ts.health.Load(), int64(1))
	var run engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+c.RunID, op), &run)
	is.True(run.Test)

	// A side-effecting step is refused by a read_only policy...
	h.problem(403, "PF-STEPTEST-DISABLED", h.stepTest(op, create))
	// ... and under "all" needs its exact acknowledgment.
	h.must(200, h.putPolicy(op, "all", "1"), nil)
	p := h.problem(409, "PF-STEPTEST-CONFIRM", h.stepTest(op, create))
	is.Equal(p.Diagnostics[0].Path, "/acknowledged_side_effect")
	wrong := stepBody(draft, "action", "create", map[string]any{"input": input, "acknowledged_side_effect": "unsafe"})
	h.problem(409, "PF-STEPTEST-CONFIRM", h.stepTest(op, wrong))
	wrong["acknowledged_side_effect"] = "read_only"
	h.problem(409, "PF-STEPTEST-CONFIRM", h.stepTest(op, wrong))
	// None of the refusals reached the server.
	time.Sleep(100 * time.Millisecond)
	is.Equal(ts.creates.Load(), int64(0))

	create["acknowledged_side_effect"] = "idempotency_key"
	h.must(200, h.stepTest(op, create), &c)
	is.Equal(c.SideEffect, "idempotency_key")
	v = h.waitStep(op, c.ID, steptest.StatusSucceeded)
	is.True(strings.Contains(string(v.Output), `"T-1"`))
	is.Equal(ts.creates.Load(), int64(1))
	is.Equal(v.StepID, "create")
	is.Equal(v.TimeoutSeconds, 300)

	// Test runs stay out of run lists unless include_test=true.
	var page struct{ Items []engine.RunSummary }
	h.must(200, h.get(ePath(h)+"/runs", op), &page)
	for _, r := range page.Items {
		is.True(r.ID != c.RunID)
	}
	h.must(200, h.get(ePath(h)+"/runs?include_test=true", op), &page)
	found := false
	for _, r := range page.Items {
		found = found || (r.ID == c.RunID && r.Test)
	}
	is.True(found)
	// The hidden test versions and activations stay out of the catalog.
	for _, list := range []string{pPath(h) + "/workflows", ePath(h) + "/activations"} {
		res := h.get(list, op)
		h.must(200, res, nil)
		is.True(!strings.Contains(string(res.body), "#test-"))
	}
}

func TestStepTestRequestBounds(t *testing.T) {
	h, _, draft := stepHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "all", ""), nil)
	long := strings.Repeat("s", 201)
	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
		path   string
	}{
		{map[string]any{"kind": "action", "step_id": "health", "draft_id": draft}, 422, "PF-VALIDATION", "/draft_revision"},
		{stepBody(draft, "loop", "health", nil), 422, "PF-VALIDATION", "/kind"},
		{stepBody(draft, "action", "", nil), 422, "PF-VALIDATION", "/step_id"},
		{stepBody(draft, "action", long, nil), 422, "PF-VALIDATION", "/step_id"},
		{stepBody("not-a-uuid", "action", "health", nil), 422, "PF-VALIDATION", "/draft_id"},
		{stepBody(draft, "action", "health", map[string]any{"draft_revision": 0}), 422, "PF-VALIDATION", "/draft_revision"},
		{stepBody(draft, "action", "health", map[string]any{"input": []int{1}}), 422, "PF-VALIDATION", "/input"},
		{stepBody(draft, "action", "health", map[string]any{"timeout_seconds": 301}), 422, "PF-VALIDATION", "/timeout_seconds"},
		{stepBody(draft, "action", "health", map[string]any{"timeout_seconds": -1}), 422, "PF-VALIDATION", "/timeout_seconds"},
		{stepBody(draft, "agent", "health", map[string]any{"timeout_seconds": 901}), 422, "PF-VALIDATION", "/timeout_seconds"},
		// 900 is an agent step's bound: the request passes to the draft.
		{stepBody(draft, "agent", "health", map[string]any{"timeout_seconds": 900}), 422, "PF-STEPTEST-KIND", "/kind"},
		{stepBody(draft, "action", "health", map[string]any{"acknowledged_side_effect": "maybe"}), 422, "PF-VALIDATION", "/acknowledged_side_effect"},
		{stepBody(draft, "action", "health", map[string]any{"tool_mocks": map[string]any{"search": 1}}), 422, "PF-STEPTEST-TOOLS", "/tool_mocks"},
		{stepBody(draft, "action", "health", map[string]any{"connection_bindings": map[string]string{"crm": "x"}}), 422, "PF-VALIDATION", "/connection_bindings/crm"},
		{stepBody(draft, "action", "health", map[string]any{"extra": true}), 422, "PF-VALIDATION", "/extra"},
		{stepBody(uuid.NewString(), "action", "health", nil), 422, "PF-STEPTEST-DRAFT", "/draft_id"},
		{stepBody(draft, "action", "health", map[string]any{"draft_revision": 2}), 422, "PF-STEPTEST-DRAFT", "/draft_revision"},
		{stepBody(draft, "action", "nope", nil), 422, "PF-STEPTEST-STEP", "/step_id"},
		{stepBody(draft, "succeed", "done", nil), 422, "PF-VALIDATION", "/kind"},
		{stepBody(draft, "human", "health", nil), 422, "PF-STEPTEST-KIND", "/kind"},
	} {
		p := h.problem(c.status, c.code, h.stepTest(op, c.body))
		if len(p.Diagnostics) == 0 || p.Diagnostics[0].Path != c.path {
			t.Fatalf("%v: diagnostics %+v, want path %s", c.body, p.Diagnostics, c.path)
		}
	}
	// timeout_seconds 1 and 300 are accepted.
	for _, secs := range []int{1, 300} {
		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, stepBody(draft, "human", "approve", map[string]any{"timeout_seconds": secs, "input": map[string]any{"subject": "x"}})), &c)
		h.must(200, h.post(ePath(h)+"/step-tests/"+c.ID+"/cancel", op, nil), nil)
	}
}

func TestStepTestPeopleCancelAndLimits(t *testing.T) {
	is := is.New(t)
	h, clk, draft := stepHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "read_only", ""), nil)
	approve := stepBody(draft, "human", "approve", map[string]any{"input": map[string]any{"subject": "printer"}})

	var c steptest.StepTestCreated
	h.must(200, h.stepTest(op, approve), &c)
	is.Equal(c.SideEffect, "none")
	v := h.waitStep(op, c.ID, steptest.StatusWaiting)
	is.Equal(len(v.Pending), 1)
	is.Equal(v.Pending[0].Kind, "person")
	is.Equal(v.Pending[0].NodeID, "approve")
	is.Equal(v.Pending[0].InstanceKey, "approve")
	answers := ePath(h) + "/step-tests/" + c.ID + "/answers"
	h.problem(422, "PF-STEPTEST-ANSWER", h.post(answers, op, map[string]any{"instance_key": "other", "confirm": true}))
	h.problem(422, "PF-VALIDATION", h.post(answers, op, map[string]any{"instance_key": "approve"}))
	h.problem(422, "PF-VALIDATION", h.post(answers, op, map[string]any{"instance_key": "", "confirm": true}))

	// Step tests belong to their creator: anyone else gets 404.
	_, dev := h.user("dev-1", "developer", h.envScope())
	h.problem(404, "PF-NOT-FOUND", h.get(ePath(h)+"/step-tests/"+c.ID, dev))
	h.problem(404, "PF-NOT-FOUND", h.post(answers, dev, map[string]any{"instance_key": "approve", "confirm": true}))
	h.problem(404, "PF-NOT-FOUND", h.post(ePath(h)+"/step-tests/"+c.ID+"/cancel", dev, nil))
	h.problem(404, "PF-NOT-FOUND", h.get(ePath(h)+"/step-tests/"+uuid.NewString(), op))
	h.problem(404, "PF-NOT-FOUND", h.get(ePath(h)+"/step-tests/not-a-uuid", op))

	h.must(200, h.post(answers, op, map[string]any{"instance_key": "approve", "confirm": true}), &v)
	v = h.waitStep(op, c.ID, steptest.StatusSucceeded)
	is.True(strings.Contains(string(v.Output), `"decision":"approve"`))
	h.problem(422, "PF-STEPTEST-ENDED", h.post(answers, op, map[string]any{"instance_key": "approve", "confirm": true}))

	// At most 4 live step tests per person: the fifth is 429.
	var live []string
	for range steptest.MaxLivePerCreator {
		h.must(200, h.stepTest(op, approve), &c)
		live = append(live, c.ID)
	}
	h.problem(429, "PF-STEPTEST-BUSY", h.stepTest(op, approve))
	var other steptest.StepTestCreated
	h.must(200, h.putPolicy(op, "read_only", "1"), nil) // policy changes do not end step tests
	h.must(200, h.stepTest(dev, approve), &other)       // another person has their own bound

	// Cancel ends one (again: unchanged), which frees a place.
	cancel := ePath(h) + "/step-tests/" + live[0] + "/cancel"
	h.must(200, h.post(cancel, op, nil), &v)
	is.Equal(v.Status, steptest.StatusCancelled)
	h.must(200, h.post(cancel, op, map[string]any{}), &v)
	is.Equal(v.Status, steptest.StatusCancelled)
	var run engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+v.RunID, op), &run)
	is.Equal(run.Status, "cancelled")
	h.must(200, h.stepTest(op, approve), &c)

	// The time limit, by the injected clock: a person step still waiting
	// at expires_at times out, and its run with it.
	is.Equal(c.ExpiresAt.Sub(clk.Now().UTC().Truncate(time.Millisecond)) <= 300*time.Second, true)
	clk.Set(c.ExpiresAt.Add(time.Second))
	v = h.waitStep(op, c.ID, steptest.StatusTimedOut)
	h.waitRun(op, v.RunID, "timed_out") // the kernel's run timeout
	// One with a one second limit times out a second later.
	h.must(200, h.stepTest(dev, stepBody(draft, "human", "approve", map[string]any{"timeout_seconds": 1, "input": map[string]any{"subject": "y"}})), &c)
	is.Equal(h.readStep(dev, c.ID).Status, steptest.StatusWaiting)
	clk.Set(clk.Now().Add(1500 * time.Millisecond))
	h.waitStep(dev, c.ID, steptest.StatusTimedOut)
}

func TestTestActivations(t *testing.T) {
	is := is.New(t)
	h, clk, draft := stepHarness(t)
	ts := newTicketServer(t)
	op := h.localToken()
	base := ePath(h) + "/test-activations"
	body := map[string]any{"draft_id": draft, "draft_revision": 1}

	h.problem(403, "PF-STEPTEST-DISABLED", h.post(base, op, body))
	h.must(200, h.putPolicy(op, "read_only", ""), nil)
	h.problem(403, "PF-STEPTEST-DISABLED", h.post(base, op, body)) // the draft calls an idempotency_key action
	h.must(200, h.putPolicy(op, "all", "1"), nil)
	h.problem(409, "PF-STEPTEST-CONFIRM", h.post(base, op, body))
	body["acknowledged_side_effect"] = "idempotency_key"
	for secs, status := range map[int]int{-1: 422, 3601: 422} {
		b := map[string]any{"draft_id": draft, "draft_revision": 1, "acknowledged_side_effect": "idempotency_key", "expires_in_seconds": secs}
		h.problem(status, "PF-VALIDATION", h.post(base, op, b))
	}
	h.problem(422, "PF-TESTACTIVATION-DRAFT", h.post(base, op, map[string]any{"draft_id": draft, "draft_revision": 5}))
	h.problem(422, "PF-VALIDATION", h.post(base, op, map[string]any{"draft_id": draft, "draft_revision": 1, "input_defaults": "x"}))

	var long steptest.TestActivation
	h.must(201, h.post(base, op, map[string]any{"draft_id": draft, "draft_revision": 1, "acknowledged_side_effect": "idempotency_key",
		"expires_in_seconds": 3600}), &long)
	is.Equal(long.ExpiresAt.Sub(long.CreatedAt), time.Hour)
	var ta steptest.TestActivation
	h.must(201, h.post(base, op, body), &ta)
	is.Equal(ta.SideEffect, "idempotency_key")
	is.Equal(ta.Status, steptest.ActivationActive)
	is.Equal(ta.ExpiresAt.Sub(ta.CreatedAt), 900*time.Second)
	is.True(strings.HasPrefix(ta.ArtifactDigest, "sha256:"))

	// Test runs: test: true, left out of run lists by default.
	var run engine.Run
	h.must(201, h.post(base+"/"+ta.ID+"/runs", op, map[string]any{"input": map[string]any{"base": ts.srv.URL, "subject": "a"}}), &run)
	is.True(run.Test)
	is.Equal(run.Activation.ID, ta.ActivationID)
	h.waitRun(op, run.ID, "waiting") // at the approval
	is.Equal(ts.creates.Load(), int64(1))
	var page struct{ Items []engine.RunSummary }
	h.must(200, h.get(ePath(h)+"/runs", op), &page)
	is.Equal(len(page.Items), 0)
	h.must(200, h.get(ePath(h)+"/runs?include_test=true", op), &page)
	is.Equal(len(page.Items), 1)
	h.problem(422, "PF-VALIDATION", h.post(base+"/"+ta.ID+"/runs", op, map[string]any{"input": "x"}))

	// Listen: signed requests start a test run each.
	h.problem(422, "PF-VALIDATION", h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "mine"}))
	h.problem(422, "PF-VALIDATION", h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "new", "max_body_bytes": 1<<20 + 1}))
	h.problem(422, "PF-VALIDATION", h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "new", "tolerance_seconds": 3601}))
	h.problem(422, "PF-TESTACTIVATION-SECRET", h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "trigger:" + uuid.NewString()}))
	var l steptest.Listen
	h.must(201, h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "new", "max_body_bytes": 64, "tolerance_seconds": 60}), &l)
	is.True(strings.HasPrefix(l.Secret, "whsec_"))
	is.Equal(l.ExpiresAt, ta.ExpiresAt)
	now := clk.Now()
	in := []byte(`{"base":"` + ts.srv.URL + `","subject":"b"}`)
	var dl steptest.TestDelivery
	h.must(200, h.deliver(l.TestURL, signed(t, l.Secret, "msg_1", now, in)), &dl)
	is.Equal(dl.Replayed, false)
	h.waitRun(op, dl.RunID, "waiting")
	var again steptest.TestDelivery
	h.must(200, h.deliver(l.TestURL, signed(t, l.Secret, "msg_1", now, in)), &again)
	is.Equal(again.RunID, dl.RunID)
	is.True(again.Replayed)
	is.Equal(h.refused(h.deliver(l.TestURL, signed(t, "whsec_"+strings.Repeat("A", 43)+"=", "msg_2", now, in))), "bad_signature")
	is.Equal(h.refused(h.deliver(l.TestURL, signed(t, l.Secret, "msg_2", now.Add(-61*time.Second), in))), "timestamp_out_of_tolerance")
	big := []byte(`{"base":"` + strings.Repeat("x", 64) + `"}`)
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.deliver(l.TestURL, signed(t, l.Secret, "msg_3", now, big)))
	h.problem(422, "PF-VALIDATION", h.deliver(l.TestURL, signed(t, l.Secret, "msg_4", now, []byte(`[1]`))))
	h.problem(404, "PF-NOT-FOUND", h.deliver("/test-webhooks/"+uuid.NewString(), signed(t, l.Secret, "msg_5", now, in)))
	h.must(200, h.get(ePath(h)+"/runs?include_test=true", op), &page)
	is.Equal(len(page.Items), 2)

	// A trigger's secret can sign test deliveries too.
	act := setupFlow(h)
	tr := h.mustCreateTrigger(op, map[string]any{"activation_id": act})
	var tl steptest.Listen
	h.must(201, h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "trigger:" + tr.ID}), &tl)
	is.Equal(tl.Secret, "")
	h.must(200, h.deliver(tl.TestURL, signed(t, tr.Secret, "msg_6", now, in)), &dl)

	// Test activations belong to their creator.
	_, dev := h.user("dev-2", "developer", h.envScope())
	h.problem(404, "PF-NOT-FOUND", h.post(base+"/"+ta.ID+"/runs", dev, map[string]any{}))
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: base + "/" + ta.ID, token: dev}))

	// Expiry (injected clock): 410, routes removed, test runs readable.
	clk.Set(ta.ExpiresAt)
	h.problem(410, "PF-TESTACTIVATION-EXPIRED", h.post(base+"/"+ta.ID+"/runs", op, map[string]any{}))
	h.problem(410, "PF-TESTACTIVATION-EXPIRED", h.post(base+"/"+ta.ID+"/listen", op, map[string]any{"secret_ref": "new"}))
	h.problem(410, "PF-TESTACTIVATION-EXPIRED", h.do(req{method: "DELETE", path: base + "/" + ta.ID, token: op}))
	h.problem(404, "PF-NOT-FOUND", h.deliver(l.TestURL, signed(t, l.Secret, "msg_7", clk.Now(), in)))
	h.must(200, h.get(ePath(h)+"/runs/"+dl.RunID, op), nil)
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), nil)

	// DELETE ends the other one now; then it is gone (404).
	var del steptest.TestActivation
	h.must(200, h.do(req{method: "DELETE", path: base + "/" + long.ID, token: op}), &del)
	is.Equal(del.Status, steptest.ActivationDeleted)
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "DELETE", path: base + "/" + long.ID, token: op}))
	h.problem(404, "PF-NOT-FOUND", h.post(base+"/"+long.ID+"/runs", op, map[string]any{}))

	// A restart keeps all of it.
	h.restart(true)
	op = h.localToken()
	h.problem(410, "PF-TESTACTIVATION-EXPIRED", h.post(base+"/"+ta.ID+"/runs", op, map[string]any{}))
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), nil)
	var p steptest.Policy
	h.must(200, h.get(ePath(h)+"/test-policy", op), &p)
	is.Equal(p.Revision, int64(2))
	_ = json.Valid
}

func TestStepTestBoundsOfActivationsAndEnvironment(t *testing.T) {
	is := is.New(t)
	h, _, draft := stepHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "all", ""), nil)
	base := ePath(h) + "/test-activations"
	body := func(secs int) map[string]any {
		return map[string]any{"draft_id": draft, "draft_revision": 1, "acknowledged_side_effect": "idempotency_key", "expires_in_seconds": secs}
	}
	// expires_in_seconds 1..3600: both ends accepted, 0 is the default.
	var ta steptest.TestActivation
	h.must(201, h.post(base, op, body(1)), &ta)
	is.Equal(ta.ExpiresAt.Sub(ta.CreatedAt), time.Second)
	h.must(201, h.post(base, op, body(0)), &ta)
	is.Equal(ta.ExpiresAt.Sub(ta.CreatedAt), 900*time.Second)
	h.problem(422, "PF-VALIDATION", h.post(base, op, body(3601)))
	// listen bounds: max_body_bytes 1..1048576, tolerance_seconds 1..3600.
	listen := base + "/" + ta.ID + "/listen"
	for _, ok := range []map[string]any{{"max_body_bytes": 1}, {"max_body_bytes": 1 << 20}, {"tolerance_seconds": 1}, {"tolerance_seconds": 3600}} {
		ok["secret_ref"] = "new"
		var l steptest.Listen
		h.must(201, h.post(listen, op, ok), &l)
	}
	for _, bad := range []map[string]any{{"max_body_bytes": -1}, {"tolerance_seconds": -1}, {"secret_ref": "trigger:nope"}, {}} {
		if _, ok := bad["secret_ref"]; !ok && len(bad) > 0 {
			bad["secret_ref"] = "new"
		}
		h.problem(422, "PF-VALIDATION", h.post(listen, op, bad))
	}

	// At most 16 live step tests per environment (4 per person).
	approve := stepBody(draft, "human", "approve", map[string]any{"input": map[string]any{"subject": "x"}})
	for i := range steptest.MaxLivePerEnvironment / steptest.MaxLivePerCreator {
		_, tok := h.user("bound-"+string(rune('a'+i)), "developer", h.envScope())
		for range steptest.MaxLivePerCreator {
			h.must(200, h.stepTest(tok, approve), nil)
		}
	}
	_, last := h.user("bound-last", "developer", h.envScope())
	h.problem(429, "PF-STEPTEST-BUSY", h.stepTest(last, approve))
}
