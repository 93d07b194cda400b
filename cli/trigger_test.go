package cli

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/trigger"
)

func TestTriggerCommands(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	d.ok(append([]string{"workflow", "publish"}, writeDefs(t, platformtest.GreetAction, platformtest.NothingAction, platformtest.FlowWorkflow)...)...)
	d.ok("workflow", "activate", "acme/flow")
	is.Equal(d.ok("trigger", "list"), "no triggers\n")

	out := d.ok("trigger", "create", "acme/flow", "--name", "orders")
	is.True(strings.HasPrefix(out, "Trigger "))
	is.True(strings.Contains(out, "  url         http://127.0.0.1:"))
	is.True(strings.Contains(out, "  secret      whsec_"))
	is.True(strings.Contains(out, "not shown again"))
	var tr trigger.CreatedTrigger
	d.okJSON(&tr, "trigger", "create", "acme/flow", "--mapping", `{"name": input.body.who}`, "--headers", "X-Tag", "--json")
	is.True(strings.HasPrefix(tr.Secret, "whsec_"))
	is.Equal(tr.Headers, []string{"x-tag"})

	out = d.ok("trigger", "list")
	is.True(strings.Contains(out, tr.ID+"  enabled"))
	out = d.ok("trigger", "get", tr.ID)
	is.True(strings.Contains(out, "mapping"))
	is.True(!strings.Contains(out, "whsec_"))

	// send signs and posts; the mapping sees the body (headers absent).
	t.Setenv(secretEnv, tr.Secret)
	var del trigger.Delivery
	d.okJSON(&del, "trigger", "send", tr.ID, "--body", `{ "who": "Ada" }`, "--id", "order-1", "--json")
	is.Equal(del.WebhookID, "order-1")
	is.Equal(del.Replayed, false)
	var run engine.Run
	waitFor(t, "the run", func() bool {
		d.okJSON(&run, "run", "get", del.RunID, "--json")
		return run.Status == "failed" || run.Status == "succeeded"
	})
	out = d.ok("trigger", "send", tr.ID, "--body", `{"who":"Ada"}`, "--id", "order-1")
	is.Equal(out, "Delivery order-1 was accepted before: run "+del.RunID+" (no new run)\n")

	// A wrong secret is refused by the daemon.
	code, _, errw := d.run("trigger", "send", tr.ID, "--body", `{"who":"x"}`, "--secret", "whsec_"+strings.Repeat("A", 43)+"=")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-UNAUTHENTICATED"))

	// replace: a new trigger; the old one is disabled.
	var next trigger.CreatedTrigger
	d.okJSON(&next, "trigger", "replace", tr.ID, "acme/flow", "--name", "v2", "--json")
	is.Equal(*next.Replaces, tr.ID)
	var old trigger.Trigger
	d.okJSON(&old, "trigger", "get", tr.ID, "--json")
	is.Equal(old.Status, "disabled")
	code, _, errw = d.run("trigger", "send", tr.ID, "--body", `{"who":"x"}`)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-NOT-FOUND"))
	out = d.ok("trigger", "send", next.ID, "--body", `{"name":"Bo"}`, "--secret", next.Secret)
	is.True(strings.HasPrefix(out, "Delivery msg_"))
	is.Equal(d.ok("trigger", "disable", next.ID), "Trigger "+next.ID+" is disabled\n")
	code, _, errw = d.run("trigger", "disable", next.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-ETAG") || strings.Contains(errw, "PF-CONFLICT"))

	// Usage errors.
	t.Setenv(secretEnv, "")
	code, _, _ = d.run("trigger", "send", next.ID, "--body", `{}`)
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("trigger", "send", next.ID, "--body", `{`, "--secret", next.Secret)
	is.Equal(code, ExitUsage)
	code, _, _ = d.run("trigger", "create")
	is.Equal(code, ExitUsage)
}
