package kernel

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode"

	"github.com/agentbridge/bridge/platform/lang"
)

// Agent-step tools (docs/workflow-language.md, "Agent steps"): an agent
// step's job may call the actions its `tools` pin. Each call is an
// agent_tool_called event; the kernel checks the tool is pinned, validates
// the input against the pinned input schema and issues a task of its own
// (the action's binding, side-effect class, timeout and retry policy). The
// task's outcome ends the call -- it never advances the step: the agent
// reads it and goes on. A call that cannot end well by itself (retries
// exhausted, a failure that is not retryable, the unknown outcome of an
// unsafe action) ends failed with the reason: the agent decides what to
// do, and the unsafe action is never repeated automatically.

// toolDef is one pinned tool of an agent step.
type toolDef struct {
	ref        string
	refInfo    artRef
	input      *schema
	output     *schema
	inputRaw   json.RawMessage
	outputRaw  json.RawMessage
	title      string
	sideEffect string
	timeoutMs  int64
	retry      retryPolicy
	executor   string
	binding    json.RawMessage
	// loaded is false when Load had no artifact of the action: the tool is
	// listed but cannot be called.
	loaded bool
}

// ToolSpec describes a pinned tool of an agent step to the agent runner,
// which serves exactly these to the agent.
type ToolSpec struct {
	Ref          string          `json:"ref"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	SideEffect   string          `json:"side_effect"`
	// Callable is false when the engine has no artifact of the action.
	Callable bool `json:"callable"`
}

// ToolCallRef links a tool call's task to its agent task.
type ToolCallRef struct {
	Agent string `json:"agent"` // the agent task's id
	ID    string `json:"id"`    // the call id
}

// ToolCall statuses.
const (
	ToolCallRunning   = "running"
	ToolCallCompleted = "completed"
	ToolCallFailed    = "failed"
)

// ToolCall is a tool call of an agent task and, once ended, its outcome.
type ToolCall struct {
	Tool   string          `json:"tool"`
	TaskID string          `json:"task_id"` // the current attempt's
	Status string          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  *TaskError      `json:"error,omitempty"`
}

// Record types of tool calls.
const (
	RecordAgentToolCalled = "agent_tool_called"
	RecordAgentToolEnded  = "agent_tool_ended"
)

// maxToolCalls bounds the calls of one agent task (they stay in the state
// until the step ends).
const maxToolCalls = 256

func (l *loader) agentTools(n *node, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	n.tools = make(map[string]*toolDef, len(refs))
	for _, ref := range refs {
		if _, dup := n.tools[ref]; dup {
			return fmt.Errorf("tool %s is listed twice", ref)
		}
		r, e, err := l.reference(lang.KindAction, &ref)
		if err != nil {
			return fmt.Errorf("tool %s: %w", ref, err)
		}
		t := &toolDef{ref: ref, refInfo: r, sideEffect: e.SideEffect, executor: ExecutorAction}
		t.inputRaw, t.outputRaw = e.InputSchema, e.OutputSchema
		d, ok := l.defs[r.Digest]
		if ok {
			if t.executor, t.binding, err = actionBinding(ref, r, d); err != nil {
				return err
			}
			t.loaded = true
			t.sideEffect, t.timeoutMs = d.SideEffect, d.TimeoutMs
			if len(d.Input) > 0 && string(d.Input) != "null" {
				t.inputRaw = d.Input
			}
			if len(d.Output) > 0 && string(d.Output) != "null" {
				t.outputRaw = d.Output
			}
			if d.Retry == nil || d.Retry.MaxAttempts < 1 || t.timeoutMs <= 0 {
				return fmt.Errorf("tool %s: the action has no timeout or retry policy", ref)
			}
			t.retry = retryPolicy{
				maxAttempts:   d.Retry.MaxAttempts,
				initialMs:     max(d.Retry.InitialIntervalMs, 1),
				coefficient:   max(d.Retry.BackoffCoefficient, 1),
				maxIntervalMs: max(d.Retry.MaxIntervalMs, d.Retry.InitialIntervalMs, 1),
				nonRetryable:  slices.Clone(d.Retry.NonRetryable),
			}
		}
		switch t.sideEffect {
		case lang.SideEffectReadOnly, lang.SideEffectIdempotent, lang.SideEffectIdempotencyKey, lang.SideEffectUnsafe:
		default:
			return fmt.Errorf("tool %s: unknown side effect %q", ref, t.sideEffect)
		}
		if t.input, err = l.p.schemas.add(t.inputRaw, "input schema of tool "+ref); err != nil {
			return err
		}
		if t.output, err = l.p.schemas.add(t.outputRaw, "output schema of tool "+ref); err != nil {
			return err
		}
		n.tools[ref] = t
	}
	return nil
}

// toolSpecs lists an agent node's tools in their declared order.
func (n *node) toolSpecs() []ToolSpec {
	if n.agent == nil || len(n.tools) == 0 {
		return nil
	}
	out := make([]ToolSpec, 0, len(n.agent.Tools))
	for _, ref := range n.agent.Tools {
		t := n.tools[ref]
		out = append(out, ToolSpec{Ref: ref, InputSchema: slices.Clone(t.inputRaw), OutputSchema: slices.Clone(t.outputRaw),
			SideEffect: t.sideEffect, Callable: t.loaded})
	}
	return out
}

// validCallID: a call id is chosen by the agent runner; it becomes part of
// ids, so it is short and printable.
func validCallID(id string) bool {
	if id == "" || len(id) > maxIDBytes {
		return false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func (m *machine) onAgentToolCalled() error {
	e := m.ev
	agent, err := m.runningTask(e.TaskID)
	if err != nil {
		return err
	}
	if agent.Executor != ExecutorAgent || agent.Call != nil {
		return refuse(CodeValidation, "task %s is not an agent step's job", e.TaskID)
	}
	if !validCallID(e.CallID) {
		return refuse(CodeValidation, "a call id of 1 to %d printable bytes is required", maxIDBytes)
	}
	if _, dup := agent.Calls[e.CallID]; dup {
		return refuseWrap(CodeRuntimeState, ErrNoChange, "call %s was already made", e.CallID)
	}
	if len(agent.Calls) >= maxToolCalls {
		return refuse(CodeCapacity, "the agent step already made %d tool calls", maxToolCalls)
	}
	n := m.p.node(agent.Node)
	def := n.tools[e.Tool]
	if def == nil {
		return refuse(CodeValidation, "%q is not one of the agent step's tools", e.Tool)
	}
	if !def.loaded {
		return refuse(CodeRuntimeState, "tool %s cannot be called: the engine has no artifact of the action", e.Tool)
	}
	raw := e.Input
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	v, err := decodeExternal(raw)
	if err != nil {
		return refuseWrap(CodeValidation, err, "tool input")
	}
	if err := def.input.validate(v); err != nil {
		return refuseWrap(CodeValidation, err, "the input does not match the pinned input schema of %s", e.Tool)
	}
	in, err := encodeValue(def.input.normalize(v))
	if err != nil {
		return refuseWrap(CodeValidation, err, "tool input")
	}
	run := m.st.RunID
	task := &Task{
		Token:        agent.Token,
		Node:         agent.Node,
		Instance:     agent.Instance,
		Generation:   agent.Generation,
		Executor:     def.executor,
		Ref:          def.ref,
		MaxAttempts:  def.retry.maxAttempts,
		OperationKey: derivedID("operation", run, agent.OperationKey, e.CallID, def.ref),
		SideEffect:   def.sideEffect,
		Input:        in,
		StepStarted:  m.now,
		Call:         &ToolCallRef{Agent: agent.ID, ID: e.CallID},
	}
	if agent.Calls == nil {
		agent.Calls = map[string]*ToolCall{}
	}
	agent.Calls[e.CallID] = &ToolCall{Tool: def.ref, Status: ToolCallRunning}
	m.record(Record{Type: RecordAgentToolCalled, NodeID: agent.Node, Instance: agent.Instance, Generation: agent.Generation,
		TaskID: agent.ID, Detail: fmt.Sprintf("call %s of %s", e.CallID, def.ref)})
	m.issueTool(task, 1)
	return nil
}

func (m *machine) toolOf(task *Task) *toolDef {
	return m.p.node(task.Node).tools[task.Ref]
}

// policy is the retry policy of a task: its step's, or its tool's.
func (m *machine) policy(task *Task) retryPolicy {
	if task.Call != nil {
		return m.toolOf(task).retry
	}
	return m.p.node(task.Node).retry
}

// taskTimerID names a timer of a task's attempt. A tool call's timers are
// keyed by its operation key: one step instance makes many calls.
func (m *machine) taskTimerID(task *Task, kind TimerKind, attempt int) string {
	if task.Call != nil {
		return derivedID("timer", m.st.RunID, string(kind), task.OperationKey, itoa(attempt))
	}
	return timerID(m.st.RunID, kind, task.Node, task.Generation, attempt)
}

// issueTool starts an attempt of a tool call.
func (m *machine) issueTool(task *Task, attempt int) {
	def := m.toolOf(task)
	task.Attempt = attempt
	task.ID = derivedID("task", m.st.RunID, task.OperationKey, itoa(attempt))
	task.Status = TaskRunning
	task.IssuedAt = m.now
	due := addMs(m.now, def.timeoutMs)
	task.AttemptDeadline = timePtr(due)
	m.st.Tasks[task.ID] = task
	if c := m.callOf(task); c != nil {
		c.TaskID = task.ID
	}
	m.startTimer(&Timer{ID: m.taskTimerID(task, TimerAttemptTimeout, attempt), Kind: TimerAttemptTimeout, Due: due,
		NodeID: task.Node, Instance: task.Instance, Token: task.Token, TaskID: task.ID})
	m.emit(Effect{Kind: EffectStartTask, Task: &TaskSpec{
		TaskID:             task.ID,
		NodeID:             task.Node,
		Instance:           task.Instance,
		Generation:         task.Generation,
		Attempt:            attempt,
		Executor:           task.Executor,
		Ref:                task.Ref,
		PublishedVersionID: def.refInfo.PublishedVersionID,
		Binding:            slices.Clone(def.binding),
		Input:              slices.Clone(task.Input),
		OperationKey:       task.OperationKey,
		IdempotencyKey:     task.OperationKey,
		SideEffect:         task.SideEffect,
		Deadline:           timePtr(due),
		ToolCall:           &ToolCallRef{Agent: task.Call.Agent, ID: task.Call.ID},
	}})
}

// reissueTool starts the next attempt of a tool call after its backoff.
func (m *machine) reissueTool(task *Task) {
	delete(m.st.Tasks, task.ID)
	m.issueTool(task, task.Attempt+1)
}

// callOf answers the agent task's record of a tool call's task (nil when
// the agent task ended meanwhile).
func (m *machine) callOf(task *Task) *ToolCall {
	agent := m.st.Tasks[task.Call.Agent]
	if agent == nil {
		return nil
	}
	return agent.Calls[task.Call.ID]
}

// toolEnded ends a tool call: its task is closed and the outcome kept for
// the agent.
func (m *machine) toolEnded(task *Task, output json.RawMessage, te *TaskError) {
	m.closeTask(task)
	detail := fmt.Sprintf("call %s of %s completed", task.Call.ID, task.Ref)
	if te != nil {
		detail = fmt.Sprintf("call %s of %s failed: %s", task.Call.ID, task.Ref, te.Code)
	}
	m.record(Record{Type: RecordAgentToolEnded, NodeID: task.Node, Instance: task.Instance, Generation: task.Generation,
		TaskID: task.Call.Agent, Attempt: task.Attempt, Detail: detail})
	c := m.callOf(task)
	if c == nil {
		return
	}
	if te != nil {
		e := *te
		c.Status, c.Error = ToolCallFailed, &e
		return
	}
	c.Status, c.Output = ToolCallCompleted, output
}

// endToolCalls withdraws the running calls of an agent task that ended:
// nobody waits for their outcomes any more.
func (m *machine) endToolCalls(agent *Task) {
	for _, id := range sortedKeys(agent.Calls) {
		c := agent.Calls[id]
		if c.Status != ToolCallRunning {
			continue
		}
		if t := m.st.Tasks[c.TaskID]; t != nil && t.Call != nil {
			if t.Status == TaskRunning {
				m.emit(Effect{Kind: EffectCancelTask, TaskID: t.ID, Reason: "agent_ended"})
			}
			m.cancelTaskTimers(t)
			delete(m.st.Tasks, t.ID)
		}
		c.Status, c.Error = ToolCallFailed, &TaskError{Code: "AGENT_ENDED", Message: "the agent step ended before the call"}
	}
}
