package wire_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
)

// The tools of an agent step (docs/workflow-language.md, "Agent steps"):
// an action of the http connector against a loopback server, served to the
// fake agent over the job's MCP endpoint.

const lookupWorkflow = `kind: workflow
id: acme/lookup
version: 1
input:
  type: object
  required: [ask]
  properties:
    ask: {type: string}
steps:
  - id: look
    agent:
      provider: claude
      prompt: =input.ask
      tools: [acme/crm.get-customer@1]
    timeout: 1m
  - id: done
    succeed:
      result:
        answer: =steps.look.output
`

func customerAction(base string) string {
	return fmt.Sprintf(`kind: action
id: acme/crm.get-customer
version: 1
sideEffect: read_only
timeout: 10s
input:
  type: object
  required: [id]
  properties:
    id: {type: string}
output:
  type: object
  properties:
    name: {type: string}
    tier: {type: string}
connector: http
config:
  method: GET
  url: ='%s/customers/' + input.id
`, base)
}

// vaultWorkflow's tool has pinned schemas marking fields secret
// (x-secret, writeOnly): the action gets the real values, the run's history
// and the job's audit show "[redacted]".
const vaultWorkflow = `kind: workflow
id: acme/vault-lookup
version: 1
input:
  type: object
  required: [ask]
  properties:
    ask: {type: string, x-secret: true}
steps:
  - id: look
    agent:
      provider: claude
      prompt: =input.ask
      tools: [acme/vault.read@1]
    timeout: 1m
  - id: done
    succeed:
      result:
        answer: =steps.look.output
`

func vaultAction(base string) string {
	return fmt.Sprintf(`kind: action
id: acme/vault.read
version: 1
sideEffect: read_only
timeout: 10s
input:
  type: object
  required: [id, apiKey]
  properties:
    id: {type: string}
    apiKey: {type: string, x-secret: true}
output:
  type: object
  properties:
    name: {type: string}
    token: {type: string, writeOnly: true}
connector: http
config:
  method: GET
  url: ='%s/secrets/' + input.id
  headers:
    X-Api-Key: =input.apiKey
`, base)
}

func TestBridgeAgentStepTools(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var hits atomic.Int32
	var path, key atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/secrets/") {
			key.Store(r.Header.Get("X-Api-Key"))
			fmt.Fprint(w, `{"name":"Ada","token":"tok-9f8e7d"}`)
			return
		}
		hits.Add(1)
		path.Store(r.URL.Path)
		fmt.Fprint(w, `{"name":"Ada","tier":"gold"}`)
	}))
	defer srv.Close()
	e := newDaemonEnv(t)
	op := e.operator()
	e.must(201, e.do("POST", e.projectURL()+"/actions", op, map[string]string{"source": customerAction(srv.URL), "format": "yaml"},
		"Idempotency-Key", "action-customer"))
	e.must(201, e.do("POST", e.projectURL()+"/actions", op, map[string]string{"source": vaultAction(srv.URL), "format": "yaml"},
		"Idempotency-Key", "action-vault"))
	e.publish(lookupWorkflow, true)
	e.publish(vaultWorkflow, true)
	app := e.token("app", "read,workflows")
	platform := e.token("platform", "read")

	jobOf := func(runID string) map[string]any { t.Helper(); return e.jobOfRun(t, platform, runID) }
	audit := func(jobID string) []map[string]any { t.Helper(); return e.toolCallAudit(jobID) }

	t.Run("a pinned tool runs the action", func(t *testing.T) {
		is := is.New(t)
		started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/lookup",
			"inputs": map[string]string{"ask": `#mcp-call:acme_crm_get-customer_1:{"id":"c-7"}`}}))
		run := e.waitRun(app, started["id"].(string), "succeeded")
		is.Equal(run["output"], map[string]any{"answer": `{"name":"Ada","tier":"gold"}`})
		is.Equal(hits.Load(), int32(1))
		is.Equal(path.Load(), "/customers/c-7")

		// The run's history holds the call and the action's outcome.
		runID := run["platformRunId"].(string)
		hist := asJSON(t, e.must(200, e.do("GET", e.projectURL()+"/environments/"+e.ws.EnvironmentID+"/runs/"+runID+"/history", op, nil)))
		is.True(strings.Contains(hist, `"agent_tool_called"`))
		is.True(strings.Contains(hist, `"tool":"acme/crm.get-customer@1"`))
		is.True(strings.Contains(hist, `"name":"Ada"`))

		// The job's audit records the call; its tool list shows the agent's.
		job := jobOf(runID)
		calls := audit(job["id"].(string))
		is.Equal(len(calls), 1)
		sum := calls[0]["summary"].(map[string]any)
		is.Equal(sum["tool"], "acme/crm.get-customer@1")
		is.Equal(sum["status"], "completed")
		tools := e.must(200, e.do("GET", e.bridge+"/v1/bridge/jobs/"+job["id"].(string)+"/tools", e.owner, nil))
		is.True(strings.Contains(asJSON(t, tools), "mcp__bridge__acme_crm_get-customer_1"))
	})

	t.Run("another tool is refused", func(t *testing.T) {
		is := is.New(t)
		before := hits.Load()
		started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/lookup",
			"inputs": map[string]string{"ask": `#mcp-call:acme_crm_delete-customer_1:{"id":"c-7"}`}}))
		run := e.waitRun(app, started["id"].(string), "succeeded")
		answer := run["output"].(map[string]any)["answer"].(string)
		is.True(strings.Contains(answer, "acme_crm_delete-customer_1")) // the MCP error names the unknown tool
		is.Equal(hits.Load(), before)
		is.Equal(len(audit(jobOf(run["platformRunId"].(string))["id"].(string))), 0)
	})

	t.Run("input outside the pinned schema is refused", func(t *testing.T) {
		is := is.New(t)
		before := hits.Load()
		started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/lookup",
			"inputs": map[string]string{"ask": `#mcp-call:acme_crm_get-customer_1:{"id":7}`}}))
		run := e.waitRun(app, started["id"].(string), "succeeded")
		answer := run["output"].(map[string]any)["answer"].(string)
		is.True(strings.HasPrefix(answer, "PF-VALIDATION"))
		is.Equal(hits.Load(), before)
		calls := audit(jobOf(run["platformRunId"].(string))["id"].(string))
		is.Equal(len(calls), 1)
		is.Equal(calls[0]["summary"].(map[string]any)["status"], "refused")
	})

	t.Run("the endpoint takes only the running turn's token", func(t *testing.T) {
		is := is.New(t)
		job := jobOf(e.waitRun(app, e.must(202, e.startRun(app, map[string]any{"templateId": "acme/lookup",
			"inputs": map[string]string{"ask": "hello"}}))["id"].(string), "succeeded")["platformRunId"].(string))
		url := e.bridge + "/v1/bridge/jobs/" + job["id"].(string) + "/mcp"
		body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
		is.Equal(e.do("POST", url, e.owner, body).status, 401) // a client token is not the turn's
		is.Equal(e.do("POST", url, "", body).status, 401)
		is.Equal(e.do("POST", url, "brg_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", body).status, 401)
	})

	t.Run("secret values are redacted in the history and the audit", func(t *testing.T) {
		is := is.New(t)
		const secret = "sk-live-5a4b3c2d1e"
		started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/vault-lookup",
			"inputs": map[string]string{"ask": `#mcp-call:acme_vault_read_1:{"id":"c-7","apiKey":"` + secret + `"}`}}))
		run := e.waitRun(app, started["id"].(string), "succeeded")
		is.Equal(key.Load(), secret) // the action got the real value

		runID := run["platformRunId"].(string)
		hist := asJSON(t, e.must(200, e.do("GET", e.projectURL()+"/environments/"+e.ws.EnvironmentID+"/runs/"+runID+"/history", op, nil)))
		is.True(strings.Contains(hist, `"agent_tool_called"`))
		is.True(strings.Contains(hist, `"apiKey":"[redacted]"`))
		is.True(strings.Contains(hist, `"token":"[redacted]"`)) // the tool task's output
		is.True(strings.Contains(hist, `"name":"Ada"`))
		is.True(!strings.Contains(hist, secret))

		calls := audit(jobOf(runID)["id"].(string))
		is.Equal(len(calls), 1)
		entry := asJSON(t, calls[0])
		is.True(strings.Contains(entry, `"apiKey":"[redacted]"`))
		is.True(strings.Contains(entry, `"id":"c-7"`))
		is.True(strings.Contains(entry, `"token":"[redacted]"`))
		is.True(strings.Contains(entry, `"name":"Ada"`))
		is.True(!strings.Contains(entry, secret))
		is.True(!strings.Contains(entry, "tok-9f8e7d"))
	})
}

// jobOfRun answers the bridge job of a workflow run's agent step.
func (e *daemonEnv) jobOfRun(t *testing.T, token, runID string) map[string]any {
	t.Helper()
	for _, j := range e.must(200, e.do("GET", e.bridge+"/v1/bridge/jobs", token, nil))["jobs"].([]any) {
		job := j.(map[string]any)
		if job["metadata"].(map[string]any)["workflowRunId"] == runID {
			return job
		}
	}
	t.Fatalf("no job for run %s", runID)
	return nil
}

// toolCallAudit answers a job's agent.tool_call audit entries, with payloads.
func (e *daemonEnv) toolCallAudit(jobID string) []map[string]any {
	var out []map[string]any
	body := e.must(200, e.do("GET", e.bridge+"/v1/bridge/jobs/"+jobID+"/audit?includePayloads=true", e.owner, nil))
	for _, en := range body["entries"].([]any) {
		if m := en.(map[string]any); m["kind"] == "agent.tool_call" {
			out = append(out, m)
		}
	}
	return out
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
