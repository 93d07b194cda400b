package wire_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"
)

// A step test of an agent step end to end (docs/platform-api.md, "Step
// tests and test activations"): the daemon with the bridge and the
// platform linked, the agent step run as a bridge job by the fake claude
// CLI, which calls the step's tools over the job's MCP endpoint.

const deskDraft = `kind: workflow
id: acme/desk
version: 1
input:
  type: object
  properties:
    ask: {type: string}
    id: {type: string}
steps:
  - id: look
    agent:
      provider: claude
      prompt: =input.ask
      tools: [acme/crm.get-customer@1, acme/crm.tag-customer@1]
    timeout: 20m
  - id: tag
    action: acme/crm.tag-customer@1
    with: {id: =input.id}
  - id: done
    succeed:
      result: {}
`

func tagAction(base string) string {
	return fmt.Sprintf(`kind: action
id: acme/crm.tag-customer
version: 1
sideEffect: idempotent
timeout: 10s
input:
  type: object
  required: [id]
  properties:
    id: {type: string}
output:
  type: object
  properties:
    tagged: {type: boolean}
connector: http
config:
  method: POST
  url: ='%s/tags/' + input.id
`, base)
}

func TestStepTestAgentOverHTTP(t *testing.T) {
	t.Parallel()
	var looks, tags atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/tags/") {
			if r.URL.Path == "/tags/c-7" { // the agent's calls (the limits' action step tags c-1)
				tags.Add(1)
			}
			fmt.Fprint(w, `{"tagged":true}`)
			return
		}
		looks.Add(1)
		fmt.Fprint(w, `{"name":"Ada","tier":"gold"}`)
	}))
	defer srv.Close()
	e := newDaemonEnv(t)
	op := e.operator()
	e.must(201, e.do("POST", e.projectURL()+"/actions", op, map[string]string{"source": customerAction(srv.URL), "format": "yaml"},
		"Idempotency-Key", "st-customer"))
	e.must(201, e.do("POST", e.projectURL()+"/actions", op, map[string]string{"source": tagAction(srv.URL), "format": "yaml"},
		"Idempotency-Key", "st-tag"))
	draft := uuid.NewString()
	e.must(201, e.do("PUT", e.projectURL()+"/drafts/"+draft, op, map[string]string{"source": deskDraft, "format": "yaml"}))
	env := e.projectURL() + "/environments/" + e.ws.EnvironmentID
	e.must(200, e.do("PUT", env+"/test-policy", op, map[string]string{"test_calls": "all"}))

	step := func(kind, id string, more map[string]any) map[string]any {
		b := map[string]any{"kind": kind, "step_id": id, "draft_id": draft, "draft_revision": 1}
		for k, v := range more {
			b[k] = v
		}
		return b
	}
	read := func(id string) map[string]any {
		t.Helper()
		return e.must(200, e.do("GET", env+"/step-tests/"+id, op, nil))
	}
	// waitFor polls a step test until cond holds (20 s at most).
	waitFor := func(id, what string, cond func(v map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			v := read(id)
			if cond(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("step test %s: no %s: %v", id, what, v)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	pending := func(id, kind string) map[string]any {
		t.Helper()
		var item map[string]any
		v := waitFor(id, kind+" item", func(v map[string]any) bool {
			list, _ := v["pending"].([]any)
			for _, p := range list {
				if p.(map[string]any)["kind"] == kind {
					item = p.(map[string]any)
					return true
				}
			}
			return false
		})
		if v["status"] != "waiting" {
			t.Fatalf("step test %s with a %s item is %v", id, kind, v["status"])
		}
		return item
	}
	status := func(id, want string) map[string]any {
		t.Helper()
		return waitFor(id, "status "+want, func(v map[string]any) bool { return v["status"] == want })
	}
	answer := func(id, key string, confirm bool) res {
		t.Helper()
		return e.do("POST", env+"/step-tests/"+id+"/answers", op, map[string]any{"instance_key": key, "confirm": confirm})
	}
	create := func(body map[string]any) string {
		t.Helper()
		return e.must(200, e.do("POST", env+"/step-tests", op, body))["id"].(string)
	}
	lookCall := `#mcp-call:acme_crm_get-customer_1:{"id":"c-7"}`
	tagCall := `#mcp-call:acme_crm_tag-customer_1:{"id":"c-7"}`

	t.Run("limits: an agent step 900 s, an action step 300 s", func(t *testing.T) {
		is := is.New(t)
		for _, c := range []struct {
			kind, id string
			secs     int
			status   int
		}{{"agent", "look", 901, 422}, {"agent", "look", -1, 422}, {"action", "tag", 301, 422}} {
			r := e.do("POST", env+"/step-tests", op, step(c.kind, c.id, map[string]any{"timeout_seconds": c.secs, "acknowledged_side_effect": "idempotent"}))
			is.Equal(r.status, c.status)
			is.True(strings.Contains(string(r.body), "/timeout_seconds"))
		}
		for _, c := range []struct {
			kind, id string
			more     map[string]any
			want     time.Duration
		}{
			{"agent", "look", map[string]any{"input": map[string]any{"ask": "hello"}}, 900 * time.Second},
			{"agent", "look", map[string]any{"input": map[string]any{"ask": "hello"}, "timeout_seconds": 900}, 900 * time.Second},
			{"action", "tag", map[string]any{"input": map[string]any{"id": "c-1"}, "acknowledged_side_effect": "idempotent"}, 300 * time.Second},
		} {
			id := create(step(c.kind, c.id, c.more))
			v := read(id)
			created, _ := time.Parse(time.RFC3339Nano, v["created_at"].(string))
			expires, _ := time.Parse(time.RFC3339Nano, v["expires_at"].(string))
			is.Equal(expires.Sub(created), c.want)
			is.Equal(v["timeout_seconds"], c.want.Seconds())
			e.must(200, e.do("POST", env+"/step-tests/"+id+"/cancel", op, nil))
		}
	})

	t.Run("tool_mocks answer the agent; the action never runs", func(t *testing.T) {
		is := is.New(t)
		before := looks.Load()
		id := create(step("agent", "look", map[string]any{"input": map[string]any{"ask": lookCall},
			"tool_mocks": map[string]any{"acme/crm.get-customer@1": map[string]any{"name": "Mock", "tier": "silver"}}}))
		item := pending(id, "review")
		is.Equal(item["node_id"], "look")
		is.Equal(item["instance_key"], "look")
		is.Equal(item["output"], `{"name":"Mock","tier":"silver"}`)
		e.must(200, answer(id, "look", true))
		v := status(id, "succeeded")
		is.Equal(v["output"], map[string]any{"look": map[string]any{"output": `{"name":"Mock","tier":"silver"}`}})
		is.Equal(looks.Load(), before)
	})

	t.Run("a tool neither mocked nor real is refused", func(t *testing.T) {
		is := is.New(t)
		before := looks.Load()
		id := create(step("agent", "look", map[string]any{"input": map[string]any{"ask": lookCall}}))
		item := pending(id, "review")
		is.True(strings.HasPrefix(item["output"].(string), "STEPTEST_TOOL_NOT_ALLOWED"))
		e.must(200, answer(id, "look", false)) // rejected: the step test fails
		v := status(id, "failed")
		is.True(strings.Contains(fmt.Sprint(v["error"]), "STEPTEST_REJECTED"))
		is.Equal(looks.Load(), before)
	})

	t.Run("a side-effecting real tool needs its acknowledgment and each call's confirmation", func(t *testing.T) {
		is := is.New(t)
		body := step("agent", "look", map[string]any{"input": map[string]any{"ask": tagCall},
			"real_tools": []string{"acme/crm.tag-customer@1"}})
		r := e.do("POST", env+"/step-tests", op, body)
		is.Equal(r.status, 409)
		is.True(strings.Contains(string(r.body), `"PF-STEPTEST-CONFIRM"`))
		is.True(strings.Contains(string(r.body), "want idempotent"))
		time.Sleep(100 * time.Millisecond)
		is.Equal(tags.Load(), int32(0)) // refused before anything ran

		body["acknowledged_side_effect"] = "idempotent"
		created := e.must(200, e.do("POST", env+"/step-tests", op, body))
		is.Equal(created["side_effect"], "idempotent")
		id := created["id"].(string)
		item := pending(id, "confirm")
		is.Equal(item["instance_key"], "look#call.1")
		is.Equal(item["tool"], "acme/crm.tag-customer@1")
		is.Equal(item["side_effect"], "idempotent")
		is.Equal(item["input"], map[string]any{"id": "c-7"})
		is.Equal(tags.Load(), int32(0)) // held

		r = answer(id, "look#call.7", true)
		is.Equal(r.status, 422)
		is.True(strings.Contains(string(r.body), "PF-STEPTEST-ANSWER"))
		e.must(200, answer(id, "look#call.1", true))
		r = answer(id, "look#call.1", true)
		is.Equal(r.status, 422)
		is.True(strings.Contains(string(r.body), "PF-STEPTEST-ANSWERED"))
		review := pending(id, "review")
		is.Equal(review["output"], `{"tagged":true}`)
		is.Equal(tags.Load(), int32(1))
		e.must(200, answer(id, "look", true))
		status(id, "succeeded")

		// The job's audit records the real call.
		jobs := e.must(200, e.do("GET", e.bridge+"/v1/bridge/jobs", e.token("platform", "read"), nil))["jobs"].([]any)
		found := false
		for _, j := range jobs {
			job := j.(map[string]any)
			if job["metadata"].(map[string]any)["workflowRunId"] == created["run_id"] {
				calls := e.toolCallAudit(job["id"].(string))
				found = len(calls) == 1 && calls[0]["summary"].(map[string]any)["status"] == "completed"
			}
		}
		is.True(found)
	})

	t.Run("a declined call never runs", func(t *testing.T) {
		is := is.New(t)
		before := tags.Load()
		id := create(step("agent", "look", map[string]any{"input": map[string]any{"ask": tagCall},
			"real_tools": []string{"acme/crm.tag-customer@1"}, "acknowledged_side_effect": "idempotent"}))
		pending(id, "confirm")
		e.must(200, answer(id, "look#call.1", false))
		review := pending(id, "review")
		is.True(strings.HasPrefix(review["output"].(string), "STEPTEST_DECLINED"))
		is.Equal(tags.Load(), before)
		e.must(200, e.do("POST", env+"/step-tests/"+id+"/cancel", op, nil))
		r := answer(id, "look", true)
		is.Equal(r.status, 422)
		is.True(strings.Contains(string(r.body), "PF-STEPTEST-ENDED"))
	})
}
