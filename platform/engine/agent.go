package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
)

// AgentRunner runs agent steps as bridge jobs through the bridge's provider
// interface. The bridge subsystem implements it; the daemon binds it after
// both subsystems are built (SetAgents).
type AgentRunner interface {
	// RunAgent runs one job for task and blocks until it ends or ctx is
	// done (then the job is cancelled). It answers the job's result.
	RunAgent(ctx context.Context, task AgentTask) (AgentResult, error)
}

// AgentTask is an agent step's job.
type AgentTask struct {
	TaskID, RunID string
	// OperationKey is stable across attempts; the bridge uses it as the
	// job's idempotency key.
	OperationKey string
	Spec         kernel.AgentSpec
	Deadline     *time.Time
}

// AgentResult is how an agent job ended.
type AgentResult struct {
	JobID string
	// Status is the job's terminal state (completed, failed, cancelled,
	// interrupted, ...); Succeeded says whether Output is the step output.
	Status    string
	Succeeded bool
	// Output is the step output: the JSON object the agent answered when
	// the step declares an output schema, else the final answer as a JSON
	// string.
	Output  json.RawMessage
	Code    string
	Message string
}

// SetAgents binds the agent runner (nil: agent steps fail with
// AGENT_UNAVAILABLE).
func (s *Service) SetAgents(a AgentRunner) {
	s.mu.Lock()
	s.agents = a
	s.mu.Unlock()
}

// TestGate serves the agent steps of test runs the way their step test
// asks (docs/platform-api.md, "Step tests and test activations"): which
// tool calls are mocked, run for real after confirmation or refused, and
// whether the agent's answer applies. platform/steptest implements it.
type TestGate interface {
	// GateTool decides a tool call of a test run's agent before the
	// kernel sees it. It may block until the step test's creator
	// confirms the call, or ctx ends.
	GateTool(ctx context.Context, c GatedCall) (ToolGate, error)
	// ReviewAgent is given a test run's agent answer before it becomes
	// the step's output and may block until the answer is reviewed; a
	// TaskError fails the step instead.
	ReviewAgent(ctx context.Context, r GatedAnswer) (*kernel.TaskError, error)
}

// GatedCall is a tool call of a test run's agent step.
type GatedCall struct {
	ToolCall
	// NodeID and Instance are the agent step's.
	NodeID, Instance string
	// RedactedInput is the input as the run's history would show it.
	RedactedInput json.RawMessage
}

// GatedAnswer is a test run's agent answer.
type GatedAnswer struct {
	RunID, TaskID, NodeID, Instance string
	// RedactedOutput is the answer as the run's history would show it.
	RedactedOutput json.RawMessage
}

// ToolGate is how a gated call is served: run (Run), answered with Mock
// without running the action, or refused with Refuse (the agent reads
// its code).
type ToolGate struct {
	Run    bool
	Mock   json.RawMessage
	Refuse *kernel.TaskError
}

// SetTestGate binds the gate of test runs' agent steps (nil: they run as
// any run's).
func (s *Service) SetTestGate(g TestGate) {
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
}

// testGate answers the gate when run is a test run, else nil.
func (s *Service) testGate(ctx context.Context, runID string) (TestGate, *runRow, error) {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g == nil {
		return nil, nil, nil
	}
	r, err := s.getRun(ctx, s.db.Reader(), "", runID)
	if err != nil {
		return nil, nil, err
	}
	if !r.Test {
		return nil, &r, nil
	}
	return g, &r, nil
}

// review lets the gate review a test run's agent answer (out): nil when
// it applies, else the outcome that replaces it.
func (s *Service) review(ctx context.Context, run string, t *kernel.TaskSpec, out json.RawMessage, note string) *outcome {
	g, r, err := s.testGate(ctx, run)
	if err != nil {
		return &outcome{Err: &kernel.TaskError{Code: "AGENT_UNAVAILABLE", Message: err.Error()}, Retryable: true, Note: note}
	}
	if g == nil {
		return nil
	}
	redacted := redact(out, []string{""})
	if p, err := s.program(ctx, s.db.Reader(), r.Project, r.PublishedVersionID); err == nil {
		redacted = redact(out, p.sec.Steps[t.NodeID])
	}
	te, err := g.ReviewAgent(ctx, GatedAnswer{RunID: run, TaskID: t.TaskID, NodeID: t.NodeID, Instance: t.Instance, RedactedOutput: redacted})
	switch {
	case err != nil && ctx.Err() != nil:
		return &outcome{Unknown: true, Note: note + "; stopped while its answer waited for review"}
	case err != nil:
		return &outcome{Err: &kernel.TaskError{Code: "AGENT_UNAVAILABLE", Message: err.Error()}, Retryable: true, Note: note}
	case te != nil:
		return &outcome{Err: te, Note: note + "; its answer was rejected in review"}
	}
	return nil
}

// performAgent runs an agent step's job. A job that fails is a retryable
// task failure (the step has one attempt, so it opens an incident); a job
// interrupted by a restart of the daemon has an unknown outcome.
func (s *Service) performAgent(ctx context.Context, run string, t *kernel.TaskSpec) outcome {
	s.mu.Lock()
	a := s.agents
	s.mu.Unlock()
	if a == nil || t.Agent == nil {
		return outcome{Err: &kernel.TaskError{Code: "AGENT_UNAVAILABLE", Message: "no agent runner is configured in this daemon"}}
	}
	res, err := a.RunAgent(ctx, AgentTask{TaskID: t.TaskID, RunID: run, OperationKey: t.OperationKey, Spec: *t.Agent, Deadline: t.Deadline})
	if err != nil {
		if ctx.Err() != nil {
			return outcome{Unknown: true, Note: "agent job stopped: " + err.Error()}
		}
		note := "agent job not started: " + err.Error()
		if res.JobID != "" {
			note = fmt.Sprintf("agent job %s not followed: %s", res.JobID, err)
		}
		return outcome{Err: &kernel.TaskError{Code: "AGENT_UNAVAILABLE", Message: err.Error()}, Retryable: true, Note: note}
	}
	note := fmt.Sprintf("agent job %s (%s) ended %s", res.JobID, t.Agent.Provider, res.Status)
	if res.Succeeded {
		if o := s.review(ctx, run, t, res.Output, note); o != nil {
			return *o
		}
		return outcome{Output: res.Output, Note: note}
	}
	if res.Status == "interrupted" {
		return outcome{Unknown: true, Note: note}
	}
	code := res.Code
	if code == "" {
		code = "AGENT_" + upper(res.Status)
	}
	return outcome{Err: &kernel.TaskError{Code: code, Message: res.Message}, Retryable: true, Note: note}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
