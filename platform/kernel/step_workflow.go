package kernel

import (
	"slices"
	"strings"
)

// Workflow steps run the callee as a child run of its own, started by a
// start_child effect; its end comes back as child_completed. Running the
// callee as a separate run (instead of inline frames in this state) keeps
// each run's state, history, incidents and program version its own, lets
// the callee be a different published version with its own catalog lock,
// and bounds this run's state whatever the callee does.

func (m *machine) enterWorkflow(tok *Token, n *node) {
	in, err := n.with.eval(m.activation(tok.Scope))
	if err != nil {
		m.evalFailed(err, tok)
		return
	}
	raw, ok := m.encodeOrFail(in, tok, "child input")
	if !ok {
		return
	}
	c := &Child{
		ID:                 childRunID(m.st.RunID, n.id, tok.Generation),
		Token:              tok.ID,
		Node:               n.id,
		Instance:           tok.Instance,
		Generation:         tok.Generation,
		Ref:                n.ref,
		PublishedVersionID: n.refInfo.PublishedVersionID,
		Input:              raw,
	}
	tok.Wait, tok.ChildID = WaitChild, c.ID
	if n.timeoutMs > 0 {
		t := &Timer{ID: timerID(m.st.RunID, TimerChildTimeout, n.id, tok.Generation, 0), Kind: TimerChildTimeout,
			Due: addMs(m.now, n.timeoutMs), NodeID: n.id, Instance: tok.Instance, Token: tok.ID, ChildID: c.ID}
		c.Deadline = timePtr(t.Due)
		tok.TimerID, tok.Deadline = t.ID, timePtr(t.Due)
		m.startTimer(t)
	}
	m.st.Children[c.ID] = c
	m.emit(Effect{Kind: EffectStartChild, Child: cloneChild(c)})
}

func (m *machine) onChildCompleted() error {
	e := m.ev
	c := m.st.Children[e.ChildID]
	if c == nil {
		return refuse(CodeRuntimeState, "child run %s is not pending", e.ChildID)
	}
	if c.Blocked {
		return refuse(CodeRuntimeState, "child run %s timed out; its incident decides", e.ChildID)
	}
	n := m.p.node(c.Node)
	tok := m.st.Tokens[c.Token]
	if tok == nil {
		return refuse(CodeRuntimeState, "no step waits for child run %s", c.ID)
	}
	switch e.ChildStatus {
	case StatusSucceeded:
		raw, err := m.externalOutput(e.Output, n.output, CodeValidation)
		if err != nil {
			return err
		}
		m.cancelTimer(tok.TimerID)
		delete(m.st.Children, c.ID)
		m.deliver(tok, raw, n.next)
	case StatusFailed, StatusCancelled, StatusTimedOut:
		// The callee's end is this step's outcome: the language has no
		// error handling, so a child that did not succeed fails the run,
		// like a fail step would.
		m.cancelTimer(tok.TimerID)
		delete(m.st.Children, c.ID)
		code, msg := ErrCodeChildFailed, "child run "+string(e.ChildStatus)
		if e.ChildStatus != StatusFailed {
			code = "CHILD_" + strings.ToUpper(string(e.ChildStatus))
		}
		if e.Error != nil && e.Error.Code != "" {
			code = e.Error.Code
			if e.Error.Message != "" {
				msg = e.Error.Message
			}
		}
		m.failRun(code, msg, tok)
	default:
		return refuse(CodeValidation, "child status %q is not terminal", e.ChildStatus)
	}
	return nil
}

// childTimedOut: the workflow step's timeout passed; the child is
// cancelled and an incident decides (accept a reconciled result, or
// terminate).
func (m *machine) childTimedOut(c *Child) {
	m.emit(Effect{Kind: EffectCancelChild, Child: cloneChild(c), Reason: "timeout"})
	c.Blocked = true
	m.openIncident(nil, c, IncidentTaskDeadline)
}

// cloneChild copies a child for an effect, sharing no memory with the state.
func cloneChild(c *Child) *Child {
	cc := *c
	cc.Input = slices.Clone(c.Input)
	return &cc
}
