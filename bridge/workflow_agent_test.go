package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
)

// agentTask is an agent step's task with a fresh operation key.
func agentTask(provider, prompt string, output string) engine.AgentTask {
	t := engine.AgentTask{TaskID: uuid.NewString(), RunID: uuid.NewString(), OperationKey: uuid.NewString(),
		Spec: kernel.AgentSpec{Provider: provider, Prompt: prompt, MaxTurns: 20}}
	if output != "" {
		t.Spec.Output = json.RawMessage(output)
	}
	return t
}

// run calls RunAgent with a deadline of 20 s.
func runAgent(t *testing.T, a *bridge.WorkflowAgents, task engine.AgentTask) engine.AgentResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.RunAgent(ctx, task)
	if err != nil {
		t.Fatalf("RunAgent: %v", err)
	}
	return res
}

// agentOutcome is what a RunAgent call answered.
type agentOutcome struct {
	engine.AgentResult
	err error
}

// goAgent calls RunAgent in the background.
func goAgent(ctx context.Context, a *bridge.WorkflowAgents, task engine.AgentTask) <-chan agentOutcome {
	done := make(chan agentOutcome, 1)
	go func() {
		res, err := a.RunAgent(ctx, task)
		done <- agentOutcome{res, err}
	}()
	return done
}

const categorySchema = `{"type":"object","required":["category"],"properties":{"category":{"type":"string"}}}`

func TestWorkflowAgentAnswers(t *testing.T) {
	t.Parallel()
	e, svc := newBridgeOnly(t, "")
	agents := svc.WorkflowAgents(nil)
	cases := []struct {
		name, provider, prompt, output string
		want                           string
	}{
		{"text answer through a profile", "fake", "say hello", "", `"say hello"`},
		{"text answer through a provider name", "echo", "hi there", "", `"hi there"`},
		{"empty provider is the default profile", "", "plain", "", `"plain"`},
		{"whole object", "claude", `{ "category" : "bug" }`, categorySchema, `{"category":"bug"}`},
		{"fenced object", "echo", "Here you go:\n```json\n{\"category\": \"billing\"}\n```\nBye {", categorySchema, `{"category":"billing"}`},
		{"last object in prose", "fake", `first {"category":"x"} then {"category":"other","n":[{"a":1}]} done`, categorySchema, `{"category":"other","n":[{"a":1}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			res := runAgent(t, agents, agentTask(c.provider, c.prompt, c.output))
			is.True(res.Succeeded)
			is.Equal(res.Status, "succeeded")
			is.True(res.JobID != "")
			// Without a schema the output is the answer as a JSON string
			// (the echoing agents answer the prompt).
			is.Equal(string(res.Output), c.want)
		})
	}

	is := is.New(t)
	// Instructions and the schema precede the prompt.
	task := agentTask("fake", `{"category":"bug"}`, categorySchema)
	task.Spec.Instructions = "You triage tickets."
	task.Spec.Model = "sonnet"
	res := runAgent(t, agents, task)
	is.True(res.Succeeded)
	is.Equal(string(res.Output), `{"category":"bug"}`)

	// The jobs belong to the internal client "platform" only.
	platform := e.token(bridge.PlatformClient, "read")
	page := e.do("GET", "/v1/bridge/jobs?order=desc&limit=1", platform, nil).json(t)
	job := page["jobs"].([]any)[0].(map[string]any)
	is.Equal(job["id"], res.JobID)
	is.Equal(job["client"], "platform")
	is.Equal(job["source"], "workflow")
	is.Equal(job["profile"], "fake")
	is.Equal(job["provider"], "claude")
	is.True(strings.HasPrefix(job["prompt"].(string), "Instructions:\nYou triage tickets.\n\nAnswer with one JSON object"))
	is.Equal(job["metadata"].(map[string]any)["workflowRunId"], task.RunID)
	is.Equal(job["metadata"].(map[string]any)["operationKey"], task.OperationKey)
	is.Equal(job["metadata"].(map[string]any)["model"], "sonnet")
	other := e.token("ide", "read")
	is.Equal(len(e.do("GET", "/v1/bridge/jobs", other, nil).json(t)["jobs"].([]any)), 0)
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+res.JobID, other, nil).Status, 404)

	// The same operation answers the same job, whatever the attempt.
	again := runAgent(t, agents, task)
	is.Equal(again.JobID, res.JobID)
	is.Equal(string(again.Output), `{"category":"bug"}`)
	task.TaskID = uuid.NewString()
	again = runAgent(t, agents, task)
	is.Equal(again.JobID, res.JobID)
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+res.JobID, platform, nil).json(t)["attempt"], float64(1))
	// The step's model and turn bound reach the agent's command line, after
	// the profile's own arguments.
	args := agentTask("fake", "#args", "")
	args.Spec.Model, args.Spec.MaxTurns = "claude-sonnet-4.5", 8
	res2 := runAgent(t, agents, args)
	is.True(res2.Succeeded)
	is.True(strings.HasSuffix(strings.Trim(string(res2.Output), `"`), "--model claude-sonnet-4.5 --max-turns 8"))
	// A model that could pass for an option is refused before any job.
	bad := agentTask("fake", "#args", "")
	bad.Spec.Model = "--dangerously-skip-permissions"
	refused := runAgent(t, agents, bad)
	is.Equal(refused.Code, "AGENT_MODEL_INVALID")
	is.Equal(refused.JobID, "")
	// Another client's job cannot borrow them through its metadata.
	ide := e.token("ide2", "submit,read")
	id := e.submit(ide, map[string]any{"prompt": "#args", "profile": "fake",
		"metadata": map[string]string{"model": "opus", "maxTurns": "3"}})
	e.waitState(ide, id, "succeeded")
	answer := string(e.do("GET", "/v1/bridge/jobs/"+id+"/result", ide, nil).Body)
	is.True(strings.Contains(answer, "--output-format stream-json"))
	is.True(!strings.Contains(answer, "--model"))
}

func TestWorkflowAgentFailures(t *testing.T) {
	t.Parallel()
	e, svc := newBridgeOnly(t, "")
	platform := e.token(bridge.PlatformClient, "read")

	t.Run("unknown provider", func(t *testing.T) {
		is := is.New(t)
		res := runAgent(t, svc.WorkflowAgents(nil), agentTask("gemini", "x", ""))
		is.True(!res.Succeeded)
		is.Equal(res.Code, "AGENT_PROVIDER_UNKNOWN")
		is.Equal(res.JobID, "")
		is.True(strings.Contains(res.Message, "fake"))
	})
	t.Run("prompt too long", func(t *testing.T) {
		is := is.New(t)
		res := runAgent(t, svc.WorkflowAgents(nil), agentTask("echo", strings.Repeat("x", 100_001), ""))
		is.Equal(res.Code, "AGENT_PROMPT_TOO_LONG")
	})
	t.Run("no object in the answer", func(t *testing.T) {
		is := is.New(t)
		// #pwd: the fake agent answers its working directory, not the prompt.
		res := runAgent(t, svc.WorkflowAgents(nil), agentTask("fake", "#pwd", categorySchema))
		is.True(!res.Succeeded)
		is.Equal(res.Status, "succeeded")
		is.Equal(res.Code, "AGENT_OUTPUT_INVALID")
	})
	t.Run("the step refuses the answer", func(t *testing.T) {
		is := is.New(t)
		var seen json.RawMessage
		check := func(_ context.Context, _ engine.AgentTask, out json.RawMessage) error {
			seen = out
			return errors.New("category must be one of bug, billing")
		}
		res := runAgent(t, svc.WorkflowAgents(check), agentTask("echo", `{"category":"x"}`, categorySchema))
		is.Equal(string(seen), `{"category":"x"}`)
		is.True(!res.Succeeded)
		is.Equal(res.Code, "AGENT_OUTPUT_INVALID")
		is.True(strings.Contains(res.Message, "bug, billing"))
	})
	t.Run("a failed job is retried by the next attempt", func(t *testing.T) {
		is := is.New(t)
		task := agentTask("fake", "#crash", "")
		res := runAgent(t, svc.WorkflowAgents(nil), task)
		is.True(!res.Succeeded)
		is.Equal(res.Status, "failed")
		is.Equal(res.Code, "AGENT_CRASHED")
		// The same attempt again: the same failed job, not run again.
		is.Equal(runAgent(t, svc.WorkflowAgents(nil), task).JobID, res.JobID)
		is.Equal(e.do("GET", "/v1/bridge/jobs/"+res.JobID, platform, nil).json(t)["attempt"], float64(1))
		// A new attempt of the step retries the job.
		task.TaskID = uuid.NewString()
		again := runAgent(t, svc.WorkflowAgents(nil), task)
		is.Equal(again.JobID, res.JobID)
		is.Equal(again.Code, "AGENT_CRASHED")
		is.Equal(e.do("GET", "/v1/bridge/jobs/"+res.JobID, platform, nil).json(t)["attempt"], float64(2))
	})
	t.Run("a cancelled job", func(t *testing.T) {
		is := is.New(t)
		task := agentTask("fake", "#hang", "")
		done := goAgent(context.Background(), svc.WorkflowAgents(nil), task)
		id := waitAgentJob(t, e, platform, task.OperationKey, "running")
		// Another client may not cancel it; the owner may.
		ctl := e.token("platform-admin", "control")
		is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/cancel", ctl, map[string]any{}).Status, 404)
		is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/cancel", e.owner, map[string]any{}).Status, 200)
		res := <-done
		is.Equal(res.Status, "cancelled")
		is.Equal(res.Code, "AGENT_CANCELLED")
	})
	t.Run("the deadline cancels the job", func(t *testing.T) {
		is := is.New(t)
		task := agentTask("fake", "#hang", "")
		// Long enough for the job to be submitted on a loaded machine (the
		// agent hangs, so only the deadline ends it).
		deadline := time.Now().Add(3 * time.Second)
		task.Deadline = &deadline
		res := runAgent(t, svc.WorkflowAgents(nil), task)
		is.Equal(res.Status, "cancelled")
		is.Equal(res.Code, "AGENT_TIMEOUT")
		is.Equal(res.Message, "the agent step's deadline passed; its job was cancelled")
		job := e.waitState(platform, res.JobID, "cancelled")
		is.Equal(job["state"], "cancelled")
	})
	t.Run("a deadline passed before the submit is a timeout", func(t *testing.T) {
		is := is.New(t)
		task := agentTask("fake", "#hang", "")
		deadline := time.Now().Add(-time.Second)
		task.Deadline = &deadline
		res := runAgent(t, svc.WorkflowAgents(nil), task)
		is.Equal(res.Status, "cancelled")
		is.Equal(res.Code, "AGENT_TIMEOUT")
		is.Equal(res.JobID, "")
		for _, j := range e.do("GET", "/v1/bridge/jobs?order=desc", platform, nil).json(t)["jobs"].([]any) {
			is.True(j.(map[string]any)["metadata"].(map[string]any)["operationKey"] != task.OperationKey) // no job was created
		}
	})
	t.Run("a cancelled step cancels the job", func(t *testing.T) {
		is := is.New(t)
		task := agentTask("fake", "#hang", "")
		ctx, cancel := context.WithCancel(context.Background())
		done := goAgent(ctx, svc.WorkflowAgents(nil), task)
		id := waitAgentJob(t, e, platform, task.OperationKey, "running")
		cancel()
		res := <-done
		is.Equal(res.JobID, id)
		is.Equal(res.Code, "AGENT_CANCELLED")
		e.waitState(platform, id, "cancelled")
	})
}

// TestWorkflowAgentAcrossRestart: a job the daemon stops under is left
// running (not cancelled), then interrupted by the next start; its step
// answers interrupted for the same attempt and retries it for a new one.
func TestWorkflowAgentAcrossRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e, svc := newBridgeOnly(t, "")
	platform := e.token(bridge.PlatformClient, "read")
	task := agentTask("fake", "#hang", "")
	stopped := goAgent(e.d.Context(), svc.WorkflowAgents(nil), task) // the engine's calls end with the daemon
	id := waitAgentJob(t, e, platform, task.OperationKey, "running")
	is.NoErr(e.d.Shutdown())
	is.True((<-stopped).err != nil)

	svc = startBridgeOnly(e)
	is.Equal(e.waitState(platform, id, "interrupted")["state"], "interrupted")
	res := runAgent(t, svc.WorkflowAgents(nil), task)
	is.Equal(res.JobID, id)
	is.Equal(res.Status, "interrupted")
	is.True(!res.Succeeded)

	task.TaskID = uuid.NewString()
	ctx, cancel := context.WithCancel(context.Background())
	done := goAgent(ctx, svc.WorkflowAgents(nil), task)
	job := waitAgentJob(t, e, platform, task.OperationKey, "running")
	is.Equal(job, id)
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+id, platform, nil).json(t)["attempt"], float64(2))
	cancel()
	is.Equal((<-done).Code, "AGENT_CANCELLED")
}

// waitAgentJob waits until the job of an operation reaches state and
// answers its id.
func waitAgentJob(t *testing.T, e *env, tok, operation, state string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, j := range e.do("GET", "/v1/bridge/jobs?order=desc", tok, nil).json(t)["jobs"].([]any) {
			job := j.(map[string]any)
			if job["metadata"].(map[string]any)["operationKey"] == operation && job["state"] == state {
				return job["id"].(string)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the job of operation %s did not reach %s", operation, state)
	return ""
}
