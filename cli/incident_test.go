package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbridge/bridge/platform/platformtest"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
)

// suspendedRun starts a slow run and waits for its incident.
func (d *daemonCLI) suspendedRun() (engine.Run, engine.Incident) {
	d.t.Helper()
	var r engine.Run
	d.okJSON(&r, "run", "start", "acme/slow-flow", "--json")
	var incs []engine.Incident
	waitFor(d.t, "the incident", func() bool {
		d.okJSON(&incs, "incident", "list", "--run", r.ID, "--json")
		return len(incs) == 1
	})
	return r, incs[0]
}

func TestIncidentListAndResolve(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	d.ok(append([]string{"workflow", "publish"}, writeDefs(t, platformtest.SlowAction, platformtest.SlowWorkflow)...)...)
	d.ok("workflow", "activate", "acme/slow-flow")
	out := d.ok("incident", "list")
	is.Equal(out, "no incidents\n")

	run1, inc1 := d.suspendedRun()
	is.Equal(inc1.Code, "PF-TASK-DEADLINE")
	is.Equal(inc1.Status, "active")
	run2, inc2 := d.suspendedRun()

	out = d.ok("incident", "list", "--status", "active")
	is.True(strings.Contains(out, inc1.ID+"  "+run1.ID+"  call  PF-TASK-DEADLINE  active"))
	is.True(strings.Contains(out, inc2.ID))
	var incs []engine.Incident
	d.okJSON(&incs, "incident", "list", "--status", "resolved", "--json")
	is.Equal(len(incs), 0)

	// Accept a reconciled result: the run continues to its end.
	out = d.ok("incident", "resolve", inc1.ID, "--kind", "accept_reconciled_result", "--reason", "checked",
		"--output", `{"ok":true}`, "--evidence", "ticket-42")
	is.True(strings.HasPrefix(out, "Resolved incident "+inc1.ID+" (accept_reconciled_result): run "+run1.ID))
	code, _, _ := d.run("run", "logs", run1.ID, "--follow")
	is.Equal(code, 0)
	var got engine.Run
	d.okJSON(&got, "run", "get", run1.ID, "--json")
	is.Equal(compactJSON(got.State.Output), `{"ok":true}`)
	// Resolving again says how it was resolved.
	code, _, errw := d.run("incident", "resolve", inc1.ID, "--kind", "terminate", "--reason", "again")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "already resolved (accept_reconciled_result"))

	// Terminate with a given receipt and revision; the same command again
	// answers the committed result.
	args := []string{"incident", "resolve", inc2.ID, "--kind", "terminate", "--reason", "stop",
		"--receipt", "0190a0b0-0000-7000-8000-000000000009", "--revision", "1", "--json"}
	var res engine.Resolved
	d.okJSON(&res, args...)
	is.Equal(res.Run.ID, run2.ID)
	is.Equal(res.Run.Status, "cancelled")
	is.Equal(res.Incident.Status, "resolved")
	var again engine.Resolved
	d.okJSON(&again, args...)
	is.Equal(again.Incident.Resolution.ReceiptID, res.Incident.Resolution.ReceiptID)

	d.okJSON(&incs, "incident", "list", "--status", "resolved", "--json")
	is.Equal(len(incs), 2)
	d.okJSON(&incs, "incident", "list", "--run", run2.ID, "--status", "active", "--json")
	is.Equal(len(incs), 0)
	code, _, errw = d.run("incident", "resolve", "0190a0b0-0000-7000-8000-000000000001", "--kind", "terminate", "--reason", "r")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "no incident"))
	out = d.ok("incident", "list", "--run", run1.ID)
	is.True(strings.Contains(out, "resolved (accept_reconciled_result)"))
	is.True(json.Valid([]byte(d.ok("incident", "list", "--json"))))
}
