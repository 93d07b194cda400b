package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
)

// ToolCall is an agent's call of one of its step's tools
// (docs/workflow-language.md, "Agent steps").
type ToolCall struct {
	RunID string
	// AgentTaskID is the agent step's task (engine.AgentTask.TaskID).
	AgentTaskID string
	// CallID names the call within the agent task; the same id made twice
	// is the same call (its outcome is answered again).
	CallID string
	Tool   string
	Input  json.RawMessage
}

// ToolResult is a tool call's outcome, as far as known.
type ToolResult struct {
	// Done is false when the wait ended before the call did: the action
	// is still running (or backing off before a retry).
	Done   bool
	Output json.RawMessage
	Error  *kernel.TaskError
	// RedactedInput and RedactedOutput are the call's input and output
	// with the values the tool's pinned schemas mark secret (x-secret,
	// writeOnly) redacted, as the run's history shows them: what a record
	// of the call (the job's audit) may keep. They are set on refusals
	// too; when the run's program cannot be read they are redacted whole.
	RedactedInput, RedactedOutput json.RawMessage
}

// ErrAgentEnded: the agent task is no longer pending (its step ended, or
// the attempt was withdrawn), so it can make no call.
var ErrAgentEnded = errors.New("engine: the agent step's task has ended")

// toolPoll is how often a waiting call rereads its run.
const toolPoll = 20 * time.Millisecond

// CallTool records c in the run's history (the kernel checks that the tool
// is pinned and validates the input, then issues the action as a task of
// its own) and waits up to wait for the call to end. A refusal is a
// *kernel.Error with its code.
//
// A test run's call goes through the test gate first (SetTestGate): it
// may be answered with a mock, refused, or held until confirmed.
func (s *Service) CallTool(ctx context.Context, c ToolCall, wait time.Duration) (ToolResult, error) {
	res, err := s.gatedCall(ctx, c, wait)
	res.RedactedInput, res.RedactedOutput = s.redactToolCall(ctx, c, res.Output)
	return res, err
}

// gatedCall asks the test gate of a test run how c is served, then serves
// it.
func (s *Service) gatedCall(ctx context.Context, c ToolCall, wait time.Duration) (ToolResult, error) {
	g, r, err := s.testGate(ctx, c.RunID)
	if errors.Is(err, errNotFound) {
		return ToolResult{}, fmt.Errorf("engine: run %s: %w", c.RunID, errNotFound)
	}
	if err != nil {
		return ToolResult{}, err
	}
	if g == nil {
		return s.callTool(ctx, c, wait)
	}
	agent := r.State.Tasks[c.AgentTaskID]
	if agent == nil || agent.Status != kernel.TaskRunning {
		return ToolResult{}, ErrAgentEnded
	}
	in, _ := s.redactToolCall(ctx, c, nil)
	d, err := g.GateTool(ctx, GatedCall{ToolCall: c, NodeID: agent.Node, Instance: agent.Instance, RedactedInput: in})
	switch {
	case err != nil:
		return ToolResult{}, err
	case d.Refuse != nil:
		return ToolResult{Done: true, Error: d.Refuse}, nil
	case d.Mock != nil:
		return ToolResult{Done: true, Output: d.Mock}, nil
	}
	return s.callTool(ctx, c, wait)
}

// CheckToolOutput answers the refusal output would get as the output of
// tool, a tool of the agent step node of the published workflow version
// (a mocked call's answer must fit the tool's pinned output schema).
func (s *Service) CheckToolOutput(ctx context.Context, project, versionID, node, tool string, output json.RawMessage) error {
	p, err := s.program(ctx, s.db.Reader(), project, versionID)
	if err != nil {
		return err
	}
	return p.p.CheckSpecOutput(&kernel.TaskSpec{NodeID: node, Ref: tool, ToolCall: &kernel.ToolCallRef{}}, output)
}

// redactToolCall answers a call's input and output redacted with its run
// program's secret pointers (docs/workflow-language.md, "Agent steps").
func (s *Service) redactToolCall(ctx context.Context, c ToolCall, output json.RawMessage) (json.RawMessage, json.RawMessage) {
	whole := func(raw json.RawMessage) json.RawMessage { return redact(raw, []string{""}) }
	r, err := s.getRun(ctx, s.db.Reader(), "", c.RunID)
	if err != nil {
		return whole(c.Input), whole(output)
	}
	p, err := s.program(ctx, s.db.Reader(), r.Project, r.PublishedVersionID)
	if err != nil {
		return whole(c.Input), whole(output)
	}
	return p.sec.toolCall(c.Tool, c.Input, output)
}

func (s *Service) callTool(ctx context.Context, c ToolCall, wait time.Duration) (ToolResult, error) {
	e := kernel.Event{Kind: kernel.EventAgentToolCalled, TaskID: c.AgentTaskID, CallID: c.CallID, Tool: c.Tool, Input: c.Input}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		_, _, _, err := s.Deliver(ctx, tx, "", c.RunID, e)
		return err
	})
	switch {
	case err == nil:
		s.notify()
	case errors.Is(err, kernel.ErrNoChange):
		// The call was made before: answer its outcome.
	case errors.Is(err, errNotFound):
		return ToolResult{}, fmt.Errorf("engine: run %s: %w", c.RunID, errNotFound)
	default:
		return ToolResult{}, err
	}
	deadline := time.Now().Add(wait)
	for {
		res, err := s.toolOutcome(ctx, c)
		if err != nil || res.Done {
			return res, err
		}
		if !time.Now().Before(deadline) {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(toolPoll):
		}
	}
}

// toolOutcome reads a call's outcome from its run's state.
func (s *Service) toolOutcome(ctx context.Context, c ToolCall) (ToolResult, error) {
	r, err := s.getRun(ctx, s.db.Reader(), "", c.RunID)
	if err != nil {
		return ToolResult{}, err
	}
	agent := r.State.Tasks[c.AgentTaskID]
	if agent == nil {
		return ToolResult{}, ErrAgentEnded
	}
	call := agent.Calls[c.CallID]
	if call == nil {
		return ToolResult{}, nil // held while the run is paused
	}
	switch call.Status {
	case kernel.ToolCallCompleted:
		return ToolResult{Done: true, Output: call.Output}, nil
	case kernel.ToolCallFailed:
		return ToolResult{Done: true, Error: call.Error}, nil
	}
	return ToolResult{}, nil
}
