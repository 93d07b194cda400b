package platform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/steptest"
)

// Step tests of agent steps (docs/platform-api.md, "Step tests and test
// activations"): tool_mocks answer their tools, real_tools run for real
// (a side-effecting one only once each call is confirmed), other tools
// are refused, and the agent's answer applies only once reviewed.

// agentDraft's agent step may call the http actions of stepHarness: a
// read_only one and an idempotency_key one.
const agentDraft = `kind: workflow
id: acme/agent-tested
version: 1
input:
  type: object
  properties:
    ask: {type: string}
steps:
  - id: triage
    agent:
      provider: fake
      prompt: =input.ask
      tools: [acme/http-status@1, acme/http-create@1]
    timeout: 20m
  - id: done
    succeed:
      result: {}
`

// scriptAgent runs agent steps in place of the bridge: the prompt is a
// script, one command a line -- "call TOOL JSON" calls a tool through the
// platform as the bridge's MCP endpoint does, "hang" waits until the step
// is stopped. The answer is a JSON string with each call's outcome.
type scriptAgent struct{ h *harness }

func (a scriptAgent) RunAgent(ctx context.Context, t engine.AgentTask) (engine.AgentResult, error) {
	var out []string
	for i, line := range strings.Split(t.Spec.Prompt, "\n") {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		switch f[0] {
		case "hang":
			<-ctx.Done()
			return engine.AgentResult{}, ctx.Err()
		case "call":
			res, err := a.h.svc.CallTool(ctx, engine.ToolCall{RunID: t.RunID, AgentTaskID: t.TaskID, CallID: fmt.Sprintf("call-%d", i),
				Tool: f[1], Input: json.RawMessage(f[2])}, 5*time.Second)
			switch {
			case err != nil:
				out = append(out, "refused: "+err.Error())
			case res.Error != nil:
				out = append(out, "failed: "+res.Error.Code)
			default:
				out = append(out, "ok: "+string(res.Output))
			}
		}
	}
	b, _ := json.Marshal(strings.Join(out, "; "))
	return engine.AgentResult{JobID: "fake", Status: "succeeded", Succeeded: true, Output: b}, nil
}

// agentHarness is stepHarness with agentDraft saved (its id answered) and
// the script agent bound.
func agentHarness(t *testing.T) (*harness, *fakeClock, string, *ticketServer) {
	h, clk, _ := stepHarness(t)
	h.svc.SetAgents(scriptAgent{h})
	draft := uuid.NewString()
	h.must(201, h.saveDraft(h.localToken(), draft, agentDraft, ""), nil)
	return h, clk, draft, newTicketServer(t)
}

func (h *harness) answer(tok, id, key string, confirm bool) resp {
	h.t.Helper()
	return h.post(ePath(h)+"/step-tests/"+id+"/answers", tok, map[string]any{"instance_key": key, "confirm": confirm})
}

// waitPending polls a step test until it waits with an item of kind.
func (h *harness) waitPending(tok, id, kind string) steptest.PendingItem {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := h.readStep(tok, id)
		for _, p := range v.Pending {
			if p.Kind == kind {
				if v.Status != steptest.StatusWaiting {
					h.t.Fatalf("step test %s has a %s item but is %s", id, kind, v.Status)
				}
				return p
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("step test %s (%s) has no %s item: %+v", id, v.Status, kind, v.Pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func calls(lines ...string) map[string]any { return map[string]any{"ask": strings.Join(lines, "\n")} }

func TestStepTestAgentTools(t *testing.T) {
	t.Parallel()
	h, _, draft, ts := agentHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "all", ""), nil)
	status := `call acme/http-status@1 {"base":"` + ts.srv.URL + `"}`
	create := `call acme/http-create@1 {"base":"` + ts.srv.URL + `","subject":"printer"}`
	agentStep := func(more map[string]any) map[string]any { return stepBody(draft, "agent", "triage", more) }

	t.Run("a tool neither mocked nor real is refused", func(t *testing.T) {
		is := is.New(t)
		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, agentStep(map[string]any{"input": calls(status, create)})), &c)
		is.Equal(c.SideEffect, "read_only") // the agent alone
		p := h.waitPending(op, c.ID, steptest.PendingReview)
		is.Equal(p.NodeID, "triage")
		is.Equal(p.InstanceKey, "triage")
		is.True(strings.Contains(string(p.Output), "failed: STEPTEST_TOOL_NOT_ALLOWED; failed: STEPTEST_TOOL_NOT_ALLOWED"))
		h.must(200, h.answer(op, c.ID, "triage", true), nil)
		v := h.waitStep(op, c.ID, steptest.StatusSucceeded)
		is.True(strings.Contains(string(v.Output), `"triage":{"output":"failed: STEPTEST_TOOL_NOT_ALLOWED`))
		is.Equal(ts.health.Load(), int64(0))
		is.Equal(ts.creates.Load(), int64(0))
	})

	t.Run("tool_mocks answer their tools, which never run", func(t *testing.T) {
		is := is.New(t)
		mocks := map[string]any{"acme/http-status@1": map[string]any{"status": 299, "body": map[string]any{"mocked": true}},
			"acme/http-create@1": map[string]any{"ticketId": "MOCK-1"}}
		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, agentStep(map[string]any{"input": calls(status, create), "tool_mocks": mocks})), &c)
		is.Equal(c.SideEffect, "read_only") // mocked side effects need no acknowledgment
		p := h.waitPending(op, c.ID, steptest.PendingReview)
		is.True(strings.Contains(string(p.Output), `ok: {\"body\":{\"mocked\":true},\"status\":299}; ok: {\"ticketId\":\"MOCK-1\"}`))
		h.must(200, h.answer(op, c.ID, "triage", true), nil)
		h.waitStep(op, c.ID, steptest.StatusSucceeded)
		is.Equal(ts.health.Load(), int64(0))
		is.Equal(ts.creates.Load(), int64(0))

		// A mock must fit its tool's output schema; named tools must be
		// the step's.
		bad := h.problem(422, "PF-STEPTEST-TOOLS", h.stepTest(op, agentStep(map[string]any{
			"tool_mocks": map[string]any{"acme/http-create@1": map[string]any{"ticket": 1}}})))
		is.Equal(bad.Diagnostics[0].Path, "/tool_mocks/acme~1http-create@1")
		h.problem(422, "PF-STEPTEST-TOOLS", h.stepTest(op, agentStep(map[string]any{"tool_mocks": map[string]any{"acme/other@1": map[string]any{}}})))
		h.problem(422, "PF-STEPTEST-TOOLS", h.stepTest(op, agentStep(map[string]any{"real_tools": []string{"acme/other@1"}})))
		h.problem(422, "PF-STEPTEST-TOOLS", h.stepTest(op, agentStep(map[string]any{"tool_mocks": map[string]any{"acme/http-status@1": map[string]any{"status": 1}},
			"real_tools": []string{"acme/http-status@1"}})))
	})

	t.Run("a read_only real tool runs without confirmation", func(t *testing.T) {
		is := is.New(t)
		before := ts.health.Load()
		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, agentStep(map[string]any{"input": calls(status), "real_tools": []string{"acme/http-status@1"}})), &c)
		is.Equal(c.SideEffect, "read_only")
		p := h.waitPending(op, c.ID, steptest.PendingReview)
		is.True(strings.Contains(string(p.Output), `ok: {\"body\":{\"ok\":true},\"headers\":`))
		is.Equal(ts.health.Load(), before+1)
		h.must(200, h.answer(op, c.ID, "triage", true), nil)
		h.waitStep(op, c.ID, steptest.StatusSucceeded)
	})

	t.Run("a side-effecting real tool needs the acknowledgment and each call's confirmation", func(t *testing.T) {
		is := is.New(t)
		body := agentStep(map[string]any{"input": calls(create, create, status), "real_tools": []string{"acme/http-create@1", "acme/http-status@1"}})
		p := h.problem(409, "PF-STEPTEST-CONFIRM", h.stepTest(op, body))
		is.Equal(p.Diagnostics[0].Message, "want idempotency_key")
		body["acknowledged_side_effect"] = "unsafe"
		h.problem(409, "PF-STEPTEST-CONFIRM", h.stepTest(op, body))
		body["acknowledged_side_effect"] = "idempotency_key"
		h.must(200, h.putPolicy(op, "read_only", "1"), nil)
		h.problem(403, "PF-STEPTEST-DISABLED", h.stepTest(op, body))
		h.must(200, h.putPolicy(op, "all", "2"), nil)

		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, body), &c)
		is.Equal(c.SideEffect, "idempotency_key")
		item := h.waitPending(op, c.ID, steptest.PendingConfirm)
		is.Equal(item.NodeID, "triage")
		is.Equal(item.InstanceKey, "triage#call.1")
		is.Equal(item.Tool, "acme/http-create@1")
		is.Equal(item.SideEffect, "idempotency_key")
		is.True(strings.Contains(string(item.Input), `"subject":"printer"`))
		time.Sleep(100 * time.Millisecond)
		is.Equal(ts.creates.Load(), int64(0)) // held until confirmed

		// Wrong keys and malformed answers change nothing.
		h.problem(422, "PF-STEPTEST-ANSWER", h.answer(op, c.ID, "triage#call.9", true))
		h.problem(422, "PF-STEPTEST-ANSWER", h.answer(op, c.ID, "triage", true)) // no review yet
		h.problem(422, "PF-VALIDATION", h.post(ePath(h)+"/step-tests/"+c.ID+"/answers", op, map[string]any{"instance_key": "triage#call.1"}))
		h.problem(422, "PF-VALIDATION", h.post(ePath(h)+"/step-tests/"+c.ID+"/answers", op, map[string]any{"instance_key": "triage#call.1", "confirm": "yes"}))
		h.problem(422, "PF-VALIDATION", h.answer(op, c.ID, strings.Repeat("k", 1001), true))
		_, dev := h.user("dev-agent", "developer", h.envScope())
		h.problem(404, "PF-NOT-FOUND", h.answer(dev, c.ID, "triage#call.1", true))
		is.Equal(ts.creates.Load(), int64(0))

		// Confirmed, the first call runs; declined, the second never does.
		h.must(200, h.answer(op, c.ID, "triage#call.1", true), nil)
		h.problem(422, "PF-STEPTEST-ANSWERED", h.answer(op, c.ID, "triage#call.1", true))
		h.problem(422, "PF-STEPTEST-ANSWERED", h.answer(op, c.ID, "triage#call.1", false))
		second := h.waitPending(op, c.ID, steptest.PendingConfirm)
		is.Equal(second.InstanceKey, "triage#call.2")
		is.Equal(ts.creates.Load(), int64(1))
		h.must(200, h.answer(op, c.ID, "triage#call.2", false), nil)
		h.problem(422, "PF-STEPTEST-ANSWERED", h.answer(op, c.ID, "triage#call.2", true))

		// The read_only call runs unasked; then the answer waits for review.
		review := h.waitPending(op, c.ID, steptest.PendingReview)
		is.Equal(review.InstanceKey, "triage")
		is.True(strings.Contains(string(review.Output), `ok: {\"ticketId\":\"T-1\"}; failed: STEPTEST_DECLINED; ok: {\"body\":{\"ok\":true}`))
		is.Equal(ts.creates.Load(), int64(1))
		h.must(200, h.answer(op, c.ID, "triage", true), nil)
		v := h.waitStep(op, c.ID, steptest.StatusSucceeded)
		is.True(strings.Contains(string(v.Output), "T-1"))
		h.problem(422, "PF-STEPTEST-ENDED", h.answer(op, c.ID, "triage", true))
	})

	t.Run("a rejected answer fails the step test", func(t *testing.T) {
		is := is.New(t)
		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, agentStep(map[string]any{"input": calls("say hello")})), &c)
		h.waitPending(op, c.ID, steptest.PendingReview)
		var v steptest.StepTest
		h.must(200, h.answer(op, c.ID, "triage", false), &v)
		is.Equal(v.Status, steptest.StatusFailed)
		is.True(strings.Contains(string(v.Error), `"code":"STEPTEST_REJECTED"`))
		is.Equal(h.waitRun(op, c.RunID, "cancelled").Status, "cancelled") // its output never applied
		h.problem(422, "PF-STEPTEST-ENDED", h.answer(op, c.ID, "triage", true))
	})

	t.Run("a call held for confirmation never runs once the step test ends", func(t *testing.T) {
		is := is.New(t)
		before := ts.creates.Load()
		var c steptest.StepTestCreated
		h.must(200, h.stepTest(op, agentStep(map[string]any{"input": calls(create), "real_tools": []string{"acme/http-create@1"},
			"acknowledged_side_effect": "idempotency_key"})), &c)
		h.waitPending(op, c.ID, steptest.PendingConfirm)
		var v steptest.StepTest
		h.must(200, h.post(ePath(h)+"/step-tests/"+c.ID+"/cancel", op, nil), &v)
		is.Equal(v.Status, steptest.StatusCancelled)
		is.Equal(len(v.Pending), 0)
		h.problem(422, "PF-STEPTEST-ENDED", h.answer(op, c.ID, "triage#call.1", true))
		time.Sleep(300 * time.Millisecond)
		is.Equal(ts.creates.Load(), before)
	})
}

// An agent step test's limit is 900 seconds (an action's 300), by the
// injected clock.
func TestStepTestAgentLimit(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, clk, draft, _ := agentHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "read_only", ""), nil)
	h.problem(422, "PF-VALIDATION", h.stepTest(op, stepBody(draft, "agent", "triage", map[string]any{"timeout_seconds": 901})))
	h.problem(422, "PF-VALIDATION", h.stepTest(op, stepBody(draft, "agent", "triage", map[string]any{"timeout_seconds": 0.5})))
	var c steptest.StepTestCreated
	h.must(200, h.stepTest(op, stepBody(draft, "agent", "triage", map[string]any{"timeout_seconds": 900, "input": calls("hang")})), &c)
	h.must(200, h.post(ePath(h)+"/step-tests/"+c.ID+"/cancel", op, nil), nil)

	h.must(200, h.stepTest(op, stepBody(draft, "agent", "triage", map[string]any{"input": calls("hang")})), &c)
	v := h.readStep(op, c.ID)
	is.Equal(v.TimeoutSeconds, 900) // the default is the maximum
	is.Equal(c.ExpiresAt.Sub(v.CreatedAt), 900*time.Second)
	// Past an action step's 300 seconds it still runs.
	clk.Set(v.CreatedAt.Add(301 * time.Second))
	time.Sleep(100 * time.Millisecond)
	is.Equal(h.readStep(op, c.ID).Status, steptest.StatusRunning)
	clk.Set(v.CreatedAt.Add(899 * time.Second))
	is.Equal(h.readStep(op, c.ID).Status, steptest.StatusRunning)
	clk.Set(c.ExpiresAt.Add(time.Second))
	v = h.waitStep(op, c.ID, steptest.StatusTimedOut)
	h.waitRun(op, v.RunID, "timed_out")
}

// A call held for confirmation when the daemon stops is never run: after
// the restart nothing waits for the answer.
func TestStepTestAgentConfirmRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _, draft, ts := agentHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "all", ""), nil)
	var c steptest.StepTestCreated
	h.must(200, h.stepTest(op, stepBody(draft, "agent", "triage", map[string]any{"real_tools": []string{"acme/http-create@1"},
		"acknowledged_side_effect": "idempotency_key",
		"input":                    calls(`call acme/http-create@1 {"base":"` + ts.srv.URL + `","subject":"x"}`)})), &c)
	h.waitPending(op, c.ID, steptest.PendingConfirm)
	h.restart(true)
	h.svc.SetAgents(scriptAgent{h})
	op = h.localToken()
	v := h.readStep(op, c.ID)
	for _, p := range v.Pending {
		is.True(p.Kind != steptest.PendingConfirm)
	}
	if !strings.HasPrefix(v.Status, "timed") && v.Status != steptest.StatusCancelled && v.Status != steptest.StatusFailed {
		h.problem(422, "PF-STEPTEST-ANSWER", h.answer(op, c.ID, "triage#call.1", true))
	}
	time.Sleep(200 * time.Millisecond)
	is.Equal(ts.creates.Load(), int64(0))
}

// tool_mocks and real_tools bounds, both sides.
func TestStepTestAgentToolBounds(t *testing.T) {
	t.Parallel()
	h, _, draft, _ := agentHarness(t)
	op := h.localToken()
	h.must(200, h.putPolicy(op, "all", ""), nil)
	names := func(n int, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%0*d", size, i)
		}
		return out
	}
	mocks := func(list []string) map[string]any {
		m := map[string]any{}
		for _, n := range list {
			m[n] = map[string]any{}
		}
		return m
	}
	for _, c := range []struct {
		more map[string]any
		code string
		path string
	}{
		// 64 names pass the count bound to the check against the step's
		// tools; 65 do not.
		{map[string]any{"real_tools": names(64, 3)}, "PF-STEPTEST-TOOLS", "/real_tools"},
		{map[string]any{"real_tools": names(65, 3)}, "PF-VALIDATION", "/real_tools"},
		{map[string]any{"tool_mocks": mocks(names(64, 3))}, "PF-STEPTEST-TOOLS", "/tool_mocks"},
		{map[string]any{"tool_mocks": mocks(names(65, 3))}, "PF-VALIDATION", "/real_tools"},
		// Names of 200 characters pass; 201 and empty ones do not.
		{map[string]any{"real_tools": names(1, 200)}, "PF-STEPTEST-TOOLS", "/real_tools"},
		{map[string]any{"real_tools": names(1, 201)}, "PF-VALIDATION", "/real_tools"},
		{map[string]any{"real_tools": []string{""}}, "PF-VALIDATION", "/real_tools"},
		{map[string]any{"tool_mocks": mocks(names(1, 201))}, "PF-VALIDATION", "/tool_mocks"},
		{map[string]any{"real_tools": []string{"acme/http-status@1", "acme/http-status@1"}}, "PF-VALIDATION", "/real_tools"},
	} {
		p := h.problem(422, c.code, h.stepTest(op, stepBody(draft, "agent", "triage", c.more)))
		if len(p.Diagnostics) == 0 || p.Diagnostics[0].Path != c.path {
			t.Fatalf("%v: diagnostics %+v, want path %s", c.more, p.Diagnostics, c.path)
		}
	}
}

// A test activation's agents call every tool for real: the draft's class
// counts its agent's tools.
func TestTestActivationAgentTools(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _, draft, _ := agentHarness(t)
	op := h.localToken()
	base := ePath(h) + "/test-activations"
	h.must(200, h.putPolicy(op, "read_only", ""), nil)
	h.problem(403, "PF-STEPTEST-DISABLED", h.post(base, op, map[string]any{"draft_id": draft, "draft_revision": 1}))
	h.must(200, h.putPolicy(op, "all", "1"), nil)
	p := h.problem(409, "PF-STEPTEST-CONFIRM", h.post(base, op, map[string]any{"draft_id": draft, "draft_revision": 1}))
	is.Equal(p.Diagnostics[0].Message, "want idempotency_key")
	var ta steptest.TestActivation
	h.must(201, h.post(base, op, map[string]any{"draft_id": draft, "draft_revision": 1, "acknowledged_side_effect": "idempotency_key"}), &ta)
	is.Equal(ta.SideEffect, "idempotency_key")
}
