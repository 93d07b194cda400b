package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
)

// Status is a debug session's status (docs/platform-api.md, "Debug
// session status").
type Status string

const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusPaused    Status = "paused"
	StatusWaiting   Status = "waiting"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusSuspended Status = "suspended"
	StatusCancelled Status = "cancelled"
	StatusTimedOut  Status = "timed_out"
)

// Ended reports a status after which no command is accepted.
func (s Status) Ended() bool {
	switch s {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusTimedOut:
		return true
	}
	return false
}

// Diagnostic is a finding of the simulator shown in the view.
type Diagnostic struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	NodeID  string `json:"node_id,omitempty"`
}

// EventView is one kernel event the simulator fed, as the view lists it.
type EventView struct {
	Seq     int64            `json:"seq"`
	Kind    kernel.EventKind `json:"kind"`
	At      time.Time        `json:"at"`
	NodeID  string           `json:"node_id,omitempty"`
	TaskID  string           `json:"task_id,omitempty"`
	TimerID string           `json:"timer_id,omitempty"`
	Signal  string           `json:"signal,omitempty"`
	MockKey string           `json:"mock_key,omitempty"`
}

// Boundary is a point where the simulator hands the kernel something from
// outside the graph: a mock's answer (kind task or child), a fired timer,
// a signal, a person's decision; or, for the view's boundary, where the
// session stopped.
type Boundary struct {
	Kind     string     `json:"kind"`
	NodeID   string     `json:"node_id,omitempty"`
	Instance string     `json:"instance,omitempty"`
	MockKey  string     `json:"mock_key,omitempty"`
	Signal   string     `json:"signal,omitempty"`
	Due      *time.Time `json:"due,omitempty"`
	At       time.Time  `json:"at"`
	// Waits lists, when the session waits, what it waits for.
	Waits []Wait `json:"waits,omitempty"`
}

// Wait is something a waiting session needs from the user: a signal, a
// person's decision or time.
type Wait struct {
	Kind      string     `json:"kind"` // signal, human, timer
	NodeID    string     `json:"node_id"`
	Instance  string     `json:"instance"`
	Signal    string     `json:"signal,omitempty"`
	Decisions []string   `json:"decisions,omitempty"`
	Due       *time.Time `json:"due,omitempty"`
}

// Call is an issued task or child run waiting for its mock, first in first
// answered (the order the kernel issued them).
type Call struct {
	TaskID  string `json:"task_id,omitempty"`
	ChildID string `json:"child_id,omitempty"`
}

// Session is a debug session: its identity, what it simulates and where
// it stands. It is stored as JSON (session_store.go) and is self-contained:
// the artifact, its catalog lock and definitions are pinned at creation.
type Session struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Project   string    `json:"project"`
	Creator   string    `json:"creator"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`

	Artifact    json.RawMessage `json:"artifact"`
	Lock        json.RawMessage `json:"lock,omitempty"`
	Definitions [][]byte        `json:"definitions,omitempty"`
	Mocks       Mocks           `json:"mocks"`
	Input       json.RawMessage `json:"input"`

	Start       time.Time      `json:"start"`
	Now         time.Time      `json:"now"`
	Breakpoints []string       `json:"breakpoints"`
	State       kernel.State   `json:"state"`
	Status      Status         `json:"status"`
	Pending     []Call         `json:"pending"`
	Calls       map[string]int `json:"calls"`
	Diagnostics []Diagnostic   `json:"diagnostics"`
	Events      []EventView    `json:"events"`
	Boundary    *Boundary      `json:"boundary"`
	Crossed     []Boundary     `json:"crossed"`
}

// Command is one debug command: exactly one member is set.
type Command struct {
	Breakpoints   *BreakpointsCommand `json:"breakpoints,omitempty"`
	Next          *struct{}           `json:"next,omitempty"`
	Continue      *struct{}           `json:"continue,omitempty"`
	Signal        *SignalCommand      `json:"signal,omitempty"`
	HumanDecision *HumanCommand       `json:"human_decision,omitempty"`
	AdvanceTime   *AdvanceCommand     `json:"advance_time,omitempty"`
}

// BreakpointsCommand replaces the breakpoints.
type BreakpointsCommand struct {
	NodeIDs []string `json:"node_ids"`
}

// SignalCommand sends a signal.
type SignalCommand struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
}

// HumanCommand completes the open human task of step Name.
type HumanCommand struct {
	Name    string `json:"name"`
	Payload struct {
		Decision string          `json:"decision"`
		Data     json.RawMessage `json:"data"`
	} `json:"payload"`
}

// AdvanceCommand moves the virtual clock.
type AdvanceCommand struct {
	Seconds *int64 `json:"seconds"`
}

// Kind names the command's member ("" when not exactly one is set).
func (c Command) Kind() string {
	var kinds []string
	if c.Breakpoints != nil {
		kinds = append(kinds, "breakpoints")
	}
	if c.Next != nil {
		kinds = append(kinds, "next")
	}
	if c.Continue != nil {
		kinds = append(kinds, "continue")
	}
	if c.Signal != nil {
		kinds = append(kinds, "signal")
	}
	if c.HumanDecision != nil {
		kinds = append(kinds, "human_decision")
	}
	if c.AdvanceTime != nil {
		kinds = append(kinds, "advance_time")
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// Begin starts a session's run: the started event at the session's virtual
// start, paused before the first node (status queued). A run input the
// workflow's input schema refuses is PF-DEBUG-REQUEST; a secret-marked
// value in it PF-SCHEMA-SECRET_VALUE.
func Begin(p *Program, s *Session) error {
	// A run's input is a JSON object, as POST E/runs requires.
	if in := bytes.TrimSpace(s.Input); len(in) == 0 || in[0] != '{' {
		return refuse(CodeRequest, "/input", "the input must be a JSON object")
	}
	if loc, ok := secretAt(s.Input, p.secrets.Input); ok {
		return refuse(CodeSecretValue, "/input"+loc, "the input holds a value the workflow's input schema marks secret")
	}
	s.Now, s.Start = s.Start.UTC(), s.Start.UTC()
	s.Status, s.Calls, s.Pending = StatusQueued, map[string]int{}, []Call{}
	s.Breakpoints, s.Diagnostics, s.Events, s.Crossed = []string{}, []Diagnostic{}, []EventView{}, []Boundary{}
	r := &runner{p: p, s: s}
	ev := kernel.Event{Seq: 1, At: s.Now, Kind: kernel.EventStarted, RunID: s.ID, Input: s.Input}
	st, effs, err := kernel.StepPaused(p.kp, kernel.State{}, ev, func(string, string) bool { return true })
	if err != nil {
		var ke *kernel.Error
		if errors.As(err, &ke) {
			return refuse(CodeRequest, "/input", "%s", kernelMessage(ke))
		}
		return refuse(CodeRequest, "/input", "%v", err)
	}
	s.State = st
	r.accepted(ev, effs, "", "")
	r.settle(StatusQueued, &Boundary{Kind: "start", NodeID: p.entry, At: s.Now})
	return nil
}

// Apply runs one command on s (already checked against the session's
// revision and expiry by the caller). A refusal is an *Error and leaves s
// unchanged; on success the caller stores s with Revision+1.
func Apply(p *Program, s *Session, c Command, lim Limits) error {
	kind := c.Kind()
	if kind == "" {
		return refuse(CodeCommand, "", "a command has exactly one of breakpoints, next, continue, signal, human_decision and advance_time")
	}
	if s.Status.Ended() {
		return refuse(CodeState, "", "the session has ended (%s)", s.Status)
	}
	work := clone(s)
	r := &runner{p: p, s: work, lim: lim}
	var err error
	switch kind {
	case "breakpoints":
		err = r.breakpoints(c.Breakpoints.NodeIDs)
	case "next":
		err = r.drive(false)
	case "continue":
		err = r.drive(true)
	case "signal":
		err = r.signal(c.Signal)
	case "human_decision":
		err = r.human(c.HumanDecision)
	case "advance_time":
		err = r.advance(c.AdvanceTime)
	}
	if err != nil {
		return err
	}
	*s = *work
	return nil
}

// clone deep-copies a session through JSON (sessions are plain data).
func clone(s *Session) *Session {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("sim: session does not encode: %v", err)) // plain data always encodes
	}
	var c Session
	if err := json.Unmarshal(raw, &c); err != nil {
		panic(fmt.Sprintf("sim: session does not decode: %v", err))
	}
	return &c
}

// runner applies one command.
type runner struct {
	p   *Program
	s   *Session
	lim Limits
	// per command
	events, commands int
	limited          bool

	// The editor host's execute (studio_execute.go): stop before an entry
	// that before accepts, or once a history record that after accepts
	// was written; trace collects the step records.
	before  func(node, instance string) bool
	after   func(rec *kernel.Record) bool
	reached bool
	tracing bool
	trace   []TraceEntry
}

// TraceEntry is one step start or end of an execution's trace.
type TraceEntry struct {
	Type     string    `json:"type"`
	NodeID   string    `json:"nodeId"`
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
}

// spend reports whether the command may feed one more event (crossing a
// boundary when boundary is set); the first refusal notes which limit.
func (r *runner) spend(boundary bool) bool {
	what, n := "", 0
	switch {
	case r.events >= r.lim.Events:
		what, n = "simulated events", r.lim.Events
	case r.commands >= r.lim.Commands:
		what, n = "kernel commands", r.lim.Commands
	case boundary && len(r.s.Crossed) >= r.lim.Boundaries:
		what, n = "boundaries", r.lim.Boundaries
	default:
		return true
	}
	r.limitDiag(what, n)
	r.limited = true
	return false
}

func (r *runner) breakpoints(ids []string) error {
	seen := map[string]bool{}
	for i, id := range ids {
		if _, ok := r.p.nodes[id]; !ok {
			return refuse(CodeBreakpoint, fmt.Sprintf("/breakpoints/node_ids/%d", i), "no node %q in the workflow", id)
		}
		if seen[id] {
			return refuse(CodeBreakpoint, fmt.Sprintf("/breakpoints/node_ids/%d", i), "node %q is listed twice", id)
		}
		seen[id] = true
	}
	bp := append([]string{}, ids...)
	sort.Strings(bp)
	r.s.Breakpoints = bp
	r.s.Crossed = []Boundary{}
	return nil
}

func (r *runner) advance(a *AdvanceCommand) error {
	if a.Seconds == nil || *a.Seconds < 0 {
		return refuse(CodeTime, "/advance_time/seconds", "seconds is a whole number >= 0")
	}
	limit := r.lim.VirtualTime
	used := r.s.Now.Sub(r.s.Start)
	if time.Duration(*a.Seconds) > (limit-used)/time.Second {
		return refuse(CodeTime, "/advance_time/seconds", "the virtual clock may move at most %s from the session's start (%s used)", limit, used)
	}
	r.s.Now = r.s.Now.Add(time.Duration(*a.Seconds) * time.Second)
	r.s.Crossed = []Boundary{}
	return nil
}

// feed steps the kernel with pause and records the event; a kernel
// refusal is returned as is.
func (r *runner) feed(ev kernel.Event, pause kernel.Pause, mockKey string) error {
	ev.Seq = r.s.State.Seq + 1
	if ev.At.IsZero() {
		ev.At = r.s.Now
	}
	node := ""
	if t := r.s.State.Tasks[ev.TaskID]; t != nil {
		node = t.Node
	} else if c := r.s.State.Children[ev.ChildID]; c != nil {
		node = c.Node
	}
	st, effs, err := kernel.StepPaused(r.p.kp, r.s.State, ev, pause)
	if err != nil {
		return err
	}
	if r.lim.Commands > 0 && r.commands+commandsOf(effs) > r.lim.Commands {
		return errCommands
	}
	r.s.State = st
	r.accepted(ev, effs, mockKey, node)
	return nil
}

// errCommands: the event would take the command past its kernel commands
// limit; it was not accepted.
var errCommands = errors.New("sim: kernel commands limit")

// commandsOf counts the kernel commands among effects (history records
// and continue requests are not commands).
func commandsOf(effs []kernel.Effect) int {
	n := 0
	for _, e := range effs {
		if e.Kind != kernel.EffectRecord && e.Kind != kernel.EffectContinue {
			n++
		}
	}
	return n
}

// overCommands notes the commands limit when err is errCommands.
func (r *runner) overCommands(err error) bool {
	if !errors.Is(err, errCommands) {
		return false
	}
	r.limitDiag("kernel commands", r.lim.Commands)
	r.limited = true
	return true
}

// accepted records an accepted event and follows its effects: calls to
// answer, calls withdrawn.
func (r *runner) accepted(ev kernel.Event, effs []kernel.Effect, mockKey, node string) {
	r.events++
	v := EventView{Seq: ev.Seq, Kind: ev.Kind, At: ev.At.UTC(), NodeID: node, TaskID: ev.TaskID, TimerID: ev.TimerID, Signal: ev.Signal, MockKey: mockKey}
	r.s.Events = append(r.s.Events, v)
	for _, e := range effs {
		switch e.Kind {
		case kernel.EffectRecord:
			r.record(e.Record)
			continue
		case kernel.EffectContinue:
			continue
		case kernel.EffectStartTask:
			r.s.Pending = append(r.s.Pending, Call{TaskID: e.Task.TaskID})
		case kernel.EffectCancelTask:
			r.drop(Call{TaskID: e.TaskID})
		case kernel.EffectStartChild:
			r.s.Pending = append(r.s.Pending, Call{ChildID: e.Child.ID})
		case kernel.EffectCancelChild:
			r.drop(Call{ChildID: e.Child.ID})
		}
		r.commands++
	}
}

// record follows a history record for the editor host's execute.
func (r *runner) record(rec *kernel.Record) {
	if r.tracing && (rec.Type == kernel.RecordStepStarted || rec.Type == kernel.RecordStepCompleted) {
		r.trace = append(r.trace, TraceEntry{Type: rec.Type, NodeID: rec.NodeID, Instance: rec.Instance, At: rec.ObservedAt})
	}
	if r.after != nil && r.after(rec) {
		r.reached = true
	}
}

func (r *runner) drop(c Call) {
	out := r.s.Pending[:0]
	for _, p := range r.s.Pending {
		if p != c {
			out = append(out, p)
		}
	}
	r.s.Pending = out
}

func (r *runner) cross(b Boundary) {
	b.At = r.s.Now
	r.s.Crossed = append(r.s.Crossed, b)
}

// drive runs next (one node) or continue (until a breakpoint, a wait or
// the end), within the per-command limits.
func (r *runner) drive(cont bool) error {
	s := r.s
	s.Crossed = []Boundary{}
	bps := map[string]bool{}
	for _, b := range s.Breakpoints {
		bps[b] = true
	}
	entered := 0
	var stop *Boundary
	pause := func(node, instance string) bool {
		switch {
		case r.reached || (r.before != nil && r.before(node, instance)):
			stop = &Boundary{Kind: "target", NodeID: node}
		case entered >= 1 && !cont:
			stop = &Boundary{Kind: "step", NodeID: node}
		case entered >= 1 && bps[node]:
			stop = &Boundary{Kind: "breakpoint", NodeID: node}
		case entered >= r.lim.Reductions:
			stop = &Boundary{Kind: "limit", NodeID: node}
			r.limitDiag("node reductions", r.lim.Reductions)
		default:
			entered++
			return false
		}
		return true
	}
	for stop == nil && !s.State.Status.Terminal() {
		progressed, err := r.once(pause)
		if err != nil {
			return err
		}
		if s.Status == StatusFailed {
			return nil // a missing mock or a refused mock answer
		}
		if r.limited {
			stop = &Boundary{Kind: "limit"}
		}
		if r.reached && stop == nil {
			stop = &Boundary{Kind: "target"}
		}
		if !progressed {
			break
		}
	}
	switch {
	case s.State.Status.Terminal():
		r.settle(Status(s.State.Status), &Boundary{Kind: "end", At: s.Now})
	case stop != nil && stop.Kind == "limit":
		stop.At = s.Now
		r.settle(StatusPaused, stop)
	case stop != nil:
		stop.At = s.Now
		r.settle(StatusPaused, stop)
	case len(s.State.ActiveIncidents()) > 0:
		r.settle(StatusSuspended, &Boundary{Kind: "incident", At: s.Now})
	default:
		r.settle(StatusWaiting, &Boundary{Kind: "wait", At: s.Now, Waits: r.waits()})
	}
	return nil
}

// once makes one step of progress: a due timer, queued work, a pending
// call's mock, or the next retry backoff. It answers false when only the
// user can move the run on.
func (r *runner) once(pause kernel.Pause) (bool, error) {
	s := r.s
	if due := kernel.DueOrder(s.State, s.Now); len(due) > 0 {
		if !r.spend(true) {
			return false, nil
		}
		t := due[0]
		err := r.feed(kernel.Event{Kind: kernel.EventTimerFired, TimerID: t.ID}, pause, "")
		if r.overCommands(err) {
			return false, nil
		}
		r.cross(Boundary{Kind: "timer", NodeID: t.NodeID, Instance: t.Instance, Due: &t.Due})
		return true, r.internal(err)
	}
	// An incident suspends the run: nothing is reduced, but work already
	// issued still ends and its outcome is recorded, as in production
	// (docs/platform-api.md, "Debug sessions", work order).
	suspended := len(s.State.ActiveIncidents()) > 0
	if !suspended && len(s.State.Ready) > 0 {
		if !r.spend(false) {
			return false, nil
		}
		if err := r.feed(kernel.Event{Kind: kernel.EventContinue}, pause, ""); err != nil {
			if r.overCommands(err) || errors.Is(err, kernel.ErrNoChange) {
				return false, nil
			}
			return false, r.internal(err)
		}
		return true, nil // a pause that stopped the head set the command's stop
	}
	if len(s.Pending) > 0 {
		if !r.spend(true) {
			return false, nil
		}
		pending, crossed, calls := s.Pending, len(s.Crossed), map[string]int{}
		for k, v := range s.Calls {
			calls[k] = v
		}
		err := r.answer(pause)
		if r.overCommands(err) {
			s.Pending, s.Crossed, s.Calls = pending, s.Crossed[:crossed], calls
			return false, nil
		}
		return true, err
	}
	if suspended {
		return false, nil
	}
	if t, ok := kernel.NextDue(s.State); ok && t.Kind == kernel.TimerRetryBackoff {
		if t.Due.Sub(s.Start) > r.lim.VirtualTime {
			return false, nil
		}
		s.Now = t.Due
		return true, nil
	}
	return false, nil
}

// internal turns an unexpected kernel refusal into a failed session: the
// simulator only feeds events the state asks for.
func (r *runner) internal(err error) error {
	if err == nil {
		return nil
	}
	r.fail(CodeState, err.Error(), "")
	return nil
}

func (r *runner) fail(code, msg, node string) {
	r.s.Diagnostics = append(r.s.Diagnostics, Diagnostic{Code: code, Message: msg, NodeID: node})
	r.settle(StatusFailed, &Boundary{Kind: "failed", NodeID: node, At: r.s.Now})
}

func (r *runner) limitDiag(what string, n int) {
	r.s.Diagnostics = append(r.s.Diagnostics, Diagnostic{Code: CodeLimit,
		Message: fmt.Sprintf("this command reached the limit of %d %s; continue to go on", n, what)})
}

// answer gives the first pending call its mock's outcome.
func (r *runner) answer(pause kernel.Pause) error {
	s := r.s
	c := s.Pending[0]
	s.Pending = s.Pending[1:]
	if c.ChildID != "" {
		ch := s.State.Children[c.ChildID]
		if ch == nil {
			return nil
		}
		key, m, ok := s.Mocks.lookup(s.Calls, ch.Node, ch.Instance, KeyWorkflow+ch.Ref)
		if !ok {
			r.fail(CodeMissingMock, fmt.Sprintf("no mock for node:%s or workflow:%s", ch.Node, ch.Ref), ch.Node)
			return nil
		}
		r.cross(Boundary{Kind: "child", NodeID: ch.Node, Instance: ch.Instance, MockKey: key})
		ev := kernel.Event{Kind: kernel.EventChildCompleted, ChildID: ch.ID, ChildStatus: kernel.StatusSucceeded, Output: m.Output}
		switch {
		case m.Error != nil:
			ev.ChildStatus, ev.Output = kernel.StatusFailed, nil
			ev.Error = &kernel.TaskError{Code: m.Error.Code, Message: m.Error.Message}
		case m.Outcome != "":
			ev.ChildStatus, ev.Output = kernel.StatusCancelled, nil
		}
		return r.feedMock(ev, pause, key, ch.Node)
	}
	return r.answerTask(c.TaskID, pause)
}

// answerTask answers an issued task with its mock: an action step's
// (node:, then action:), an agent step's (node:, agent:; its tool calls
// first) or an agent tool call's action (tool:, then action:).
func (r *runner) answerTask(id string, pause kernel.Pause) error {
	s := r.s
	t := s.State.Tasks[id]
	if t == nil || t.Status != kernel.TaskRunning {
		return nil
	}
	refKey := ""
	if t.Executor != kernel.ExecutorAgent && t.Ref != "" {
		refKey = KeyAction + t.Ref
	}
	var key string
	var m Mock
	var ok bool
	if t.Call != nil {
		key, m, ok = s.Mocks.lookupTool(s.Calls, t.Ref)
	} else {
		key, m, ok = s.Mocks.lookup(s.Calls, t.Node, t.Instance, refKey)
	}
	if !ok {
		msg := "no mock for node:" + t.Node
		if t.Call != nil {
			msg = "no mock for the tool call " + t.Call.ID + " of node " + t.Node + ": tool:" + t.Ref + " or action:" + t.Ref
		} else if refKey != "" {
			msg += " or " + refKey
		}
		r.fail(CodeMissingMock, msg, t.Node)
		return nil
	}
	if t.Ref != "" {
		if err := r.p.checkRequest(t.Ref, t.Input); err != nil {
			r.fail("PF-VALIDATION", fmt.Sprintf("the request of node %s violates the input schema of %s: %v", t.Node, t.Ref, err), t.Node)
			return nil
		}
	}
	if err := r.toolCalls(t, m, key, pause); err != nil || r.s.Status == StatusFailed {
		return err
	}
	r.cross(Boundary{Kind: "task", NodeID: t.Node, Instance: t.Instance, MockKey: key})
	ev := kernel.Event{Kind: kernel.EventTaskCompleted, TaskID: t.ID, Output: m.Output}
	switch {
	case m.Error != nil:
		ev = kernel.Event{Kind: kernel.EventTaskFailed, TaskID: t.ID, Error: m.Error, Retryable: m.Retryable}
	case m.Outcome != "":
		ev = kernel.Event{Kind: kernel.EventTaskOutcomeUnknown, TaskID: t.ID}
	}
	return r.feedMock(ev, pause, key, t.Node)
}

// toolCalls makes the tool calls of an agent step's outcome before the
// agent answers, as a real agent does while its job runs: each call is an
// agent_tool_called event (the kernel checks the tool and its input and
// issues the tool's action as a task) whose task is answered at once with
// its tool: or action: mock. A call the kernel refuses is an error result
// for the agent in production: here a diagnostic, and the agent goes on.
// A tool action that fails retryably is retried later like any task;
// calls still running when the agent answers are withdrawn by the kernel.
func (r *runner) toolCalls(t *kernel.Task, m Mock, key string, pause kernel.Pause) error {
	if t.Executor != kernel.ExecutorAgent || t.Call != nil {
		return nil
	}
	for i, c := range m.ToolCalls {
		callID := fmt.Sprintf("sim-%d-%d", t.Attempt, i+1)
		before := len(r.s.Pending)
		ev := kernel.Event{Kind: kernel.EventAgentToolCalled, TaskID: t.ID, CallID: callID, Tool: c.Tool, Input: c.Input}
		if err := r.feed(ev, pause, key); err != nil {
			if errors.Is(err, errCommands) {
				return err
			}
			r.s.Diagnostics = append(r.s.Diagnostics, Diagnostic{Code: kernel.ErrorCode(err), NodeID: t.Node,
				Message: fmt.Sprintf("the tool call %s of %s was refused (the agent gets an error result): %s", callID, c.Tool, kernelMessage(err))})
			continue
		}
		for _, issued := range append([]Call{}, r.s.Pending[before:]...) {
			tk := r.s.State.Tasks[issued.TaskID]
			if tk == nil || tk.Call == nil || tk.Call.ID != callID {
				continue
			}
			r.drop(issued)
			if err := r.answerTask(tk.ID, pause); err != nil || r.s.Status == StatusFailed {
				return err
			}
		}
	}
	return nil
}

func (r *runner) feedMock(ev kernel.Event, pause kernel.Pause, key, node string) error {
	err := r.feed(ev, pause, key)
	if errors.Is(err, errCommands) {
		return err
	}
	var ke *kernel.Error
	if errors.As(err, &ke) && ke.Code == kernel.CodeValidation {
		r.fail(CodeMockOutput, fmt.Sprintf("the mock %s for node %s was refused: %s", key, node, kernelMessage(ke)), node)
		return nil
	}
	return r.internal(err)
}

// signal delivers a signal at the virtual now without entering a node.
func (r *runner) signal(c *SignalCommand) error {
	s := r.s
	if c.Name == "" {
		return refuse(CodeSignal, "/signal/name", "a signal name is required")
	}
	if loc, ok := secretAt(c.Payload, r.p.secrets.Signals[c.Name]); ok {
		return refuse(CodeSecretValue, "/signal/payload"+loc, "the payload holds a value the signal's schema marks secret")
	}
	if len(s.State.Signals) >= r.lim.PendingSignals {
		return refuse(CodeLimit, "/signal", "%d signals are already waiting for a step (the limit)", len(s.State.Signals))
	}
	payload := c.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	s.Crossed = []Boundary{}
	err := r.feed(kernel.Event{Kind: kernel.EventSignalReceived, Signal: c.Name, Payload: payload}, pauseAll, "")
	if errors.Is(err, errCommands) {
		return refuse(CodeLimit, "/signal", "the signal would take more than %d kernel commands", r.lim.Commands)
	}
	if err != nil {
		return refuse(CodeSignal, "/signal", "the run refused the signal: %s", kernelMessage(err))
	}
	r.cross(Boundary{Kind: "signal", Signal: c.Name})
	r.afterInput()
	return nil
}

// human completes the open human task of a step at the virtual now.
func (r *runner) human(c *HumanCommand) error {
	s := r.s
	var task *kernel.HumanTask
	for _, id := range sortedIDs(s.State.Humans) {
		h := s.State.Humans[id]
		if h.Node == c.Name || h.Instance == c.Name {
			task = h
			break
		}
	}
	if task == nil {
		return refuse(CodeHumanTask, "/human_decision/name", "no open human task of step %q", c.Name)
	}
	if loc, ok := secretAt(c.Payload.Data, r.p.secrets.Forms[task.Node]); ok {
		return refuse(CodeSecretValue, "/human_decision/payload/data"+loc, "the data holds a value the form marks secret")
	}
	s.Crossed = []Boundary{}
	ev := kernel.Event{Kind: kernel.EventHumanCompleted, TaskID: task.ID, Decision: c.Payload.Decision, Data: c.Payload.Data, CompletedBy: s.Creator}
	if err := r.feed(ev, pauseAll, ""); errors.Is(err, errCommands) {
		return refuse(CodeLimit, "/human_decision", "the decision would take more than %d kernel commands", r.lim.Commands)
	} else if err != nil {
		return refuse(CodeHumanTask, "/human_decision/payload", "the run refused the decision: %s", kernelMessage(err))
	}
	r.cross(Boundary{Kind: "human", NodeID: task.Node, Instance: task.Instance})
	r.afterInput()
	return nil
}

// afterInput keeps the status after a signal or decision: no node was
// entered, so a waiting session stays waiting until next or continue, and
// one that the input ended (a run deadline fired on the way) shows it.
func (r *runner) afterInput() {
	if st := r.s.State.Status; st.Terminal() {
		r.settle(Status(st), &Boundary{Kind: "end", At: r.s.Now})
	} else if r.s.Status == StatusWaiting {
		r.s.Boundary = &Boundary{Kind: "wait", At: r.s.Now, Waits: r.waits()}
	}
}

func pauseAll(string, string) bool { return true }

func kernelMessage(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		if ke.Err != nil && !errors.Is(ke.Err, kernel.ErrNoChange) {
			return ke.Msg + ": " + ke.Err.Error()
		}
		return ke.Msg
	}
	return err.Error()
}

func sortedIDs[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// settle sets the status and the boundary where the session stands.
func (r *runner) settle(st Status, b *Boundary) {
	r.s.Status = st
	r.s.Boundary = b
}

// waits lists what a waiting run waits for.
func (r *runner) waits() []Wait {
	st := r.s.State
	var out []Wait
	for _, id := range sortedIDs(st.Tokens) {
		tok := st.Tokens[id]
		switch {
		case tok.Signal != "":
			out = append(out, Wait{Kind: "signal", NodeID: tok.Node, Instance: tok.Instance, Signal: tok.Signal, Due: tok.Deadline})
		case tok.HumanID != "":
			h := st.Humans[tok.HumanID]
			w := Wait{Kind: "human", NodeID: tok.Node, Instance: tok.Instance, Due: tok.Deadline}
			if h != nil {
				w.Decisions = h.Decisions
			}
			out = append(out, w)
		case tok.TimerID != "":
			w := Wait{Kind: "timer", NodeID: tok.Node, Instance: tok.Instance}
			if t := st.Timers[tok.TimerID]; t != nil {
				d := t.Due
				w.Due = &d
			}
			out = append(out, w)
		}
	}
	return out
}
