package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/lang"
)

// Bounds of the kernel's work and state.
const (
	// MaxReductions bounds the node executions of one Step. A Step that
	// reaches it stops with the remaining work queued and emits a Continue
	// effect; nothing is lost and no Step runs unbounded.
	MaxReductions = 10_000
	// MaxBufferedSignals bounds signals received before a step consumes
	// them.
	MaxBufferedSignals = 1_000
	// MaxForEachItems bounds a forEach list; longer lists fail the run.
	MaxForEachItems = 100_000
)

// Run error codes the kernel sets (a fail step sets its own code).
const (
	ErrCodeExpression    = "EXPRESSION_FAILED"
	ErrCodeLimit         = "LIMIT_EXCEEDED"
	ErrCodeOutputInvalid = "OUTPUT_INVALID"
	ErrCodeVarInvalid    = "VARIABLE_INVALID"
	ErrCodeDecision      = "DECISION_FAILED"
	ErrCodeWaitInvalid   = "WAIT_INVALID"
	ErrCodeRunTimeout    = "RUN_TIMEOUT"
	ErrCodeStepTimeout   = "STEP_TIMEOUT"
	ErrCodeChildFailed   = "CHILD_FAILED"
)

// Step applies one event to a run's state and returns the new state and
// the effects the engine must perform. It is a pure function: no clock,
// randomness or I/O, and the same program, state and event always give the
// same state bytes and effects. An event that does not fit the state is
// refused with an *Error and the state is returned unchanged.
func Step(p *Program, s State, e Event) (State, []Effect, error) {
	return step(p, s, e, nil)
}

func step(p *Program, s State, e Event, pause Pause) (_ State, _ []Effect, err error) {
	if p == nil {
		return s, nil, errors.New("kernel: nil program")
	}
	// Defence in depth: a state the kernel did not write (edited in the
	// store, truncated) must not crash the engine. The kernel itself never
	// panics on a state it produced.
	defer func() {
		if r := recover(); r != nil {
			err = refuseWrap(CodeRuntimeState, ErrCorruptState, "internal error: %v", r)
		}
	}()
	m := &machine{p: p, ev: &e, pause: pause}
	if err := m.step(&s); err != nil {
		return s, nil, err
	}
	if m.st.memo != nil {
		m.st.memo.prune(m.st)
	}
	return *m.st, m.effects, nil
}

// machine is one Step in progress.
type machine struct {
	p          *Program
	st         *State
	ev         *Event
	now        time.Time
	effects    []Effect
	reductions int
	cache      valueCache
	before     Status
	pause      Pause
}

func (m *machine) step(s *State) error {
	e := m.ev
	if e.At.IsZero() {
		return refuse(CodeValidation, "the event has no time")
	}
	if e.Kind == EventStarted {
		if s.Status != "" {
			return refuse(CodeRuntimeState, "the run has already started")
		}
		if e.Seq != 1 {
			return refuse(CodeRuntimeState, "the started event must have seq 1, not %d", e.Seq)
		}
		m.now = e.At.UTC()
		if err := m.start(); err != nil {
			return err
		}
		m.reduce()
		m.finish()
		return nil
	}
	switch {
	case s.Status == "":
		return refuse(CodeRuntimeState, "the run has not started")
	case s.Digest != m.p.digest:
		return refuse(CodeRuntimeState, "the state belongs to program %s, not %s", s.Digest, m.p.digest)
	case e.Seq != s.Seq+1:
		return refuse(CodeRuntimeState, "event seq %d does not follow %d", e.Seq, s.Seq)
	case s.Format != StateFormat || s.Scopes[""] == nil:
		return refuseWrap(CodeRuntimeState, ErrCorruptState, "the state has format %d or no run scope", s.Format)
	case s.Status.Terminal():
		if e.Kind == EventCancelRequested && s.Status == StatusCancelled {
			return refuseWrap(CodeRuntimeState, ErrNoChange, "the run is already cancelled")
		}
		return refuse(CodeRuntimeState, "the run has ended (%s)", s.Status)
	}
	m.now = e.At.UTC()
	if m.now.Before(s.Now) {
		m.now = s.Now // time never goes back inside a run
	}
	if e.Kind == EventTimerFired {
		t, ok := s.Timers[e.TimerID]
		if !ok {
			return refuse(CodeRuntimeState, "timer %s is not pending", e.TimerID)
		}
		if t.Due.After(m.now) {
			return refuse(CodeRuntimeState, "timer %s is due at %s, not yet", e.TimerID, t.Due.Format(time.RFC3339Nano))
		}
	}
	if e.Kind == EventContinue && (len(s.Ready) == 0 || len(s.ActiveIncidents()) > 0) {
		return refuseWrap(CodeRuntimeState, ErrNoChange, "no work to continue")
	}
	m.st = s.clone()
	m.before = s.Status
	if err := m.fireDue(); err != nil {
		return err
	}
	if m.terminal() {
		// A deadline that passed before this event ended the run; only a
		// timer event may record that, so the event itself is refused.
		if e.Kind != EventTimerFired {
			return refuse(CodeRuntimeState, "the run had ended (%s) by %s", m.st.Status, m.now.Format(time.RFC3339Nano))
		}
	} else if err := m.apply(); err != nil {
		return err
	}
	m.reduce()
	m.finish()
	return nil
}

func (m *machine) apply() error {
	e := m.ev
	switch e.Kind {
	case EventTimerFired, EventContinue:
		return nil // due timers were fired above; reduction follows
	case EventTaskCompleted:
		return m.onTaskCompleted()
	case EventTaskFailed:
		return m.onTaskFailed()
	case EventTaskOutcomeUnknown:
		return m.onTaskUnknown()
	case EventSignalReceived:
		return m.onSignal()
	case EventHumanCompleted:
		return m.onHumanCompleted()
	case EventIncidentResolved:
		return m.onIncidentResolved()
	case EventCancelRequested:
		if err := checkReason(e.Reason); err != nil {
			return err
		}
		m.endRun(StatusCancelled, nil, nil, false, "cancelled")
		return nil
	case EventChildCompleted:
		return m.onChildCompleted()
	case EventAgentToolCalled:
		return m.onAgentToolCalled()
	}
	return refuse(CodeValidation, "unknown event kind %q", e.Kind)
}

func checkReason(r string) error {
	if strings.TrimSpace(r) == "" {
		return refuse(CodeValidation, "a reason is required")
	}
	if utf8.RuneCountInString(r) > maxReasonRunes {
		return refuse(CodeValidation, "the reason is longer than %d characters", maxReasonRunes)
	}
	return nil
}

// start initialises the state from the started event.
func (m *machine) start() error {
	e, p := m.ev, m.p
	if e.RunID == "" || len(e.RunID) > maxIDBytes {
		return refuse(CodeValidation, "a run id of 1 to %d bytes is required", maxIDBytes)
	}
	rawIn := e.Input
	if len(rawIn) == 0 {
		rawIn = json.RawMessage("{}")
	}
	in, err := decodeExternal(rawIn)
	if err != nil {
		return refuseWrap(CodeValidation, err, "run input")
	}
	if err := p.input.validate(in); err != nil {
		return refuseWrap(CodeValidation, err, "the run input does not match the workflow's input schema")
	}
	input, err := encodeValue(p.input.normalize(in))
	if err != nil {
		return refuseWrap(CodeValidation, err, "run input")
	}
	m.st = &State{
		Format:      StateFormat,
		RunID:       e.RunID,
		Workflow:    fmt.Sprintf("%s@%d", p.id, p.version),
		Digest:      p.digest,
		Status:      StatusRunning,
		Now:         m.now,
		StartedAt:   m.now,
		Input:       input,
		Vars:        map[string]json.RawMessage{},
		Scopes:      map[string]*Scope{"": {Outputs: map[string]json.RawMessage{}}},
		Tokens:      map[string]*Token{},
		Ready:       []string{},
		Tasks:       map[string]*Task{},
		Timers:      map[string]*Timer{},
		Humans:      map[string]*HumanTask{},
		Children:    map[string]*Child{},
		Signals:     []BufferedSignal{},
		Incidents:   map[string]*Incident{},
		Generations: map[string]int{},
	}
	m.before = StatusRunning
	for _, v := range p.vars {
		m.st.Vars[v.name] = mustEncode(v.def)
	}
	if p.timeoutMs > 0 {
		d := addMs(m.now, p.timeoutMs)
		m.st.Deadline = &d
		m.startTimer(&Timer{ID: timerID(e.RunID, TimerRunDeadline, "", 0, 0), Kind: TimerRunDeadline, Due: d})
	}
	if p.entry == nil {
		m.finishWorkflow("")
		return nil
	}
	m.push(m.newToken(*p.entry, "", ""))
	return nil
}

func (m *machine) terminal() bool { return m.st.Status.Terminal() }

func (m *machine) suspended() bool {
	for _, inc := range m.st.Incidents {
		if inc.Status == IncidentActive {
			return true
		}
	}
	return false
}

func (m *machine) emit(e Effect) { m.effects = append(m.effects, e) }

func (m *machine) record(r Record) {
	r.Seq = m.ev.Seq
	r.EventID = m.ev.ID
	if r.ObservedAt.IsZero() {
		r.ObservedAt = m.now
	}
	m.emit(Effect{Kind: EffectRecord, Record: &r})
}

// fireDue processes every timer due at the event's time, in DueOrder.
func (m *machine) fireDue() error {
	for guard := 0; !m.terminal(); guard++ {
		due := dueTimers(m.st.Timers, m.now)
		if len(due) == 0 {
			return nil
		}
		if guard > MaxReductions+len(m.st.Timers) {
			return errors.New("kernel: timers keep becoming due") // a kernel bug, never input
		}
		t := due[0]
		delete(m.st.Timers, t.ID)
		m.fire(t)
	}
	return nil
}

func (m *machine) fire(t *Timer) {
	switch t.Kind {
	case TimerRunDeadline:
		m.record(Record{Type: RecordTimedOut, Deadline: timePtr(t.Due), WaitID: t.ID, Detail: "run deadline"})
		m.endRun(StatusTimedOut, nil, &RunError{Code: ErrCodeRunTimeout, Message: "the run's deadline passed"}, false, "run_deadline")
	case TimerWait:
		if tok := m.st.Tokens[t.Token]; tok != nil {
			n := m.p.node(tok.Node)
			m.record(Record{Type: RecordWaitElapsed, NodeID: tok.Node, Instance: tok.Instance, Generation: tok.Generation,
				Deadline: timePtr(t.Due), WaitID: t.ID})
			m.deliver(tok, nullJSON, n.next)
		}
	case TimerSignalDeadline, TimerHumanDeadline:
		if tok := m.st.Tokens[t.Token]; tok != nil {
			m.waitTimedOut(tok, t)
		}
	case TimerAttemptTimeout:
		if task := m.st.Tasks[t.TaskID]; task != nil && task.Status == TaskRunning {
			m.emit(Effect{Kind: EffectCancelTask, TaskID: task.ID, Reason: "attempt_timeout"})
			m.outcomeUnknown(task, "ATTEMPT_TIMEOUT", "the attempt timed out")
		}
	case TimerStepDeadline:
		if tok := m.st.Tokens[t.Token]; tok != nil {
			if task := m.st.Tasks[tok.TaskID]; task != nil {
				m.taskDeadline(task)
			}
		}
	case TimerRetryBackoff:
		if task := m.st.Tasks[t.TaskID]; task != nil && task.Status == TaskBackoff {
			if task.Call != nil {
				m.reissueTool(task)
			} else if tok := m.st.Tokens[task.Token]; tok != nil {
				tok.Phase = PhaseIssue
				m.push(tok)
			}
		}
	case TimerChildTimeout:
		if c := m.st.Children[t.ChildID]; c != nil {
			m.childTimedOut(c)
		}
	}
}

var nullJSON = json.RawMessage("null")

// reduce executes ready tokens until none is left, the run ends or is
// suspended, or the reduction budget is spent.
func (m *machine) reduce() {
	for len(m.st.Ready) > 0 {
		if m.terminal() || m.suspended() {
			return
		}
		if m.reductions >= MaxReductions {
			m.emit(Effect{Kind: EffectContinue})
			return
		}
		id := m.st.Ready[0]
		tok := m.st.Tokens[id]
		if tok != nil && tok.Phase == PhaseEnter && m.pause != nil && m.pause(tok.Node, m.instanceOf(tok)) {
			m.emit(Effect{Kind: EffectContinue})
			return
		}
		m.st.Ready = m.st.Ready[1:]
		if tok == nil {
			continue
		}
		tok.Queued = false
		switch tok.Phase {
		case PhaseEnter:
			m.reductions++
			m.enter(tok)
		case PhaseComplete:
			m.proceed(tok, tok.Output, tok.Target)
		case PhaseIssue:
			m.reductions++
			m.reissue(tok)
		}
	}
}

// finish settles the status and the sequence number.
func (m *machine) finish() {
	st := m.st
	if !st.Status.Terminal() {
		switch {
		case m.suspended():
			st.Status = StatusSuspended
		case m.busy():
			st.Status = StatusRunning
		default:
			st.Status = StatusWaiting
		}
		if st.Status == StatusSuspended && m.before != StatusSuspended {
			m.record(Record{Type: RecordRunSuspended})
		}
		if st.Status != StatusSuspended && m.before == StatusSuspended {
			m.record(Record{Type: RecordRunResumed})
		}
	}
	if st.Ready == nil {
		st.Ready = []string{}
	}
	if st.Signals == nil {
		st.Signals = []BufferedSignal{}
	}
	st.Seq = m.ev.Seq
	st.Now = m.now
}

// busy: work is in flight or queued, as opposed to waiting for time, a
// signal or a person.
func (m *machine) busy() bool {
	if len(m.st.Ready) > 0 {
		return true
	}
	for _, t := range m.st.Tasks {
		if t.Status == TaskRunning || t.Status == TaskBackoff {
			return true
		}
	}
	for _, c := range m.st.Children {
		if !c.Blocked {
			return true
		}
	}
	return false
}

// push queues a token for reduction; a token is queued at most once, and
// its phase when it is reduced decides what happens.
func (m *machine) push(tok *Token) {
	if tok.Queued {
		return
	}
	tok.Queued = true
	m.st.Ready = append(m.st.Ready, tok.ID)
}

func (m *machine) newToken(nodeID, scope, container string) *Token {
	m.st.Counter++
	tok := &Token{ID: "t" + fmt.Sprint(m.st.Counter), Node: nodeID, Scope: scope, Container: container, Phase: PhaseEnter}
	m.st.Tokens[tok.ID] = tok
	return tok
}

// instanceOf is the instance key a token's entry will have.
func (m *machine) instanceOf(tok *Token) string {
	if sc := m.st.Scopes[tok.Scope]; sc != nil {
		return tok.Node + sc.Suffix
	}
	return tok.Node
}

// enter executes a token's node.
func (m *machine) enter(tok *Token) {
	n := m.p.node(tok.Node)
	if n == nil {
		m.failRun(ErrCodeExpression, "unknown node "+tok.Node, tok)
		return
	}
	st := m.st
	gen := st.Generations[n.id] + 1
	st.Generations[n.id] = gen
	st.Counter++
	tok.Generation, tok.Order, tok.Since = gen, st.Counter, m.now
	tok.Instance = n.id + st.Scopes[tok.Scope].Suffix
	clearWait(tok)
	m.record(Record{Type: RecordStepStarted, NodeID: n.id, Instance: tok.Instance, Generation: gen})
	switch lang.StepKind(n.kind) {
	case lang.StepAction:
		m.enterAction(tok, n)
	case lang.StepAgent:
		m.enterAgent(tok, n)
	case lang.StepDecision:
		m.enterDecision(tok, n)
	case lang.StepWorkflow:
		m.enterWorkflow(tok, n)
	case lang.StepWait:
		m.enterWait(tok, n)
	case lang.StepSignal:
		m.enterSignal(tok, n)
	case lang.StepHuman:
		m.enterHuman(tok, n)
	case lang.StepForEach:
		m.enterForEach(tok, n)
	case lang.StepParallel:
		m.enterParallel(tok, n)
	case lang.StepSwitch:
		m.enterSwitch(tok, n)
	case lang.StepSet:
		m.enterSet(tok, n)
	case lang.StepFail:
		m.enterFail(tok, n)
	case lang.StepSucceed:
		m.enterSucceed(tok, n)
	}
}

func clearWait(tok *Token) {
	tok.Phase = PhaseWait
	tok.Wait = ""
	tok.Output, tok.Target = nil, nil
	tok.TaskID, tok.TimerID, tok.HumanID, tok.ChildID, tok.Signal = "", "", "", "", ""
	tok.Deadline = nil
	tok.Pending = 0
	tok.Loop = nil
}

// deliver completes a waiting token; the completion is applied when the
// token is reduced, so that a suspended run holds it at the barrier.
func (m *machine) deliver(tok *Token, output json.RawMessage, target *string) {
	tok.Phase = PhaseComplete
	tok.Wait = ""
	tok.Output = output
	tok.Target = target
	m.push(tok)
}

// proceed records a step's output and moves the token on.
func (m *machine) proceed(tok *Token, output json.RawMessage, target *string) {
	if output == nil {
		output = nullJSON
	}
	sc := m.st.Scopes[tok.Scope]
	sc.Outputs[tok.Node] = output
	m.record(Record{Type: RecordStepCompleted, NodeID: tok.Node, Instance: tok.Instance, Generation: tok.Generation})
	clearWait(tok)
	if target != nil {
		tok.Node = *target
		tok.Phase = PhaseEnter
		m.push(tok)
		return
	}
	m.listEnd(tok)
}

// listEnd handles the end of a step list: the run's, a parallel branch's
// or a forEach iteration's.
func (m *machine) listEnd(tok *Token) {
	delete(m.st.Tokens, tok.ID)
	if tok.Container == "" {
		m.finishWorkflow(tok.Scope)
		return
	}
	c := m.st.Tokens[tok.Container]
	if c == nil {
		return
	}
	cn := m.p.node(c.Node)
	switch lang.StepKind(cn.kind) {
	case lang.StepParallel:
		c.Pending--
		if c.Pending <= 0 {
			m.deliver(c, nullJSON, cn.next)
		}
	case lang.StepForEach:
		m.iterationDone(c, cn, tok.Scope)
	}
}

// finishWorkflow ends the run with the workflow's result.
func (m *machine) finishWorkflow(scope string) {
	out, err := m.p.result.eval(m.activation(scope))
	if err != nil {
		m.evalFailed(err, nil)
		return
	}
	m.succeed(out)
}

func (m *machine) succeed(out any) {
	typed := m.p.output.normalize(out)
	if err := m.p.output.validate(typed); err != nil {
		m.failRun(ErrCodeOutputInvalid, "the run output does not match the output schema: "+err.Error(), nil)
		return
	}
	raw, err := encodeValue(typed)
	if err != nil {
		m.failRun(ErrCodeLimit, "run output: "+err.Error(), nil)
		return
	}
	m.endRun(StatusSucceeded, raw, nil, false, "run_ended")
}

func (m *machine) failRun(code, msg string, tok *Token) {
	re := &RunError{Code: code, Message: msg}
	if tok != nil {
		re.Node, re.Instance = tok.Node, tok.Instance
	}
	m.endRun(StatusFailed, nil, re, false, "run_ended")
}

// evalFailed fails the run because an expression failed.
func (m *machine) evalFailed(err error, tok *Token) {
	var ee *exprError
	if errors.As(err, &ee) && ee.costLimit {
		m.failRun(ErrCodeLimit, err.Error(), tok)
		return
	}
	m.failRun(ErrCodeExpression, err.Error(), tok)
}

// encodeOrFail encodes an evaluated value, failing the run when it is over
// the payload limit.
func (m *machine) encodeOrFail(v any, tok *Token, what string) (json.RawMessage, bool) {
	raw, err := encodeValue(v)
	if err != nil {
		m.failRun(ErrCodeLimit, what+": "+err.Error(), tok)
		return nil, false
	}
	return raw, true
}

// endRun ends the run: in-flight work is cancelled, timers and human tasks
// are withdrawn, active incidents are closed, and run_completed tells the
// engine.
func (m *machine) endRun(status Status, output json.RawMessage, re *RunError, forceMayContinue bool, reason string) {
	st := m.st
	mayContinue := forceMayContinue
	for _, id := range sortedKeys(st.Tasks) {
		t := st.Tasks[id]
		if t.Status != TaskBackoff {
			// A running attempt, or one whose outcome is unknown, may still
			// take effect.
			mayContinue = true
		}
		if t.Status == TaskRunning {
			m.emit(Effect{Kind: EffectCancelTask, TaskID: t.ID, Reason: reason})
		}
	}
	for _, id := range sortedKeys(st.Children) {
		c := st.Children[id]
		mayContinue = true
		if !c.Blocked {
			m.emit(Effect{Kind: EffectCancelChild, Child: cloneChild(c), Reason: reason})
		}
	}
	for _, id := range sortedKeys(st.Humans) {
		h := cloneHuman(st.Humans[id])
		m.emit(Effect{Kind: EffectCloseHumanTask, Human: h, Reason: reason})
	}
	for _, id := range sortedKeys(st.Timers) {
		t := *st.Timers[id]
		m.emit(Effect{Kind: EffectCancelTimer, Timer: &t, Reason: reason})
	}
	for _, id := range sortedKeys(st.Incidents) {
		inc := st.Incidents[id]
		if inc.Status == IncidentActive {
			m.closeIncident(inc, &Resolution{Kind: resolveRunEnded, Reason: "the run ended: " + string(status)})
		}
	}
	for k := range st.Scopes {
		if k != "" {
			delete(st.Scopes, k)
		}
	}
	st.Tokens = map[string]*Token{}
	st.Ready = []string{}
	st.Tasks = map[string]*Task{}
	st.Timers = map[string]*Timer{}
	st.Humans = map[string]*HumanTask{}
	st.Children = map[string]*Child{}
	st.Signals = []BufferedSignal{}
	st.Status = status
	st.Output = output
	st.Error = re
	st.ExternalEffectsMayContinue = mayContinue
	comp := &Completion{Status: status, Output: slices.Clone(output), ExternalEffectsMayContinue: st.ExternalEffectsMayContinue}
	if re != nil {
		e := *re
		comp.Error = &e
	}
	m.emit(Effect{Kind: EffectRunCompleted, Completion: comp})
}

func (m *machine) startTimer(t *Timer) {
	m.st.Timers[t.ID] = t
	c := *t
	m.emit(Effect{Kind: EffectStartTimer, Timer: &c})
}

func (m *machine) cancelTimer(id string) {
	if id == "" {
		return
	}
	t, ok := m.st.Timers[id]
	if !ok {
		return
	}
	delete(m.st.Timers, id)
	c := *t
	m.emit(Effect{Kind: EffectCancelTimer, Timer: &c})
}
