package platform_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store/broker"
)

// Definitions of the secrets test: every place a run holds a value marked
// x-secret (or writeOnly): input, a variable, an action's output, a signal
// payload, a human task's form data and the run output.
const (
	tokenAction = `kind: action
id: acme/token
version: 1
sideEffect: read_only
input:
  type: object
  properties:
    token: {type: string}
output:
  type: object
  properties:
    token: {type: string, x-secret: true}
connector: echo
`
	secretsWorkflow = `kind: workflow
id: acme/secrets
version: 1
input:
  type: object
  required: [key]
  properties:
    key: {type: string, x-secret: true}
output:
  type: object
  properties:
    token: {type: string, x-secret: true}
    note: {type: string}
    real: {type: boolean}
vars:
  kept: {type: string, x-secret: true}
  count: {type: integer, default: 1}
steps:
  - id: fetch
    action: acme/token@1
    with: {token: =input.key + "-issued"}
  - id: keep
    set:
      kept: =steps.fetch.output.token
  - id: login
    signal: login
    schema:
      type: object
      required: [password]
      properties:
        password: {type: string, x-secret: true}
    deadline: 1h
  - id: review
    human:
      title: Review
      assignees: []
      form:
        type: object
        properties:
          pin: {type: string, writeOnly: true}
          note: {type: string}
      decisions: [ok]
  - id: done
    succeed:
      result:
        token: =vars.kept + steps.login.output.password + steps.review.output.data.pin
        note: =steps.review.output.data.note
        real: =size(vars.kept) == 15 && steps.login.output.password.startsWith("pass-") && steps.review.output.data.pin.endsWith("-0003")
`
)

// No value marked secret is shown by a run view, its history, its human
// task or its outbox events, while the run itself computes with the real
// values.
func TestSecretValuesAreRedactedEverywhere(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	h.mustPublish(op, "actions", tokenAction, "secrets-token")
	wf := h.mustPublish(op, "workflows", secretsWorkflow, "secrets-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "secrets-activation", "").ID

	var mu sync.Mutex
	var published []string
	sub, err := h.d.Broker.Subscribe(context.Background(), "test-secrets", []string{engine.OutboxTopic}, func(_ context.Context, m broker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		published = append(published, string(m.Value))
		return nil
	})
	is.NoErr(err)
	defer sub.Close()

	secrets := []string{"key-0001", "key-0001-issued", "pass-0002", "pin-0003"}
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"key": "key-0001"}}, "secrets-1")
	h.waitRun(op, run.ID, "waiting")
	h.must(202, h.signalRun(op, run.ID, map[string]any{"name": "login", "payload": map[string]any{"password": "pass-0002"}}, ""), nil)
	h.waitRun(op, run.ID, "waiting")
	var page humanPage
	h.must(200, h.get(ePath(h)+"/human-tasks?run_id="+run.ID, op), &page)
	is.Equal(len(page.Items), 1)
	task := h.mustHuman(op, page.Items[0].ID, "complete", map[string]any{"decision": "ok", "data": map[string]any{"pin": "pin-0003", "note": "fine"}}, "secrets-done")
	is.Equal(string(task.Data), `{"note":"fine","pin":"[redacted]"}`)
	done := h.waitRun(op, run.ID, "succeeded")
	// real: the run computed with the real values.
	is.Equal(string(done.State.Output), `{"note":"fine","real":true,"token":"[redacted]"}`)
	is.Equal(string(done.State.Vars["kept"]), `"[redacted]"`)
	is.Equal(string(done.State.Vars["count"]), `1`)

	shown := map[string]string{
		"run":        string(h.get(ePath(h)+"/runs/"+run.ID, op).body),
		"history":    string(h.get(ePath(h)+"/runs/"+run.ID+"/history", op).body),
		"steps":      string(h.get(ePath(h)+"/runs/"+run.ID+"/steps", op).body),
		"logs":       string(h.get(ePath(h)+"/runs/"+run.ID+"/logs", op).body),
		"human task": string(h.get(ePath(h)+"/human-tasks/"+task.ID, op).body),
		"run list":   string(h.get(ePath(h)+"/runs", op).body),
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		all := strings.Join(published, "\n")
		mu.Unlock()
		if strings.Contains(all, "platform.run.succeeded") {
			shown["outbox"] = all
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no succeeded event in %q", all)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for where, body := range shown {
		for _, secret := range secrets {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q: %s", where, secret, body)
			}
		}
	}
	is.True(strings.Contains(shown["history"], "[redacted]"))
	is.True(strings.Contains(shown["outbox"], "[redacted]"))
}
