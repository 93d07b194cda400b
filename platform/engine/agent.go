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
		return outcome{Err: &kernel.TaskError{Code: "AGENT_UNAVAILABLE", Message: err.Error()}, Retryable: true,
			Note: "agent job not started: " + err.Error()}
	}
	note := fmt.Sprintf("agent job %s (%s) ended %s", res.JobID, t.Agent.Provider, res.Status)
	if res.Succeeded {
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
