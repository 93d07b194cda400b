package kernel

import (
	"encoding/json"
	"slices"

	"github.com/agentbridge/bridge/platform/lang"
)

// Action steps and agent steps are tasks: issued with start_task, completed
// by task_completed, retried with the action's policy and suspended with
// an incident when they cannot go on by themselves.

func (m *machine) enterAction(tok *Token, n *node) {
	act := m.activation(tok.Scope)
	in, err := n.with.eval(act)
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	raw, ok := m.encodeOrFail(in, tok, "action input")
	if !ok {
		return
	}
	idem := ""
	if n.idemKey != nil {
		if idem, err = evalString(n.idemKey, act, "the idempotency key"); err != nil {
			m.evalFailed(err, tok)
			return
		}
	}
	task := m.newTask(tok, n, raw)
	task.IdemKey = idem
	m.issue(tok, task, 1)
}

func (m *machine) enterAgent(tok *Token, n *node) {
	prompt, err := evalString(n.prompt, m.activation(tok.Scope), "the prompt")
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	task := m.newTask(tok, n, nullJSON)
	task.Prompt = prompt
	m.issue(tok, task, 1)
}

func (m *machine) newTask(tok *Token, n *node, input json.RawMessage) *Task {
	task := &Task{
		Token:        tok.ID,
		Node:         n.id,
		Instance:     tok.Instance,
		Generation:   tok.Generation,
		Executor:     n.executor,
		Ref:          n.ref,
		MaxAttempts:  n.retry.maxAttempts,
		OperationKey: operationKey(m.st.RunID, n.id, tok.Generation),
		SideEffect:   n.sideEffect,
		Input:        input,
		StepStarted:  m.now,
	}
	switch {
	case n.kind == string(lang.StepAgent):
		// An agent step's timeout is its deadline: there is one attempt.
		task.Deadline = timePtr(addMs(m.now, n.timeoutMs))
	case n.deadlineMs > 0:
		task.Deadline = timePtr(addMs(m.now, n.deadlineMs))
	}
	return task
}

// issue starts an attempt: its timers and the start_task effect. The
// operation key and the step deadline are the instance's, whatever the
// attempt.
func (m *machine) issue(tok *Token, task *Task, attempt int) {
	n := m.p.node(task.Node)
	run := m.st.RunID
	task.Attempt = attempt
	task.ID = taskID(run, task.Node, task.Generation, attempt)
	task.Status = TaskRunning
	task.IssuedAt = m.now
	due := addMs(m.now, n.timeoutMs)
	attemptTimer := true
	if task.Deadline != nil && !due.Before(*task.Deadline) {
		due, attemptTimer = *task.Deadline, false // the step deadline covers it
	}
	task.AttemptDeadline = timePtr(due)
	m.st.Tasks[task.ID] = task
	clearWait(tok)
	tok.Wait, tok.TaskID = WaitTask, task.ID
	if attemptTimer {
		m.startTimer(&Timer{ID: timerID(run, TimerAttemptTimeout, task.Node, task.Generation, attempt), Kind: TimerAttemptTimeout,
			Due: due, NodeID: task.Node, Instance: task.Instance, Token: tok.ID, TaskID: task.ID})
	}
	if task.Deadline != nil {
		// One deadline timer serves every attempt. An incident cancels it; a
		// retry_safe resolution re-arms it with the same id and the original
		// due time, so a resolution never extends a deadline.
		id := timerID(run, TimerStepDeadline, task.Node, task.Generation, 0)
		if _, pending := m.st.Timers[id]; !pending {
			m.startTimer(&Timer{ID: id, Kind: TimerStepDeadline, Due: *task.Deadline, NodeID: task.Node,
				Instance: task.Instance, Token: tok.ID})
		}
	}
	spec := &TaskSpec{
		TaskID:             task.ID,
		NodeID:             task.Node,
		Instance:           task.Instance,
		Generation:         task.Generation,
		Attempt:            attempt,
		Executor:           task.Executor,
		Ref:                task.Ref,
		PublishedVersionID: n.refInfo.PublishedVersionID,
		Binding:            slices.Clone(n.binding),
		Input:              slices.Clone(task.Input),
		OperationKey:       task.OperationKey,
		IdempotencyKey:     task.IdemKey,
		SideEffect:         task.SideEffect,
		Deadline:           timePtr(due),
	}
	if spec.IdempotencyKey == "" {
		spec.IdempotencyKey = task.OperationKey
	}
	if task.Deadline != nil {
		spec.StepDeadline = timePtr(*task.Deadline)
	}
	if n.agent != nil {
		a := *n.agent
		a.Tools = slices.Clone(n.agent.Tools)
		a.Output = slices.Clone(n.agent.Output)
		a.Prompt = task.Prompt
		a.ToolDefs = n.toolSpecs()
		spec.Agent = &a
		spec.Input = nil
	}
	m.emit(Effect{Kind: EffectStartTask, Task: spec})
}

// reissue starts the next attempt of a token's task: after a backoff, or
// the one extra attempt a retry_safe resolution allows.
func (m *machine) reissue(tok *Token) {
	task := m.st.Tasks[tok.TaskID]
	if task == nil {
		return
	}
	delete(m.st.Tasks, task.ID)
	m.issue(tok, task, task.Attempt+1)
}

func (m *machine) runningTask(id string) (*Task, error) {
	task := m.st.Tasks[id]
	if task == nil {
		return nil, refuse(CodeRuntimeState, "task %s is not pending", id)
	}
	if task.Status != TaskRunning {
		return nil, refuse(CodeRuntimeState, "task %s is not running (%s)", id, task.Status)
	}
	return task, nil
}

func (m *machine) onTaskCompleted() error {
	task, err := m.runningTask(m.ev.TaskID)
	if err != nil {
		return err
	}
	n := m.p.node(task.Node)
	out := n.output
	if task.Call != nil {
		out = m.toolOf(task).output
	}
	raw, err := m.externalOutput(m.ev.Output, out, CodeValidation)
	if err != nil {
		return err
	}
	if task.Call != nil {
		m.toolEnded(task, raw, nil)
		return nil
	}
	m.closeTask(task)
	if tok := m.st.Tokens[task.Token]; tok != nil {
		m.deliver(tok, raw, n.next)
	}
	return nil
}

// externalOutput validates an output from outside against its pinned
// schema and types it.
func (m *machine) externalOutput(raw json.RawMessage, s *schema, code string) (json.RawMessage, error) {
	if len(raw) == 0 {
		raw = nullJSON
	}
	v, err := decodeExternal(raw)
	if err != nil {
		return nil, refuseWrap(code, err, "output")
	}
	if err := s.validate(v); err != nil {
		return nil, refuseWrap(code, err, "the output does not match the pinned output schema")
	}
	out, err := encodeValue(s.normalize(v))
	if err != nil {
		return nil, refuseWrap(code, err, "output")
	}
	return out, nil
}

// closeTask forgets a task that ended, with its timers.
func (m *machine) closeTask(task *Task) {
	m.cancelTaskTimers(task)
	m.endToolCalls(task)
	delete(m.st.Tasks, task.ID)
}

func (m *machine) cancelTaskTimers(task *Task) {
	m.cancelTimer(m.taskTimerID(task, TimerAttemptTimeout, task.Attempt))
	m.cancelTimer(m.taskTimerID(task, TimerRetryBackoff, task.Attempt))
	if task.Call == nil {
		m.cancelTimer(timerID(m.st.RunID, TimerStepDeadline, task.Node, task.Generation, 0))
	}
}

func (m *machine) onTaskFailed() error {
	task, err := m.runningTask(m.ev.TaskID)
	if err != nil {
		return err
	}
	te := TaskError{Code: "TASK_FAILED"}
	if m.ev.Error != nil {
		te = *m.ev.Error
		if te.Code == "" {
			te.Code = "TASK_FAILED"
		}
	}
	task.LastError = &te
	m.cancelTimer(m.taskTimerID(task, TimerAttemptTimeout, task.Attempt))
	if !m.ev.Retryable || slices.Contains(m.policy(task).nonRetryable, te.Code) {
		if task.Call != nil {
			m.toolEnded(task, nil, &te)
			return nil
		}
		m.openIncident(task, nil, IncidentTaskFailed)
		return nil
	}
	m.retryOrExhaust(task)
	return nil
}

func (m *machine) onTaskUnknown() error {
	task, err := m.runningTask(m.ev.TaskID)
	if err != nil {
		return err
	}
	m.cancelTimer(m.taskTimerID(task, TimerAttemptTimeout, task.Attempt))
	m.emit(Effect{Kind: EffectCancelTask, TaskID: task.ID, Reason: "outcome_unknown"})
	m.outcomeUnknown(task, "OUTCOME_UNKNOWN", "the outcome of the attempt is unknown")
	return nil
}

// outcomeUnknown: an attempt may or may not have taken effect. A safe class
// is simply tried again (same operation key); an unsafe one is never
// re-issued automatically.
func (m *machine) outcomeUnknown(task *Task, code, msg string) {
	task.LastError = &TaskError{Code: code, Message: msg}
	if task.SideEffect == lang.SideEffectUnsafe {
		if task.Call != nil {
			// The agent is told; the action is never repeated by itself.
			m.toolEnded(task, nil, task.LastError)
			return
		}
		m.openIncident(task, nil, IncidentTaskAmbiguous)
		return
	}
	m.retryOrExhaust(task)
}

func (m *machine) retryOrExhaust(task *Task) {
	p := m.policy(task)
	if task.Attempt >= p.maxAttempts {
		if task.Call != nil {
			m.toolEnded(task, nil, task.LastError)
			return
		}
		m.openIncident(task, nil, IncidentRetriesExhausted)
		return
	}
	delay := backoffMs(p, task.Attempt)
	if asked := min(m.ev.RetryAfterMs, p.maxIntervalMs); asked > delay {
		delay = asked
	}
	task.Status = TaskBackoff
	due := addMs(m.now, delay)
	m.startTimer(&Timer{ID: m.taskTimerID(task, TimerRetryBackoff, task.Attempt), Kind: TimerRetryBackoff,
		Due: due, NodeID: task.Node, Instance: task.Instance, Token: task.Token, TaskID: task.ID})
	m.record(Record{Type: RecordTaskRetryScheduled, NodeID: task.Node, Instance: task.Instance, Generation: task.Generation,
		TaskID: task.ID, Attempt: task.Attempt, Deadline: timePtr(due)})
}

// backoffMs is the wait after attempt n failed:
// min(initialInterval × backoffCoefficient^(n-1), maxInterval). Repeated
// single multiplications keep it bit-identical on every platform.
func backoffMs(p retryPolicy, n int) int64 {
	d := float64(p.initialMs)
	limit := float64(p.maxIntervalMs)
	for i := 1; i < n && d < limit; i++ {
		d *= p.coefficient
	}
	if d >= limit {
		return p.maxIntervalMs
	}
	return int64(d)
}

// taskDeadline: the step's deadline for all attempts passed.
func (m *machine) taskDeadline(task *Task) {
	if task.Status == TaskIncident {
		return
	}
	if task.Status == TaskRunning {
		m.emit(Effect{Kind: EffectCancelTask, TaskID: task.ID, Reason: "deadline"})
	}
	task.LastError = &TaskError{Code: "DEADLINE_EXCEEDED", Message: "the step's deadline passed"}
	m.openIncident(task, nil, IncidentTaskDeadline)
}
