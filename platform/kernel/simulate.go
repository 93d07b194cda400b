package kernel

import "encoding/json"

// Pause is asked, before each node is entered, whether the Step should
// stop there. A true answer stops the Step the way MaxReductions does: the
// node stays queued, a Continue effect is emitted and an EventContinue
// resumes it. The simulator (platform/sim) steps node by node and stops
// before breakpoints with it, so a debug session runs exactly the
// reductions a production run would, only split over more events.
type Pause func(node string) bool

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
