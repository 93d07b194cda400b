package platform_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/sim"
)

// humanWorkflow needs no definitions: a person decides, then it ends.
const humanWorkflow = `kind: workflow
id: acme/review
version: 1
output:
  type: object
  properties:
    decision: {type: string}
steps:
  - id: review
    human:
      title: Review
      assignees: ["group:finance"]
      form:
        type: object
        properties:
          note: {type: string}
      decisions: [approve, reject]
  - id: done
    succeed:
      result:
        decision: =steps.review.output.decision
`

// debugFixture publishes the flow workflow's actions and compiles the
// test workflows against the project's catalog.
type debugFixture struct {
	h                          *harness
	op                         string
	flow, approval, human, big json.RawMessage
}

func newDebugFixture(t testing.TB, opts ...harnessOption) *debugFixture {
	h := newHarness(t, opts...)
	f := &debugFixture{h: h, op: h.localToken()}
	h.mustPublish(f.op, "actions", platformtest.GreetAction, "g")
	h.mustPublish(f.op, "actions", platformtest.NothingAction, "n")
	var steps strings.Builder
	for i := range 60 {
		fmt.Fprintf(&steps, "  - id: s%d\n    set:\n      n: =vars.n + 1\n", i)
	}
	big := "kind: workflow\nid: acme/big\nversion: 1\nvars:\n  n: {type: integer, default: 0}\nsteps:\n" + steps.String()
	for _, w := range []struct {
		dst *json.RawMessage
		src string
	}{{&f.flow, platformtest.FlowWorkflow}, {&f.approval, platformtest.ApprovalWorkflow}, {&f.human, humanWorkflow}, {&f.big, big}} {
		var res struct {
			OK       bool            `json:"ok"`
			Artifact json.RawMessage `json:"artifact"`
		}
		h.must(200, h.post(pPath(h)+"/compiler/compile", f.op, catalog.CompileRequest{Source: w.src, Format: "yaml"}), &res)
		if !res.OK {
			t.Fatalf("does not compile: %s", w.src)
		}
		*w.dst = res.Artifact
	}
	return f
}

const greetMocks = `{"action:acme/greet@1":{"output":{"name":"Ada"}},"node:nothing":{"output":{}}}`

func (f *debugFixture) create(tok string, artifact json.RawMessage, input, mocks string) resp {
	body := map[string]any{"artifact": artifact, "input": json.RawMessage(input), "mocks": json.RawMessage(mocks)}
	return f.h.post(pPath(f.h)+"/debug/sessions", tok, body)
}

func (f *debugFixture) mustCreate(tok string, artifact json.RawMessage, input, mocks string) sim.SessionBody {
	f.h.t.Helper()
	var s sim.SessionBody
	r := f.create(tok, artifact, input, mocks)
	f.h.must(201, r, &s)
	if r.header.Get("ETag") != `"1"` || s.Revision != 1 {
		f.h.t.Fatalf("ETag %q revision %d", r.header.Get("ETag"), s.Revision)
	}
	return s
}

func (f *debugFixture) command(tok, id string, rev int64, cmd string) resp {
	return f.h.do(req{method: "POST", path: pPath(f.h) + "/debug/sessions/" + id + "/commands", token: tok,
		hdr: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, rev)}, body: []byte(cmd)})
}

func (f *debugFixture) mustCommand(tok string, s *sim.SessionBody, cmd string) {
	f.h.t.Helper()
	r := f.command(tok, s.ID, s.Revision, cmd)
	prev := s.Revision
	f.h.must(200, r, s)
	if s.Revision != prev+1 || r.header.Get("ETag") != fmt.Sprintf(`"%d"`, prev+1) {
		f.h.t.Fatalf("%s: revision %d ETag %q after %d", cmd, s.Revision, r.header.Get("ETag"), prev)
	}
}

func TestDebugSessionLifecycle(t *testing.T) {
	f := newDebugFixture(t)
	h, op := f.h, f.op
	s := f.mustCreate(op, f.flow, `{"name":"Ada"}`, greetMocks)
	v := s.View
	if v.Status != sim.StatusQueued || v.SelectedNode == nil || *v.SelectedNode != "greet" || v.Now.IsZero() ||
		s.ExpiresAt.Sub(s.CreatedAt) != time.Hour || len(v.Events) != 1 || v.Boundary == nil || v.Boundary.Kind != "start" {
		t.Fatalf("created: %+v", s)
	}
	var got sim.SessionBody
	r := h.get(pPath(h)+"/debug/sessions/"+s.ID, op)
	h.must(200, r, &got)
	if got.Revision != 1 || r.header.Get("ETag") != `"1"` {
		t.Fatalf("read: %+v", got)
	}
	f.mustCommand(op, &s, `{"breakpoints":{"node_ids":["route"]}}`)
	f.mustCommand(op, &s, `{"next":{}}`)
	if s.View.Status != sim.StatusPaused || *s.View.SelectedNode != "nothing" || string(s.View.Variables.Steps["greet"]) != `{"name":"Ada"}` {
		t.Fatalf("next: %+v", s.View)
	}
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusPaused || s.View.Boundary.Kind != "breakpoint" || *s.View.SelectedNode != "route" ||
		string(s.View.Variables.Vars["count"]) != "1" || len(s.View.Boundaries) != 1 || s.View.Boundaries[0].MockKey != "node:nothing" {
		t.Fatalf("continue to the breakpoint: %+v", s.View)
	}
	// stale and missing If-Match
	h.problem(409, sim.CodeRevision, f.command(op, s.ID, s.Revision-1, `{"next":{}}`))
	h.problem(422, "PF-ETAG", h.post(pPath(h)+"/debug/sessions/"+s.ID+"/commands", op, json.RawMessage(`{"next":{}}`)))
	for _, bad := range []string{`{}`, `{"next":{},"continue":{}}`, `{"jump":{}}`, `[1]`, `{"advance_time":{"seconds":1.5}}`, `{"breakpoints":{}}`} {
		h.problem(422, sim.CodeCommand, f.command(op, s.ID, s.Revision, bad))
	}
	h.problem(422, sim.CodeBreakpoint, f.command(op, s.ID, s.Revision, `{"breakpoints":{"node_ids":["nowhere"]}}`))
	h.problem(422, sim.CodeTime, f.command(op, s.ID, s.Revision, `{"advance_time":{"seconds":-1}}`))
	h.problem(422, sim.CodeSignal, f.command(op, s.ID, s.Revision, `{"signal":{"name":"nope","payload":{}}}`))
	h.problem(422, sim.CodeHumanTask, f.command(op, s.ID, s.Revision, `{"human_decision":{"name":"greet","payload":{"decision":"x"}}}`))
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSucceeded || string(s.View.Variables.Output) != `{"count":1,"greeting":"hello Ada"}` || s.View.SelectedNode != nil {
		t.Fatalf("end: %+v", s.View)
	}
	h.problem(422, sim.CodeState, f.command(op, s.ID, s.Revision, `{"next":{}}`))

	// Restart: the session is stored.
	h.restart(true)
	op = h.localToken()
	h.must(200, h.get(pPath(h)+"/debug/sessions/"+s.ID, op), &got)
	if got.Revision != s.Revision || got.View.Status != sim.StatusSucceeded {
		t.Fatalf("after restart: %+v", got)
	}
}

func TestDebugSessionWaits(t *testing.T) {
	f := newDebugFixture(t)
	h, op := f.h, f.op
	// A signal accepted before its deadline succeeds; after advancing to
	// the deadline the signal is too late and continue times out.
	s := f.mustCreate(op, f.approval, `{}`, `{}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusWaiting || s.View.Boundary.Waits[0].Signal != "order.approved" {
		t.Fatalf("%+v", s.View)
	}
	h.problem(422, sim.CodeSignal, f.command(op, s.ID, s.Revision, `{"signal":{"name":"order.approved","payload":{"who":1}}}`))
	f.mustCommand(op, &s, `{"advance_time":{"seconds":3599}}`)
	f.mustCommand(op, &s, `{"signal":{"name":"order.approved","payload":{"approver":"Bo"}}}`)
	if s.View.Status != sim.StatusWaiting {
		t.Fatalf("a signal does not advance the graph: %s", s.View.Status)
	}
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSucceeded || string(s.View.Variables.Output) != `{"approver":"Bo"}` {
		t.Fatalf("%+v", s.View)
	}

	s = f.mustCreate(op, f.approval, `{}`, `{}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	f.mustCommand(op, &s, `{"advance_time":{"seconds":3600}}`)
	h.problem(422, sim.CodeSignal, f.command(op, s.ID, s.Revision, `{"signal":{"name":"order.approved","payload":{"approver":"Bo"}}}`))
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusTimedOut {
		t.Fatalf("%+v", s.View)
	}

	s = f.mustCreate(op, f.human, `{}`, `{}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusWaiting || s.View.Boundary.Waits[0].Kind != "human" {
		t.Fatalf("%+v", s.View)
	}
	h.problem(422, sim.CodeHumanTask, f.command(op, s.ID, s.Revision, `{"human_decision":{"name":"review","payload":{"decision":"maybe"}}}`))
	f.mustCommand(op, &s, `{"human_decision":{"name":"review","payload":{"decision":"approve","data":{"note":"ok"}}}}`)
	if s.View.Status != sim.StatusWaiting {
		t.Fatalf("a decision does not advance the graph: %s", s.View.Status)
	}
	f.mustCommand(op, &s, `{"next":{}}`)
	if s.View.Status != sim.StatusSucceeded || string(s.View.Variables.Output) != `{"decision":"approve"}` {
		t.Fatalf("%+v", s.View)
	}

	// A failure the action's policy does not retry opens an incident: the
	// session is suspended (boundary incident) and stays so.
	s = f.mustCreate(op, f.flow, `{"name":"Ada"}`, `{"action:acme/greet@1":{"error":{"code":"BROKEN","message":"no"}},"node:nothing":{"output":{}}}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSuspended || s.View.Boundary.Kind != "incident" {
		t.Fatalf("%+v", s.View)
	}
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSuspended {
		t.Fatalf("%+v", s.View)
	}
	// A retryable failure is retried after the backoff (the virtual clock
	// moves to it), then the second outcome answers.
	s = f.mustCreate(op, f.flow, `{"name":"Ada"}`, `{"action:acme/greet@1":[{"error":{"code":"BUSY"},"retryable":true},{"output":{"name":"Ada"}}],"node:nothing":{"output":{}}}`)
	start := s.View.Now
	f.mustCommand(op, &s, `{"continue":{}}`)
	failed := 0
	for _, e := range s.View.Events {
		if e.Kind == "task_failed" {
			failed++
		}
	}
	if s.View.Status != sim.StatusSucceeded || failed != 1 || !s.View.Now.After(start) {
		t.Fatalf("%+v", s.View)
	}

	// A mocked call whose request violates its action's input schema
	// fails the session (PF-VALIDATION): production would send it.
	var loose struct {
		OK       bool            `json:"ok"`
		Artifact json.RawMessage `json:"artifact"`
	}
	h.must(200, h.post(pPath(h)+"/compiler/compile", op, catalog.CompileRequest{Format: "yaml", Source: `kind: workflow
id: acme/loose
version: 1
input: {type: object}
steps:
  - id: greet
    action: acme/greet@1
    with: {name: =input.n}
`}), &loose)
	if !loose.OK {
		t.Fatal("the loose workflow does not compile")
	}
	s = f.mustCreate(op, loose.Artifact, `{"n":7}`, `{"action:acme/greet@1":{"output":{"name":"Ada"}}}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusFailed || s.View.Diagnostics[0].Code != "PF-VALIDATION" || s.View.Diagnostics[0].NodeID != "greet" {
		t.Fatalf("%+v", s.View)
	}
	s = f.mustCreate(op, loose.Artifact, `{"n":"Ada"}`, `{"action:acme/greet@1":{"output":{"name":"Ada"}}}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSucceeded {
		t.Fatalf("%+v", s.View)
	}

	// A missing mock fails the session.
	s = f.mustCreate(op, f.flow, `{"name":"Ada"}`, `{}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusFailed || s.View.Diagnostics[0].Code != sim.CodeMissingMock {
		t.Fatalf("%+v", s.View)
	}
}

func TestDebugSessionCreateRefusals(t *testing.T) {
	f := newDebugFixture(t)
	h, op := f.h, f.op
	P := pPath(h) + "/debug/sessions"
	h.problem(401, "PF-UNAUTHENTICATED", h.post(P, "", map[string]any{"artifact": f.flow}))
	h.problem(422, sim.CodeRequest, h.post(P, op, map[string]any{"input": map[string]any{}}))
	h.problem(422, "PF-VALIDATION", h.post(P, op, map[string]any{"artifact": f.flow, "extra": 1}))
	h.problem(422, sim.CodeRequest, h.post(P, op, map[string]any{"artifact": f.flow, "now": "yesterday"}))
	h.problem(422, sim.CodeRequest, h.post(P, op, map[string]any{"artifact": map[string]any{"format": "x"}}))
	h.problem(422, sim.CodeRequest, f.create(op, f.flow, `{}`, greetMocks)) // name is required
	for _, in := range []string{`"x"`, `[1]`, `null`, `3`} {                // a run's input is an object, as POST E/runs requires
		h.problem(422, sim.CodeRequest, h.post(P, op, map[string]any{"artifact": f.human, "input": json.RawMessage(in)}))
	}
	h.problem(422, sim.CodeMockKey, f.create(op, f.flow, `{"name":"a"}`, `{"action:acme/other@1":{"output":{}}}`))
	h.problem(422, sim.CodeMockKey, f.create(op, f.flow, `{"name":"a"}`, `{"tool:search":{"output":{}}}`))
	// Tool calls of a simulated agent are an editor host mock.
	h.problem(422, sim.CodeRequest, f.create(op, f.flow, `{"name":"a"}`, `{"node:greet":{"output":{"name":"a"},"toolCalls":[{"tool":"acme/greet@1","input":{}}]}}`))
	h.problem(422, sim.CodeMockOutput, f.create(op, f.flow, `{"name":"a"}`, `{"action:acme/greet@1":{"output":{"name":7}}}`))
	h.problem(422, sim.CodeRequest, f.create(op, f.flow, `{"name":"a"}`, `{"action:acme/greet@1":{"output":{},"error":{"code":"X"}}}`))
	p := h.problem(422, sim.CodeSecretValue, f.create(op, f.flow, `{"name":"a","apiKey":"k"}`, greetMocks))
	if len(p.Diagnostics) != 1 || p.Diagnostics[0].Path != "/input/apiKey" {
		t.Fatalf("%+v", p)
	}
	// An artifact compiled against another catalog (unknown published id).
	other := strings.Replace(string(f.flow), `"publishedVersionId":"`, `"publishedVersionId":"0`, 1)
	other = strings.Replace(other, `"publishedVersionId":"00`, `"publishedVersionId":"1`, 1)
	h.problem(422, sim.CodeRequest, f.create(op, json.RawMessage(other), `{"name":"a"}`, greetMocks))
	h.problem(404, "PF-NOT-FOUND", h.post("/api/v1/tenants/"+h.ws.TenantID+"/projects/00000000-0000-4000-8000-000000000000/debug/sessions", op, map[string]any{"artifact": f.flow}))

	// Ownership: another developer gets 404; a viewer 403.
	s := f.mustCreate(op, f.flow, `{"name":"Ada"}`, greetMocks)
	_, dev := h.user("dev", "developer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID})
	_, viewer := h.user("viewer", "viewer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID})
	h.problem(404, "PF-NOT-FOUND", h.get(P+"/"+s.ID, dev))
	h.problem(404, "PF-NOT-FOUND", f.command(dev, s.ID, 1, `{"next":{}}`))
	h.problem(403, "PF-FORBIDDEN", h.get(P+"/"+s.ID, viewer))
	h.problem(403, "PF-FORBIDDEN", f.create(viewer, f.flow, `{"name":"a"}`, greetMocks))
	f.mustCreate(dev, f.flow, `{"name":"Ada"}`, greetMocks) // a developer holds simulate
	h.problem(404, "PF-NOT-FOUND", h.get(P+"/not-a-uuid", op))
	h.problem(404, "PF-NOT-FOUND", h.get(P+"/00000000-0000-4000-8000-000000000000", op))
}

// TestDebugSessionLimits checks every session limit at and past its bound
// with shrunk limits and a fake clock.
func TestDebugSessionLimits(t *testing.T) {
	clock := &fakeClock{t: clockStart()}
	lim := sim.DefaultLimits()
	lim.Lifetime, lim.Retention = 2*time.Minute, time.Minute
	lim.LivePerCreator, lim.LivePerProject, lim.RetainedPerProject = 2, 3, 5
	lim.Reductions = 40
	lim.VirtualTime = 2 * time.Hour
	lim.PendingSignals = 2
	f := newDebugFixture(t, withClock(clock), func(h *harness) { h.simLimits = &lim })
	h, op := f.h, f.op
	_, dev := h.user("dev", "developer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID})

	// Live per creator: 2 is fine, the third is refused; an ended session
	// is not live.
	a := f.mustCreate(op, f.approval, `{}`, `{}`)
	b := f.mustCreate(op, f.approval, `{}`, `{}`)
	r := f.create(op, f.approval, `{}`, `{}`)
	h.problem(429, sim.CodeCapacity, r)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	f.mustCommand(op, &b, `{"continue":{}}`)
	f.mustCommand(op, &b, `{"advance_time":{"seconds":3600}}`)
	f.mustCommand(op, &b, `{"continue":{}}`) // timed_out: no longer live
	c := f.mustCreate(op, f.approval, `{}`, `{}`)
	// Live per project: 3 (a, c, and one of dev's).
	f.mustCreate(dev, f.approval, `{}`, `{}`)
	h.problem(429, sim.CodeCapacity, f.create(dev, f.approval, `{}`, `{}`))

	// Virtual time: 2 hours in all, at and past the bound.
	f.mustCommand(op, &c, `{"advance_time":{"seconds":7200}}`)
	h.problem(422, sim.CodeTime, f.command(op, c.ID, c.Revision, `{"advance_time":{"seconds":1}}`))
	f.mustCommand(op, &c, `{"advance_time":{"seconds":0}}`)

	// Pending signals: 2 buffered, the third refused.
	f.mustCommand(op, &a, `{"signal":{"name":"order.approved","payload":{"approver":"1"}}}`)
	f.mustCommand(op, &a, `{"signal":{"name":"order.approved","payload":{"approver":"2"}}}`)
	h.problem(422, sim.CodeLimit, f.command(op, a.ID, a.Revision, `{"signal":{"name":"order.approved","payload":{"approver":"3"}}}`))

	// Expiry: at the lifetime the session answers 410.
	clock.Set(clock.Now().Add(2 * time.Minute))
	op = h.localToken()
	h.problem(410, sim.CodeExpired, h.get(pPath(h)+"/debug/sessions/"+a.ID, op))
	h.problem(410, sim.CodeExpired, f.command(op, a.ID, a.Revision, `{"next":{}}`))

	// Reductions per continue: 40 node entries, then paused with
	// PF-DEBUG-LIMIT; the next continue goes on.
	s := f.mustCreate(op, f.big, `{}`, `{}`)
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusPaused || s.View.Boundary.Kind != "limit" || string(s.View.Variables.Vars["n"]) != "40" ||
		s.View.Diagnostics[0].Code != sim.CodeLimit {
		t.Fatalf("%+v", s.View)
	}
	f.mustCommand(op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSucceeded || string(s.View.Variables.Vars["n"]) != "60" {
		t.Fatalf("%+v", s.View)
	}
	// Retained per project: expired sessions are kept a minute (410), then
	// pruned; 5 kept is the bound.
	clock.Set(clock.Now().Add(3 * time.Minute))
	op = h.localToken()
	for range 2 {
		x := f.mustCreate(op, f.big, `{}`, `{}`)
		f.mustCommand(op, &x, `{"continue":{}}`)
		f.mustCommand(op, &x, `{"continue":{}}`)
	}
	for range 2 {
		x := f.mustCreate(dev, f.big, `{}`, `{}`)
		f.mustCommand(dev, &x, `{"continue":{}}`)
		f.mustCommand(dev, &x, `{"continue":{}}`)
	}
	f.mustCreate(op, f.big, `{}`, `{}`) // 5 kept
	h.problem(429, sim.CodeCapacity, f.create(op, f.big, `{}`, `{}`))
}

// TestDebugSessionSizeLimit refuses a command whose result would be over
// the serialized session limit, and changes nothing.
func TestDebugSessionSizeLimit(t *testing.T) {
	lim := sim.DefaultLimits()
	lim.SessionBytes = 128 << 10
	f := newDebugFixture(t, func(h *harness) { h.simLimits = &lim })
	h, op := f.h, f.op
	s := f.mustCreate(op, f.approval, `{}`, `{}`)
	small := strings.Repeat("x", 16<<10)
	f.mustCommand(op, &s, `{"signal":{"name":"order.approved","payload":{"approver":"`+small+`"}}}`)
	big := strings.Repeat("x", 128<<10)
	h.problem(422, sim.CodeLimit, f.command(op, s.ID, s.Revision, `{"signal":{"name":"order.approved","payload":{"approver":"`+big+`"}}}`))
	var got sim.SessionBody
	h.must(200, h.get(pPath(h)+"/debug/sessions/"+s.ID, op), &got)
	if got.Revision != s.Revision {
		t.Fatalf("a refused command changed the session: %d", got.Revision)
	}
}

// seedDebugSession creates a session of a workflow without references
// (for the route-wide tests) and answers its id.
func seedDebugSession(h *harness, op string) string {
	h.t.Helper()
	var res struct {
		Artifact json.RawMessage `json:"artifact"`
	}
	h.must(200, h.post(pPath(h)+"/compiler/compile", op, catalog.CompileRequest{Source: humanWorkflow, Format: "yaml"}), &res)
	var s sim.SessionBody
	h.must(201, h.post(pPath(h)+"/debug/sessions", op, map[string]any{"artifact": res.Artifact}), &s)
	return s.ID
}

// TestDebugSessionPerContinueLimits checks the per-continue limits of
// simulated events, kernel commands and boundaries over HTTP, each at its
// bound (the continue ends the run) and one below what the run needs (the
// session pauses with PF-DEBUG-LIMIT and boundary kind limit, and the next
// continue goes on). The bounds are shrunk through the harness; the
// documented 10,000 are asserted by sim's TestDefaultLimitsAreDocumented.
func TestDebugSessionPerContinueLimits(t *testing.T) {
	f := newDebugFixture(t)
	h := f.h
	const calls = 5
	var res struct {
		OK       bool            `json:"ok"`
		Artifact json.RawMessage `json:"artifact"`
	}
	h.must(200, h.post(pPath(h)+"/compiler/compile", f.op, catalog.CompileRequest{Source: platformtest.CallsWorkflow("acme/calls", "acme/greet@1", "{name: x}", calls), Format: "yaml"}), &res)
	if !res.OK {
		t.Fatal("the calls workflow does not compile")
	}
	mocks := `{"action:acme/greet@1":{"output":{"name":"x"}}}`

	// What one continue through the workflow takes with the documented
	// limits: every event it fed (the view lists them); per call three
	// kernel commands (the task, its attempt timer, the timer's
	// cancellation once answered) plus the run's completion; one boundary
	// (a mock's answer) per call.
	s := f.mustCreate(f.op, res.Artifact, `{}`, mocks)
	before := len(s.View.Events)
	f.mustCommand(f.op, &s, `{"continue":{}}`)
	if s.View.Status != sim.StatusSucceeded {
		t.Fatalf("%+v", s.View)
	}
	completed := 0
	for _, e := range s.View.Events {
		if e.Kind == "task_completed" {
			completed++
		}
	}
	need := map[string]int{"events": len(s.View.Events) - before, "commands": 3*completed + 1, "boundaries": len(s.View.Boundaries)}
	if completed != calls || need["boundaries"] != calls || need["events"] <= calls {
		t.Fatalf("measured %v", need)
	}
	set := map[string]func(*sim.Limits, int){
		"events":     func(l *sim.Limits, v int) { l.Events = v },
		"commands":   func(l *sim.Limits, v int) { l.Commands = v },
		"boundaries": func(l *sim.Limits, v int) { l.Boundaries = v },
	}
	words := map[string]string{"events": "simulated events", "commands": "kernel commands", "boundaries": "boundaries"}
	for _, what := range []string{"events", "commands", "boundaries"} {
		for _, delta := range []int{0, -1} {
			lim := sim.DefaultLimits()
			set[what](&lim, need[what]+delta)
			h.simLimits = &lim
			h.restart(true)
			op := h.localToken()
			s := f.mustCreate(op, res.Artifact, `{}`, mocks)
			f.mustCommand(op, &s, `{"continue":{}}`)
			if delta == 0 {
				if s.View.Status != sim.StatusSucceeded {
					t.Fatalf("%s at the bound %d: %+v", what, need[what], s.View)
				}
				continue
			}
			v := s.View
			if v.Status != sim.StatusPaused || v.Boundary == nil || v.Boundary.Kind != "limit" || len(v.Diagnostics) != 1 ||
				v.Diagnostics[0].Code != sim.CodeLimit || !strings.Contains(v.Diagnostics[0].Message, words[what]) {
				t.Fatalf("%s past the bound (%d): %+v", what, need[what]+delta, v)
			}
			if what == "boundaries" && len(v.Boundaries) != need[what]+delta {
				t.Fatalf("boundaries crossed %d, limit %d", len(v.Boundaries), need[what]+delta)
			}
			f.mustCommand(op, &s, `{"continue":{}}`)
			if s.View.Status != sim.StatusSucceeded || len(s.View.Variables.Steps) != calls {
				t.Fatalf("%s: the next continue: %+v", what, s.View)
			}
		}
	}
}

// TestDebugSessionDocumentedLimits checks the session limits at their
// documented values over HTTP: 4 live per creator, 16 live per project,
// one hour of life (the 1,000 kept per project are checked shrunk in
// TestDebugSessionLimits and pinned by sim's TestDefaultLimitsAreDocumented).
func TestDebugSessionDocumentedLimits(t *testing.T) {
	clock := &fakeClock{t: clockStart()}
	f := newDebugFixture(t, withClock(clock))
	h, op := f.h, f.op
	project := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}
	var first sim.SessionBody
	for i := range 4 {
		s := f.mustCreate(op, f.approval, `{}`, `{}`)
		if i == 0 {
			first = s
		}
	}
	h.problem(429, sim.CodeCapacity, f.create(op, f.approval, `{}`, `{}`))
	for i := 1; i <= 3; i++ {
		_, tok := h.user(fmt.Sprintf("dev%d", i), "developer", project)
		for range 4 {
			f.mustCreate(tok, f.approval, `{}`, `{}`)
		}
	}
	_, dev4 := h.user("dev4", "developer", project)
	r := f.create(dev4, f.approval, `{}`, `{}`)
	p := h.problem(429, sim.CodeCapacity, r)
	if !strings.Contains(p.Message, "project") || r.header.Get("Retry-After") == "" {
		t.Fatalf("%+v", p)
	}
	// One hour of life: readable a second before, 410 at the hour.
	clock.Set(clock.Now().Add(time.Hour - time.Second))
	op = h.refreshTokens()
	h.must(200, h.get(pPath(h)+"/debug/sessions/"+first.ID, op), nil)
	clock.Set(clock.Now().Add(time.Second))
	op = h.refreshTokens()
	h.problem(410, sim.CodeExpired, h.get(pPath(h)+"/debug/sessions/"+first.ID, op))
	h.problem(410, sim.CodeExpired, f.command(op, first.ID, first.Revision, `{"next":{}}`))
	// Expired sessions are not live: the creator may open new ones.
	f.mustCreate(op, f.approval, `{}`, `{}`)
}
