package platform_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/sim"
)

// studioSession is a session as the editor host answers it (camelCase).
type studioSession struct {
	ID        string `json:"id"`
	Revision  int64  `json:"revision"`
	CreatedAt string `json:"createdAt"`
	View      struct {
		Status       string   `json:"status"`
		SelectedNode *string  `json:"selectedNode"`
		CurrentNodes []string `json:"currentNodes"`
		Variables    struct {
			Output json.RawMessage            `json:"output"`
			Steps  map[string]json.RawMessage `json:"steps"`
		} `json:"variables"`
		Boundary struct {
			Kind  string `json:"kind"`
			Waits []struct {
				Kind   string `json:"kind"`
				NodeID string `json:"nodeId"`
			} `json:"waits"`
		} `json:"boundary"`
	} `json:"view"`
}

const childWorkflow = `kind: workflow
id: acme/child
version: 1
input: {type: object}
output:
  type: object
  properties:
    passed: {type: boolean}
steps:
  - id: done
    succeed:
      result:
        passed: true
`

const parentWorkflow = `kind: workflow
id: acme/parent
version: 1
steps:
  - id: kyc
    workflow: acme/child@1
    with: {}
  - id: gate
    switch:
      - when: =!steps.kyc.output.passed
        next: stop
    default: end
  - id: stop
    fail: {code: KYC_FAILED}
`

func (h *harness) studioCommand(tok, id string, rev int64, cmd string) resp {
	return h.do(req{method: "POST", path: sim.StudioSession + "/" + id + "/commands", token: tok,
		hdr: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, rev)}, body: []byte(cmd)})
}

func TestStudioSessions(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	lockRes := h.get(pPath(h)+"/catalog", op)
	h.must(200, lockRes, nil)
	create := func(tok string, body map[string]any) resp { return h.post(sim.StudioSession, tok, body) }

	// A workflow compiled by the host, with a local action definition.
	var s studioSession
	r := create(op, map[string]any{"source": platformtest.FlowWorkflow, "definitions": []string{platformtest.GreetAction, platformtest.NothingAction},
		"input": map[string]any{"name": "Ada"}, "mocks": map[string]any{"action:acme/greet@1": map[string]any{"output": map[string]any{"name": "Ada"}}, "node:nothing": map[string]any{"output": map[string]any{}}}})
	h.must(201, r, &s)
	if s.Revision != 1 || r.header.Get("ETag") != `"1"` || s.View.Status != "queued" || *s.View.SelectedNode != "greet" || s.CreatedAt == "" {
		t.Fatalf("%s", r.body)
	}
	r = h.studioCommand(op, s.ID, 1, `{"breakpoints":{"nodeIds":["route"]}}`)
	h.must(200, r, &s)
	r = h.studioCommand(op, s.ID, 2, `{"continue":{}}`)
	h.must(200, r, &s)
	if s.View.Status != "paused" || *s.View.SelectedNode != "route" || r.header.Get("ETag") != `"3"` {
		t.Fatalf("%s", r.body)
	}
	h.problem(409, sim.CodeRevision, h.studioCommand(op, s.ID, 2, `{"continue":{}}`))
	h.problem(422, sim.CodeCommand, h.studioCommand(op, s.ID, 3, `{"jump":{}}`))
	h.problem(422, sim.CodeTime, h.studioCommand(op, s.ID, 3, `{"advanceTime":{"seconds":-5}}`))
	h.must(200, h.studioCommand(op, s.ID, 3, `{"continue":{}}`), &s)
	if s.View.Status != "succeeded" || string(s.View.Variables.Output) != `{"count":1,"greeting":"hello Ada"}` {
		t.Fatalf("%+v", s.View)
	}
	h.must(200, h.get(sim.StudioSession+"/"+s.ID, op), &s)

	// Another principal with simulate does not see it; one without
	// simulate is refused; without a token 401.
	_, dev := h.user("dev", "developer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID})
	_, viewer := h.user("viewer", "viewer", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID})
	h.problem(404, "PF-NOT-FOUND", h.get(sim.StudioSession+"/"+s.ID, dev))
	h.problem(403, "PF-FORBIDDEN", h.get(sim.StudioSession+"/"+s.ID, viewer))
	h.problem(401, "PF-UNAUTHENTICATED", h.get(sim.StudioSession+"/"+s.ID, ""))

	// Refusals: does not compile (with the compile summary), local
	// definition conflicting with the catalog, bad mock key, bad body.
	h.mustPublish(op, "actions", platformtest.GreetAction, "g")
	p := h.problem(422, sim.CodeStudioReq, create(op, map[string]any{"source": "kind: workflow\nid: x\n"}))
	_ = p
	var withResult struct {
		Result struct {
			OK          bool              `json:"ok"`
			Diagnostics []json.RawMessage `json:"diagnostics"`
		} `json:"result"`
	}
	create(op, map[string]any{"source": "kind: workflow\nid: x\n"}).json(t, &withResult)
	if withResult.Result.OK || len(withResult.Result.Diagnostics) == 0 {
		t.Fatalf("%+v", withResult)
	}
	var lock json.RawMessage
	h.get(pPath(h)+"/catalog", op).json(t, &lock)
	changed := strings.Replace(platformtest.GreetAction, "sideEffect: read_only", "sideEffect: idempotent", 1)
	h.problem(409, sim.CodeStudioCatCfl, create(op, map[string]any{"source": platformtest.FlowWorkflow, "catalog": lock, "definitions": []string{changed}}))
	h.problem(422, sim.CodeStudioReq, create(op, map[string]any{}))
	h.problem(422, sim.CodeStudioReq, create(op, map[string]any{"source": humanWorkflow, "artifact": map[string]any{}}))
	h.problem(422, sim.CodeMockKey, create(op, map[string]any{"source": humanWorkflow, "mocks": map[string]any{"tool:search": map[string]any{"output": 1}}}))
	h.problem(422, "PF-VALIDATION", create(op, map[string]any{"source": humanWorkflow, "target": "x"}))

	// Four open sessions; the fifth is refused until one is closed.
	ids := []string{s.ID}
	for range 3 {
		var x studioSession
		h.must(201, create(op, map[string]any{"source": humanWorkflow}), &x)
		ids = append(ids, x.ID)
	}
	h.problem(429, sim.CodeStudioFull, create(dev, map[string]any{"source": humanWorkflow}))
	res := h.do(req{method: "DELETE", path: sim.StudioSession + "/" + ids[0], token: op})
	if res.status != 204 {
		t.Fatalf("close: %d %s", res.status, res.body)
	}
	h.problem(404, "PF-NOT-FOUND", h.get(sim.StudioSession+"/"+ids[0], op))
	h.must(201, create(dev, map[string]any{"source": humanWorkflow}), nil)
}

func TestStudioWorkLimit(t *testing.T) {
	lim := sim.DefaultLimits()
	lim.StudioWork = time.Nanosecond
	h := newHarness(t, func(h *harness) { h.simLimits = &lim })
	op := h.localToken()
	h.problem(503, sim.CodeStudioBusy, h.post(sim.StudioSession, op, map[string]any{"source": humanWorkflow}))
	h.problem(503, sim.CodeStudioBusy, h.post("/studio/local/debug/execute", op, map[string]any{"source": humanWorkflow, "mode": "workflow"}))
}

// TestStudioLiveChannel drives a session to succeeded over a real
// WebSocket and checks the channel's guards.
func TestStudioLiveChannel(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	var s studioSession
	h.must(201, h.post(sim.StudioSession, op, map[string]any{"source": humanWorkflow}), &s)
	wsURL := "ws" + strings.TrimPrefix(h.base, "http") + sim.StudioSession + "/" + s.ID + "/live"
	hdr := http.Header{"Authorization": {"Bearer " + op}}

	// Guards: no token, a foreign Origin, an unknown session.
	if _, res, err := websocket.DefaultDialer.Dial(wsURL, nil); err == nil || res.StatusCode != 401 {
		t.Fatalf("no token: %v %v", err, res)
	}
	evil := http.Header{"Authorization": {"Bearer " + op}, "Origin": {"https://evil.example"}}
	if _, res, err := websocket.DefaultDialer.Dial(wsURL, evil); err == nil || res.StatusCode != 403 {
		t.Fatalf("foreign origin: %v %v", err, res)
	}
	if _, res, err := websocket.DefaultDialer.Dial(strings.Replace(wsURL, s.ID, "00000000-0000-4000-8000-000000000000", 1), hdr); err == nil || res.StatusCode != 404 {
		t.Fatalf("unknown session: %v %v", err, res)
	}
	h.problem(422, sim.CodeStudioReq, h.get(sim.StudioSession+"/"+s.ID+"/live", op))

	conn, _, err := websocket.DefaultDialer.Dial(wsURL, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	type out struct {
		Type     string          `json:"type"`
		Revision int64           `json:"revision"`
		Session  json.RawMessage `json:"session"`
		Problem  *struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"problem"`
	}
	read := func(want string) out {
		t.Helper()
		var m out
		if err := conn.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.Type != want {
			t.Fatalf("got %s (%s), want %s", m.Type, m.Session, want)
		}
		return m
	}
	view := func(m out) studioSession {
		var x studioSession
		if err := json.Unmarshal(m.Session, &x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	if v := view(read("view")); v.Revision != 1 || v.View.Status != "queued" {
		t.Fatalf("%+v", v)
	}
	send := func(rev int64, cmd string) {
		t.Helper()
		if err := conn.WriteJSON(map[string]any{"type": "command", "revision": rev, "command": json.RawMessage(cmd)}); err != nil {
			t.Fatal(err)
		}
	}
	send(1, `{"continue":{}}`)
	read("running")
	if v := view(read("view")); v.Revision != 2 || v.View.Status != "waiting" || v.View.Boundary.Waits[0].Kind != "human" {
		t.Fatalf("%+v", v)
	}
	send(1, `{"next":{}}`) // stale
	if m := read("error"); m.Problem.Code != sim.CodeRevision || m.Problem.Status != 409 {
		t.Fatalf("%+v", m)
	}
	send(2, `{"humanDecision":{"name":"review","payload":{"decision":"approve","data":{"note":"fine"}}}}`)
	read("running")
	read("view")
	// A command over HTTP reaches the panel too.
	h.must(200, h.studioCommand(op, s.ID, 3, `{"continue":{}}`), nil)
	v := view(read("view"))
	if v.Revision != 4 || v.View.Status != "succeeded" || string(v.View.Variables.Output) != `{"decision":"approve"}` {
		t.Fatalf("%+v", v)
	}
	// Closing the session ends the channel.
	h.do(req{method: "DELETE", path: sim.StudioSession + "/" + s.ID, token: op})
	if m := read("error"); m.Problem.Status != 410 {
		t.Fatalf("%+v", m)
	}
}

func TestStudioExecuteAndCheck(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	exec := func(body map[string]any) (string, string, map[string]any) {
		t.Helper()
		var res map[string]any
		h.must(200, h.post("/studio/local/debug/execute", op, body), &res)
		reason, _ := res["reason"].(string)
		return res["status"].(string), reason, res
	}
	flow := map[string]any{"source": platformtest.FlowWorkflow, "definitions": []string{platformtest.GreetAction, platformtest.NothingAction},
		"input": map[string]any{"name": "Ada"}}
	mocks := map[string]any{"action:acme/greet@1": map[string]any{"output": map[string]any{"name": "Ada"}}, "node:nothing": map[string]any{"output": map[string]any{}}}
	with := func(extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range flow {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	st, reason, res := exec(with(map[string]any{"mode": "workflow", "mocks": mocks}))
	if st != "completed" || reason != "" || len(res["trace"].([]any)) == 0 {
		t.Fatalf("%v", res)
	}
	if stubs := res["compile"].(map[string]any)["stubs"].([]any); len(stubs) != 2 {
		t.Fatalf("stubs %v", stubs)
	}
	if st, _, res = exec(with(map[string]any{"mode": "step", "stepId": "greet", "mocks": mocks})); st != "completed" {
		t.Fatalf("%v", res)
	}
	trace := res["trace"].([]any)
	if last := trace[len(trace)-1].(map[string]any); last["nodeId"] != "greet" || last["type"] != "step_completed" {
		t.Fatalf("%v", trace)
	}
	if st, _, res = exec(with(map[string]any{"mode": "before", "stepId": "bump", "mocks": mocks})); st != "completed" ||
		res["run"].(map[string]any)["selectedNode"] != "bump" {
		t.Fatalf("%v", res)
	}
	if st, reason, _ = exec(with(map[string]any{"mode": "workflow"})); st != "blocked" || reason != "missing_mock" {
		t.Fatalf("%s %s", st, reason)
	}
	if st, reason, _ = exec(with(map[string]any{"mode": "step", "stepId": "broken", "mocks": mocks})); st != "blocked" || reason != "path" {
		t.Fatalf("%s %s", st, reason)
	}
	if st, reason, _ = exec(with(map[string]any{"mode": "workflow", "mocks": mocks, "input": map[string]any{"name": "A", "mode": "fail"}})); st != "failed" || reason != "" {
		t.Fatalf("%s %s", st, reason)
	}
	// Waits: a duration wait advances by itself unless autoAdvance is off.
	waitIn := map[string]any{"name": "A", "mode": "wait", "pause": "1h"}
	if st, _, _ = exec(with(map[string]any{"mode": "workflow", "mocks": mocks, "input": waitIn})); st != "completed" {
		t.Fatal(st)
	}
	if st, reason, _ = exec(with(map[string]any{"mode": "workflow", "mocks": mocks, "input": waitIn, "autoAdvance": false})); st != "blocked" {
		t.Fatal(st, reason)
	}
	// Signals and people: blocked without a script, completed with one.
	approval := map[string]any{"source": platformtest.ApprovalWorkflow, "mode": "workflow"}
	if st, reason, _ = exec(approval); st != "blocked" || reason != "signal" {
		t.Fatalf("%s %s", st, reason)
	}
	approval["scripts"] = []any{map[string]any{"signal": map[string]any{"name": "order.approved", "payload": map[string]any{"approver": "Bo"}}}}
	if st, _, res = exec(approval); st != "completed" {
		t.Fatalf("%v", res)
	}
	if st, reason, _ = exec(map[string]any{"source": humanWorkflow, "mode": "workflow"}); st != "blocked" || reason != "human" {
		t.Fatalf("%s %s", st, reason)
	}
	// A called workflow without a mock blocks on the callee; with one it
	// completes.
	parent := map[string]any{"source": parentWorkflow, "definitions": []string{childWorkflow}, "mode": "workflow"}
	if st, reason, _ = exec(parent); st != "blocked" || reason != "callee" {
		t.Fatalf("%s %s", st, reason)
	}
	parent["workflows"] = map[string]any{"acme/child@1": map[string]any{"output": map[string]any{"passed": true}}}
	if st, _, res = exec(parent); st != "completed" {
		t.Fatalf("%v", res)
	}
	// Compile errors: failed with the diagnostics.
	if st, _, res = exec(map[string]any{"source": "kind: workflow\n", "mode": "workflow"}); st != "failed" || res["compile"].(map[string]any)["ok"] != false {
		t.Fatalf("%v", res)
	}
	for _, bad := range []map[string]any{{"source": humanWorkflow, "mode": "all"}, {"source": humanWorkflow, "mode": "step"},
		{"source": humanWorkflow, "mode": "step", "stepId": "nope"}, {"source": humanWorkflow, "mode": "step", "stepId": "review", "instanceKey": "x[0]"}} {
		h.problem(422, sim.CodeStudioReq, h.post("/studio/local/debug/execute", op, bad))
	}

	// testdata/check
	doc := map[string]any{"schemaVersion": 1, "kind": "test-data", "updatedAt": "2026-01-01T00:00:00Z",
		"input":   map[string]any{"value": map[string]any{"name": "Ada"}, "source": "manual"},
		"pins":    map[string]any{"greet": map[string]any{"name": "x"}, "nothing": map[string]any{"name": 5}, "bump": 1, "ghost": 1},
		"signals": map[string]any{"order.approved": map[string]any{}}, "waits": map[string]any{"autoAdvance": true}}
	var cr sim.CheckResponse
	h.must(200, h.post("/studio/local/testdata/check", op, map[string]any{"source": flow["source"], "definitions": flow["definitions"], "document": doc}), &cr)
	got := map[string]string{}
	for _, e := range cr.Entries {
		got[e.Path] = fmt.Sprint(e.OK, e.Code)
	}
	want := map[string]string{"/input/value": "true", "/pins/greet": "true", "/pins/nothing": "true", "/pins/bump": "false" + sim.CodeDocTestData,
		"/pins/ghost": "false" + sim.CodeDocTestData, "/signals/order.approved": "false" + sim.CodeDocTestData}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v", got)
	}
	doc["input"] = map[string]any{"value": map[string]any{"name": "A", "apiKey": "k"}, "source": "manual"}
	h.must(200, h.post("/studio/local/testdata/check", op, map[string]any{"source": flow["source"], "definitions": flow["definitions"], "document": doc}), &cr)
	if cr.Entries[0].Path != "/input/value" || cr.Entries[0].Code != sim.CodeSecretValue {
		t.Fatalf("%+v", cr.Entries)
	}
	doc["schemaVersion"] = 2
	h.problem(422, sim.CodeDocTestData, h.post("/studio/local/testdata/check", op, map[string]any{"source": flow["source"], "definitions": flow["definitions"], "document": doc}))
}

// seedStudioSession opens an editor host session (for the route-wide
// tests) and answers its id.
func seedStudioSession(h *harness, op string) string {
	h.t.Helper()
	var s studioSession
	h.must(201, h.post(sim.StudioSession, op, map[string]any{"source": humanWorkflow}), &s)
	return s.ID
}

// agentToolWorkflow's agent step may call acme/greet@1.
const agentToolWorkflow = `kind: workflow
id: acme/triage
version: 1
output: {type: object, properties: {answer: {type: string}}}
steps:
  - id: triage
    agent:
      provider: claude
      prompt: Say hello to Ada
      tools: [acme/greet@1]
  - id: done
    succeed:
      result: {answer: =steps.triage.output}
`

// TestStudioAgentToolMocks: an agent step's outcome in the editor host
// lists the tool calls the simulated agent makes; each goes through the
// kernel (agent_tool_called, the tool's action as a task) and is answered
// by tool:<reference>, else action:<reference>.
func TestStudioAgentToolMocks(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	exec := func(mocks string) map[string]any {
		t.Helper()
		var res map[string]any
		h.must(200, h.post("/studio/local/debug/execute", op, map[string]any{"source": agentToolWorkflow,
			"definitions": []string{platformtest.GreetAction}, "mode": "workflow", "mocks": json.RawMessage(mocks)}), &res)
		return res
	}
	kinds := func(res map[string]any) (out []string) {
		for _, e := range res["run"].(map[string]any)["events"].([]any) {
			ev := e.(map[string]any)
			out = append(out, fmt.Sprint(ev["kind"], " ", ev["mockKey"]))
		}
		return out
	}
	agent := `"agent:triage":{"output":"hi Ada","toolCalls":[{"tool":"acme/greet@1","input":{"name":"Ada"}}]}`
	res := exec(`{` + agent + `,"tool:acme/greet@1":{"output":{"name":"Ada"}},"action:acme/greet@1":{"output":{"name":"other"}}}`)
	got := kinds(res)
	if res["status"] != "completed" || !slices.Contains(got, "agent_tool_called agent:triage") || !slices.Contains(got, "task_completed tool:acme/greet@1") {
		t.Fatalf("%v %v", res["status"], got)
	}
	if stubs := fmt.Sprint(res["compile"].(map[string]any)["stubs"]); stubs != "[agent:triage tool:acme/greet@1]" {
		t.Fatalf("stubs %s", stubs)
	}
	// Without a tool: mock the action: mock answers the call.
	res = exec(`{` + agent + `,"action:acme/greet@1":{"output":{"name":"other"}}}`)
	if res["status"] != "completed" || !slices.Contains(kinds(res), "task_completed action:acme/greet@1") {
		t.Fatalf("%v %v", res["status"], kinds(res))
	}
	// Without either the call has no mock.
	if res = exec(`{` + agent + `}`); res["status"] != "blocked" || res["reason"] != "missing_mock" {
		t.Fatalf("%v %v", res["status"], res["reason"])
	}
	// An input the tool's schema refuses: the agent gets an error result
	// (a diagnostic) and answers anyway; the tool mock is not used.
	res = exec(`{"agent:triage":{"output":"hi","toolCalls":[{"tool":"acme/greet@1","input":{"name":7}}]},"tool:acme/greet@1":{"output":{"name":"Ada"}}}`)
	if res["status"] != "completed" || slices.Contains(kinds(res), "task_completed tool:acme/greet@1") ||
		!strings.Contains(fmt.Sprint(res["run"].(map[string]any)["diagnostics"]), "refused") {
		t.Fatalf("%v %v %v", res["status"], kinds(res), res["run"].(map[string]any)["diagnostics"])
	}
	// A tool output outside the tool's output schema fails the run.
	if res = exec(`{` + agent + `,"tool:acme/greet@1":{"output":{"name":7}}}`); res["status"] != "failed" {
		t.Fatalf("%v", res["status"])
	}
	// Refusals: a tool the step does not list, tool calls of another step
	// kind, a tool key no step lists.
	bad := func(mocks string) resp {
		return h.post("/studio/local/debug/execute", op, map[string]any{"source": agentToolWorkflow,
			"definitions": []string{platformtest.GreetAction}, "mode": "workflow", "mocks": json.RawMessage(mocks)})
	}
	h.problem(422, sim.CodeMockKey, bad(`{"agent:triage":{"output":"x","toolCalls":[{"tool":"acme/nothing@1","input":{}}]}}`))
	h.problem(422, sim.CodeMockKey, bad(`{"tool:acme/other@1":{"output":{}}}`))
	h.problem(422, sim.CodeStudioReq, bad(`{"agent:triage":{"output":"x","toolCalls":[{"input":{}}]}}`))
	flow := map[string]any{"source": platformtest.FlowWorkflow, "definitions": []string{platformtest.GreetAction, platformtest.NothingAction},
		"mode": "workflow", "mocks": json.RawMessage(`{"node:greet":{"output":{"name":"A"},"toolCalls":[{"tool":"acme/greet@1","input":{}}]}}`)}
	h.problem(422, sim.CodeMockKey, h.post("/studio/local/debug/execute", op, flow))
}

// TestStudioProjectCatalog: the editor host resolves references against a
// project's current catalog when the request names the project (catalog.read
// there); a catalog the platform cannot read is 502 PF-STUDIO-CATALOG.
func TestStudioProjectCatalog(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.GreetAction, "g")
	h.mustPublish(op, "actions", platformtest.NothingAction, "n")
	h.mustPublish(op, "decision-tables", feeTable, "fee")
	project := map[string]any{"tenant": h.ws.TenantID, "project": h.ws.ProjectID}
	mocks := json.RawMessage(`{"action:acme/greet@1":{"output":{"name":"Ada"}},"node:nothing":{"output":{}}}`)
	exec := func(tok string, body map[string]any) resp {
		return h.post("/studio/local/debug/execute", tok, body)
	}
	var res sim.ExecuteResponse
	h.must(200, exec(op, map[string]any{"source": platformtest.FlowWorkflow, "project": project, "mode": "workflow",
		"mocks": mocks, "input": map[string]any{"name": "Ada"}}), &res)
	if res.Status != "completed" || !res.Compile.OK {
		t.Fatalf("%+v", res)
	}
	// A published decision table is loaded from the project with the program.
	fee := `kind: workflow
id: acme/fee-flow
version: 1
output: {type: object, properties: {fee: {type: number}}}
steps:
  - id: fee
    decision: acme/fee@1
    with: {tier: gold}
  - id: done
    succeed:
      result: {fee: =steps.fee.output}
`
	h.must(200, exec(op, map[string]any{"source": fee, "project": project, "mode": "workflow"}), &res)
	var out struct {
		Variables struct {
			Output json.RawMessage `json:"output"`
		} `json:"variables"`
	}
	if err := json.Unmarshal(res.Run, &out); err != nil || res.Status != "completed" || string(out.Variables.Output) != `{"fee":0.0}` {
		t.Fatalf("%s %s", res.Status, out.Variables.Output)
	}
	// Without the project the references do not resolve.
	h.must(200, exec(op, map[string]any{"source": fee, "mode": "workflow"}), &res)
	if res.Status != "failed" || res.Compile.OK {
		t.Fatalf("%+v", res)
	}
	h.problem(422, sim.CodeStudioReq, exec(op, map[string]any{"source": fee, "project": project, "catalog": map[string]any{}, "mode": "workflow"}))
	h.problem(404, "PF-NOT-FOUND", exec(op, map[string]any{"source": fee, "mode": "workflow",
		"project": map[string]any{"tenant": h.ws.TenantID, "project": uuid.NewString()}}))
	// catalog.read in the project is needed (simulate alone is not enough).
	sub := h.link("human", "simulator")
	h.grant(sub, identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID}, "", "simulate")
	tok := h.ext.token(t, "simulator", nil)
	h.problem(403, "PF-FORBIDDEN", exec(tok, map[string]any{"source": fee, "project": project, "mode": "workflow"}))
	h.must(200, exec(tok, map[string]any{"source": fee, "mode": "workflow"}), nil)
	h.problem(403, "PF-FORBIDDEN", h.post(sim.StudioSession, tok, map[string]any{"source": fee, "project": project}))

	// A published version the platform cannot read: the catalog is
	// unavailable to the editor host, on every route that reads it.
	if err := h.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DROP TRIGGER platform_definition_versions_no_update`); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE platform_definition_versions SET artifact = '{' WHERE definition_id = 'acme/nothing'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	h.problem(502, sim.CodeStudioCat, exec(op, map[string]any{"source": fee, "project": project, "mode": "workflow"}))
	h.problem(502, sim.CodeStudioCat, h.post(sim.StudioSession, op, map[string]any{"source": fee, "project": project}))
	h.problem(502, sim.CodeStudioCat, h.post("/studio/local/testdata/check", op, map[string]any{"source": fee, "project": project,
		"document": json.RawMessage(`{"schemaVersion":1,"kind":"test-data"}`)}))
}

// TestStudioToolSecrets: secret-marked values of a tool's pinned schemas
// are refused in mocked tool calls' inputs and in tool outputs.
func TestStudioToolSecrets(t *testing.T) {
	h := newHarness(t)
	op := h.localToken()
	tokenAction := `kind: action
id: acme/token
version: 1
sideEffect: read_only
input: {type: object, properties: {key: {type: string, writeOnly: true}, user: {type: string}}}
output: {type: object, properties: {token: {type: string, x-secret: true}, user: {type: string}}}
worker: auth
`
	src := strings.Replace(agentToolWorkflow, "tools: [acme/greet@1]", "tools: [acme/token@1]", 1)
	exec := func(mocks string) resp {
		return h.post("/studio/local/debug/execute", op, map[string]any{"source": src, "catalog": map[string]any{"definitions": []any{},
			"tasks": []any{map[string]any{"queue": "auth"}}, "adapters": []any{}, "schemas": []any{}},
			"definitions": []string{tokenAction}, "mode": "workflow", "mocks": json.RawMessage(mocks)})
	}
	p := h.problem(422, sim.CodeSecretValue, exec(`{"agent:triage":{"output":"x","toolCalls":[{"tool":"acme/token@1","input":{"key":"k"}}]}}`))
	if p.Diagnostics[0].Path != "/mocks/agent:triage/toolCalls/0/input/key" {
		t.Fatalf("%+v", p)
	}
	h.problem(422, sim.CodeSecretValue, exec(`{"tool:acme/token@1":{"output":{"token":"t"}}}`))
	h.problem(422, sim.CodeSecretValue, exec(`{"action:acme/token@1":{"output":{"token":"t"}}}`))
	var res sim.ExecuteResponse
	h.must(200, exec(`{"agent:triage":{"output":"x","toolCalls":[{"tool":"acme/token@1","input":{"user":"u"}}]},"tool:acme/token@1":{"output":{"user":"u"}}}`), &res)
	if res.Status != "completed" {
		t.Fatalf("%+v", res)
	}
}
