package kernel

import "encoding/json"

// Pause is asked, before each node is entered, whether the Step should
// stop there; instance is the step instance key the entry will have (the
// node id, then "[i]" per enclosing forEach iteration). A true answer stops the Step the way MaxReductions does: the
// node stays queued, a Continue effect is emitted and an EventContinue
// resumes it. The simulator (platform/sim) steps node by node and stops
// before breakpoints with it, so a debug session runs exactly the
// reductions a production run would, only split over more events.
type Pause func(node, instance string) bool

// StepPaused is Step with a Pause consulted before every node entry.
func StepPaused(p *Program, s State, e Event, pause Pause) (State, []Effect, error) {
	return step(p, s, e, pause)
}

// CheckOutput validates an output for node against its pinned output
// schema (an action's, agent's or called workflow's) exactly as
// task_completed and child_completed do, so a simulator can refuse a mock
// before it is ever used. It answers an *Error with CodeValidation.
func (p *Program) CheckOutput(nodeID string, raw json.RawMessage) error {
	n := p.node(nodeID)
	if n == nil {
		return refuse(CodeValidation, "unknown node %q", nodeID)
	}
	m := &machine{p: p}
	_, err := m.externalOutput(raw, n.output, CodeValidation)
	return err
}

// CheckSignal validates a signal payload as signal_received does (the name
// declared, the payload valid for every step waiting for it), for test
// data checked before any run exists.
func (p *Program) CheckSignal(name string, payload json.RawMessage) error {
	_, err := p.signalPayload(name, payload)
	return err
}

// CheckHuman validates a decision and its data for a human node as
// human_completed does.
func (p *Program) CheckHuman(nodeID, decision string, data json.RawMessage) error {
	n := p.node(nodeID)
	if n == nil || n.kind != "human" {
		return refuse(CodeValidation, "no human step %q", nodeID)
	}
	_, err := humanData(n, n.decisions, decision, data)
	return err
}
