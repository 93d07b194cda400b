package kernel

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"
)

const agentToolsWF = `kind: workflow
id: t/agent-tools
steps:
  - id: triage
    agent:
      provider: claude
      prompt: Look it up.
      tools: [t/fetch@1, t/charge@1]
    timeout: 5m
result: =steps.triage.output
`

// callTool feeds an agent_tool_called event for the agent task of node.
func (d *driver) callTool(node, call, tool, input string) error {
	return d.try(Event{Kind: EventAgentToolCalled, TaskID: d.agentTask(node).ID, CallID: call, Tool: tool, Input: json.RawMessage(input)})
}

func (d *driver) agentTask(node string) *Task {
	d.tb.Helper()
	for _, id := range sortedKeys(d.s.Tasks) {
		if t := d.s.Tasks[id]; t.Node == node && t.Call == nil {
			return t
		}
	}
	d.tb.Fatalf("no agent task for %s", node)
	return nil
}

func (d *driver) toolTask(call string) *Task {
	d.tb.Helper()
	for _, id := range sortedKeys(d.s.Tasks) {
		if t := d.s.Tasks[id]; t.Call != nil && t.Call.ID == call {
			return t
		}
	}
	d.tb.Fatalf("no task for call %s", call)
	return nil
}

func TestAgentTools(t *testing.T) {
	t.Run("the agent spec carries the pinned schemas", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, agentToolsWF))
		spec := effectsOf(d.start(`{}`), EffectStartTask)[0].Task
		is.Equal(len(spec.Agent.ToolDefs), 2)
		is.Equal(spec.Agent.ToolDefs[0].Ref, "t/fetch@1")
		is.Equal(spec.Agent.ToolDefs[0].SideEffect, "read_only")
		is.True(spec.Agent.ToolDefs[0].Callable)
		is.Equal(string(spec.Agent.ToolDefs[0].InputSchema), `{"properties":{"id":{"type":"string"}},"type":"object"}`)
		is.Equal(spec.Agent.ToolDefs[1].SideEffect, "unsafe")
	})
	t.Run("a call runs the action and its outcome goes to the call", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, agentToolsWF))
		d.start(`{}`)
		agent := d.agentTask("triage")
		is.NoErr(d.callTool("triage", "c1", "t/fetch@1", `{"id":"42"}`))
		starts := effectsOf(d.last, EffectStartTask)
		is.Equal(len(starts), 1)
		spec := starts[0].Task
		is.Equal(spec.Ref, "t/fetch@1")
		is.Equal(spec.Executor, ExecutorConnector)
		is.Equal(string(spec.Input), `{"id":"42"}`)
		is.Equal(spec.ToolCall.Agent, agent.ID)
		is.Equal(spec.SideEffect, "read_only")
		is.True(len(spec.Binding) > 0)
		is.Equal(len(records(d.last, RecordAgentToolCalled)), 1)
		is.Equal(d.s.Tasks[agent.ID].Calls["c1"].Status, ToolCallRunning)
		// The output is validated against the tool's output schema.
		err := d.try(Event{Kind: EventTaskCompleted, TaskID: spec.TaskID, Output: json.RawMessage(`{"count":"x"}`)})
		is.Equal(ErrorCode(err), CodeValidation)
		d.must(Event{Kind: EventTaskCompleted, TaskID: spec.TaskID, Output: json.RawMessage(`{"count":2}`)})
		c := d.s.Tasks[agent.ID].Calls["c1"]
		is.Equal(c.Status, ToolCallCompleted)
		is.Equal(string(c.Output), `{"count":2}`)
		is.Equal(len(records(d.last, RecordAgentToolEnded)), 1)
		is.Equal(d.s.Status, StatusRunning) // the step still waits for its agent
		d.must(Event{Kind: EventTaskCompleted, TaskID: agent.ID, Output: json.RawMessage(`"done"`)})
		is.Equal(d.s.Status, StatusSucceeded)
		// The history replays to the same state.
		r := Replay(d.p, d.events, d.s)
		is.Equal(r.Verdict, Consistent)
	})
	t.Run("refusals", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, agentToolsWF))
		d.start(`{}`)
		is.Equal(ErrorCode(d.callTool("triage", "c1", "t/idem@1", `{}`)), CodeValidation)        // not pinned
		is.Equal(ErrorCode(d.callTool("triage", "c1", "t/fetch@1", `{"id":7}`)), CodeValidation) // bad input
		is.Equal(ErrorCode(d.callTool("triage", "", "t/fetch@1", `{}`)), CodeValidation)         // no call id
		is.Equal(ErrorCode(d.callTool("triage", "a b", "t/fetch@1", `{}`)), CodeValidation)      // not printable
		is.NoErr(d.callTool("triage", "c1", "t/fetch@1", `{}`))
		is.Equal(ErrorCode(d.callTool("triage", "c1", "t/fetch@1", `{}`)), CodeRuntimeState) // twice
		tool := d.toolTask("c1")
		err := d.try(Event{Kind: EventAgentToolCalled, TaskID: tool.ID, CallID: "c2", Tool: "t/fetch@1"})
		is.Equal(ErrorCode(err), CodeValidation) // a tool task is not an agent
	})
	t.Run("a safe tool is retried, then the call fails", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, agentToolsWF))
		d.start(`{}`)
		agent := d.agentTask("triage")
		is.NoErr(d.callTool("triage", "c1", "t/fetch@1", `{}`))
		for attempt := 1; attempt <= 3; attempt++ {
			task := d.toolTask("c1")
			is.Equal(task.Attempt, attempt)
			d.must(Event{Kind: EventTaskFailed, TaskID: task.ID, Retryable: true, Error: &TaskError{Code: "HTTP_503"}})
			if attempt < 3 {
				is.Equal(kinds(d.fireNext()), "start_timer,start_task")
			}
		}
		c := d.s.Tasks[agent.ID].Calls["c1"]
		is.Equal(c.Status, ToolCallFailed)
		is.Equal(c.Error.Code, "HTTP_503")
		is.Equal(len(d.s.ActiveIncidents()), 0) // the agent decides, no incident
	})
	t.Run("an unsafe tool whose outcome is unknown is never repeated", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, agentToolsWF))
		d.start(`{}`)
		agent := d.agentTask("triage")
		is.NoErr(d.callTool("triage", "c1", "t/charge@1", `{}`))
		eff := d.must(Event{Kind: EventTaskOutcomeUnknown, TaskID: d.toolTask("c1").ID})
		is.Equal(len(effectsOf(eff, EffectStartTask)), 0)
		c := d.s.Tasks[agent.ID].Calls["c1"]
		is.Equal(c.Status, ToolCallFailed)
		is.Equal(c.Error.Code, "OUTCOME_UNKNOWN")
	})
	t.Run("the agent ending withdraws its running calls", func(t *testing.T) {
		is := is.New(t)
		d := newDriver(t, load(t, agentToolsWF))
		d.start(`{}`)
		agent := d.agentTask("triage")
		is.NoErr(d.callTool("triage", "c1", "t/fetch@1", `{}`))
		tool := d.toolTask("c1")
		eff := d.must(Event{Kind: EventTaskCompleted, TaskID: agent.ID, Output: json.RawMessage(`"x"`)})
		cancels := effectsOf(eff, EffectCancelTask)
		is.Equal(len(cancels), 1)
		is.Equal(cancels[0].TaskID, tool.ID)
		is.Equal(len(d.s.Timers), 0)
		is.Equal(d.s.Status, StatusSucceeded)
	})
}
