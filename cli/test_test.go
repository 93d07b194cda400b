package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/steptest"
)

// ticketAction calls POST <base>/tickets with the http adapter.
const ticketAction = `kind: action
id: acme/create-ticket
version: 1
sideEffect: idempotency_key
input:
  type: object
  required: [base, subject]
  properties:
    base: {type: string}
    subject: {type: string}
output:
  type: object
  properties:
    id: {type: string}
connector: http
config:
  method: POST
  url: =input.base + "/tickets"
  body: {subject: =input.subject}
`

const ticketDraft = `kind: workflow
id: acme/tickets
version: 1
input:
  type: object
  properties:
    base: {type: string}
    subject: {type: string}
steps:
  - id: create
    action: acme/create-ticket@1
    with: {base: =input.base, subject: =input.subject}
  - id: approve
    human:
      title: ="Close " + input.subject
      assignees: group:support
      decisions: [close, keep]
`

func TestTestCommands(t *testing.T) {
	is := is.New(t)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id":"T-1"}`))
	}))
	defer srv.Close()
	d := startDaemon(t)
	d.ok(append([]string{"workflow", "publish"}, writeDefs(t, ticketAction)...)...)

	is.Equal(d.ok("test", "policy"), "Test policy: disabled (revision 0)\n")
	file := filepath.Join(t.TempDir(), "tickets.yaml")
	is.NoErr(os.WriteFile(file, []byte(ticketDraft), 0o600))
	var draft catalog.Draft
	d.okJSON(&draft, "test", "draft", file, "--json")
	is.Equal(draft.Revision, int64(1))
	input := `{"base":"` + srv.URL + `","subject":"printer"}`

	// Disabled, then unacknowledged: refused, nothing called.
	code, _, errw := d.run("test", "step", draft.ID, "create", "--input", input)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-STEPTEST-DISABLED"))
	is.Equal(d.ok("test", "policy", "all"), "Test policy: all (revision 1)\n")
	code, _, errw = d.run("test", "step", draft.ID, "create", "--input", input, "--wait")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-STEPTEST-CONFIRM"))
	is.Equal(calls.Load(), int64(0))

	// Acknowledged: the call is made once, as a test run.
	out := d.ok("test", "step", draft.ID, "create", "--input", input, "--ack", "idempotency_key", "--wait")
	is.True(strings.Contains(out, " succeeded\n"))
	is.True(strings.Contains(out, `"T-1"`))
	is.Equal(calls.Load(), int64(1))

	// A person step waits; answer it.
	var v steptest.StepTest
	d.okJSON(&v, "test", "step", draft.ID, "approve", "--kind", "human", "--input", `{"subject":"printer"}`, "--wait", "--json")
	is.Equal(v.Status, "waiting")
	is.Equal(v.Pending[0].InstanceKey, "approve")
	out = d.ok("test", "answer", v.ID, "approve", "--confirm=false")
	is.True(strings.HasPrefix(out, "Step test "+v.ID))
	waitFor(t, "the answered step test", func() bool {
		d.okJSON(&v, "test", "show", v.ID, "--json")
		return v.Status == "succeeded"
	})
	if !strings.Contains(string(v.Output), `"keep"`) { // the last decision
		t.Fatalf("output %s", v.Output)
	}
	d.okJSON(&v, "test", "step", draft.ID, "approve", "--kind", "human", "--input", `{"subject":"fax"}`, "--json")
	out = d.ok("test", "cancel", v.ID)
	if !strings.Contains(out, " cancelled\n") {
		t.Fatalf("cancel: %s", out)
	}

	// Test activation, a test run, a listen URL and a signed request.
	var ta steptest.TestActivation
	d.okJSON(&ta, "test", "activate", draft.ID, "--ack", "idempotency_key", "--expires", "600", "--json")
	is.Equal(ta.SideEffect, "idempotency_key")
	out = d.ok("test", "run", ta.ID, "--input", input)
	is.True(strings.HasPrefix(out, "Test run "))
	var l steptest.Listen
	d.okJSON(&l, "test", "listen", ta.ID, "--json")
	is.True(strings.HasPrefix(l.Secret, "whsec_"))
	var dl steptest.TestDelivery
	d.okJSON(&dl, "test", "send", l.ID, "--body", input, "--secret", l.Secret, "--id", "req-1", "--json")
	is.Equal(dl.WebhookID, "req-1")
	var run engine.Run
	d.okJSON(&run, "run", "get", dl.RunID, "--json")
	is.True(run.Test)
	out = d.ok("test", "deactivate", ta.ID)
	is.Equal(out, "Test activation "+ta.ID+" deleted\n")
	code, _, errw = d.run("test", "run", ta.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-NOT-FOUND"))

	// Usage errors.
	code, _, _ = d.run("test", "step", draft.ID)
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("test", "step", draft.ID, "create", "--input", "{")
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("test", "draft", filepath.Join(t.TempDir(), "missing.yaml"))
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("test", "send", l.ID, "--body", "{}", "--secret", "nope")
	is.Equal(code, ExitUsage)
}
