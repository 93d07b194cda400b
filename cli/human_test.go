package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

// reviewWorkflow waits on a human task (a smaller variant of platform/engine_human_test.go's):
// assigned to group:finance unless the input names the assignees, with a
// form and two decisions.
const reviewWorkflow = `kind: workflow
id: acme/review
version: 1
input:
  type: object
  required: [orderId]
  properties:
    orderId: {type: string}
    assignees: {type: array, items: {type: string}}
output:
  type: object
  properties:
    decision: {type: string}
    by: {type: string}
steps:
  - id: review
    human:
      title: ="Review order " + input.orderId
      description: Check the address and the amount.
      assignees: '=has(input.assignees) ? input.assignees : ["group:finance"]'
      form:
        type: object
        properties:
          comment: {type: string, maxLength: 50}
      decisions: [approve, reject]
    deadline: 1h
  - id: done
    succeed:
      result:
        decision: =steps.review.output.decision
        by: =steps.review.output.completedBy
`

// reviewTask starts a review run with args and answers it and its task.
func (d *daemonCLI) reviewTask(args ...string) (engine.Run, engine.HumanTask) {
	d.t.Helper()
	var r engine.Run
	d.okJSON(&r, append([]string{"run", "start", "acme/review", "--json"}, args...)...)
	var tasks []engine.HumanTask
	d.okJSON(&tasks, "human", "list", "--run", r.ID, "--json")
	if r.Status != "waiting" || len(tasks) != 1 || tasks[0].Status != "open" {
		d.t.Fatalf("run %s is %s with tasks %+v", r.ID, r.Status, tasks)
	}
	return r, tasks[0]
}

func TestHumanTasks(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	d.ok(append([]string{"workflow", "publish"}, writeDefs(t, reviewWorkflow)...)...)
	d.ok("workflow", "activate", "acme/review")
	is.Equal(d.ok("human", "list"), "no human tasks\n")
	var me identity.Identity
	d.okJSON(&me, "platform", "identity", "--json")

	// list and show.
	run1, task := d.reviewTask("--set", "orderId=A-1")
	is.Equal(task.Title, "Review order A-1")
	is.Equal(task.Decisions, []string{"approve", "reject"})
	out := d.ok("human", "list")
	is.True(strings.HasPrefix(out, "ID  "))
	is.True(strings.Contains(out, "STATUS  RUN  "))
	is.True(strings.Contains(out, "  NODE    TITLE             DECISIONS       DEADLINE\n"))
	is.True(strings.Contains(out, task.ID+"  open    "+run1.ID+"  review  Review order A-1  approve,reject  "))
	out = d.ok("human", "show", task.ID)
	is.True(strings.HasPrefix(out, "Human task "+task.ID+" open\n"))
	for _, want := range []string{"Check the address", "step review", "group:finance", "approve, reject", `"maxLength":50`, "revision     1"} {
		is.True(strings.Contains(out, want))
	}

	// An open task of others' is claimed before it is completed.
	code, _, errw := d.run("human", "complete", task.ID, "approve")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is assigned to group:finance; claim it before completing it (PF-RUNTIME-STATE, HTTP 409); add --claim"))
	out = d.ok("human", "claim", task.ID)
	is.Equal(out, "Claimed human task "+task.ID+" (Review order A-1): held by "+me.PrincipalID+" (revision 2)\n")
	var tasks []engine.HumanTask
	d.okJSON(&tasks, "human", "list", "--mine", "--json")
	is.Equal(len(tasks), 1)
	is.Equal(tasks[0].Status, "claimed")
	var h engine.HumanTask
	d.okJSON(&h, "human", "release", task.ID, "--json")
	is.Equal(h.Status, "open")
	is.Equal(h.Revision, int64(3))
	code, _, errw = d.run("human", "release", task.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is not claimed (PF-RUNTIME-STATE"))
	code, _, errw = d.run("human", "claim", task.ID, "--revision", "2")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is at revision 3, not 2; read it again (PF-HUMAN-TASK-REVISION"))
	d.ok("human", "claim", task.ID, "--revision", "3")

	// A wrong decision or data is the platform's refusal; then the run
	// continues and succeeds.
	code, out, errw = d.run("human", "complete", task.ID, "maybe")
	is.Equal(code, ExitError)
	is.Equal(out, "")
	is.True(strings.Contains(errw, `decision "maybe" is not one of [approve reject]`))
	is.True(strings.Contains(errw, "PF-VALIDATION"))
	code, _, errw = d.run("human", "complete", task.ID, "approve", "--data", `{"comment":5}`)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-VALIDATION"))
	out = d.ok("human", "complete", task.ID, "approve", "--data", `{"comment":"fine"}`)
	is.Equal(out, "Completed human task "+task.ID+" (Review order A-1) with approve: run "+run1.ID+" is succeeded\n")
	var got engine.Run
	d.okJSON(&got, "run", "get", run1.ID, "--json")
	is.Equal(got.Status, "succeeded")
	is.Equal(compactJSON(got.State.Output), `{"by":"`+me.PrincipalID+`","decision":"approve"}`)
	d.okJSON(&h, "human", "show", task.ID, "--json")
	is.Equal(h.Status, "completed")
	is.Equal(h.CompletedBy, me.PrincipalID)
	is.Equal(compactJSON(h.Data), `{"comment":"fine"}`)
	is.True(strings.Contains(d.ok("human", "list", "--status", "completed"), "completed (approve)"))
	code, _, errw = d.run("human", "claim", task.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is completed (PF-RUNTIME-STATE"))

	// --claim: one command claims and completes; with the same key, again
	// answers the completion.
	run2, task2 := d.reviewTask("--set", "orderId=A-2")
	file := filepath.Join(t.TempDir(), "review.json")
	is.NoErr(os.WriteFile(file, []byte(`{"comment":"wrong address"}`), 0o600))
	args := []string{"human", "complete", task2.ID, "reject", "--claim", "--data", "@" + file, "--idempotency-key", "reject-A-2"}
	out = d.ok(args...)
	is.Equal(out, "Claimed human task "+task2.ID+" (Review order A-2): held by "+me.PrincipalID+" (revision 2)\n"+
		"Completed human task "+task2.ID+" (Review order A-2) with reject: run "+run2.ID+" is succeeded\n")
	d.okJSON(&h, append(args, "--json")...)
	is.Equal(h.Status, "completed")
	is.Equal(h.Decision, "reject")
	is.Equal(h.Revision, int64(3))

	// A task assigned to you is yours to complete unclaimed; reassign.
	run3, task3 := d.reviewTask("--set", "orderId=A-3", "--set", `assignees=["user:`+me.PrincipalID+`"]`)
	d.okJSON(&tasks, "human", "list", "--mine", "--status", "open", "--json")
	is.Equal(len(tasks), 1)
	is.Equal(tasks[0].ID, task3.ID)
	d.okJSON(&tasks, "human", "list", "--assignee", "group:finance", "--json")
	is.Equal(len(tasks), 2)
	is.Equal(tasks[0].ID, task.ID) // oldest first
	ws := me.Workspaces[0]
	st, err := daemon.ReadState(d.dir)
	is.NoErr(err)
	var olga identity.Principal // another operator, signed in with the built-in provider
	d.okJSON(&olga, "platform", "principal", "create", "--issuer", st.ServicesURL+"/idp", "--subject", "olga", "--json")
	d.ok("platform", "grant", "--principal", olga.ID, "--tenant", ws.ID, "--project", ws.Projects[0].ID,
		"--environment", ws.Projects[0].Environments[0].ID, "--role", "operator")
	out = d.ok("human", "reassign", task3.ID, olga.ID)
	is.Equal(out, "Reassigned human task "+task3.ID+" (Review order A-3): held by "+olga.ID+" (revision 2)\n")
	code, _, errw = d.run("human", "complete", task3.ID, "approve", "--claim")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is claimed by "+olga.ID+"; only its holder completes it"))
	is.True(!strings.Contains(errw, "--claim"))
	d.okJSON(&h, "human", "reassign", task3.ID, me.PrincipalID, "--json")
	is.Equal(h.ClaimedBy, me.PrincipalID)
	d.okJSON(&h, "human", "complete", task3.ID, "approve", "--data", "{}", "--json")
	is.Equal(h.Status, "completed")
	code, _, _ = d.run("run", "logs", run3.ID, "--follow")
	is.Equal(code, 0)
	code, _, errw = d.run("human", "show", "0190a0b0-0000-7000-8000-000000000001")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "HTTP 404"))
}

func TestHumanUsageErrors(t *testing.T) {
	checkUsageErrors(t, [][]string{
		{"human", "list", "--status", "done"},
		{"human", "list", "--mine", "--assignee", "group:finance"},
		{"human", "list", "extra"},
		{"human", "show"},
		{"human", "claim"},
		{"human", "claim", "t-1", "--revision", "-1"},
		{"human", "release", "t-1", "t-2"},
		{"human", "reassign", "t-1"},
		{"human", "complete", "t-1"},
		{"human", "complete", "t-1", "approve", "--data", "{bad"},
		{"human", "complete", "t-1", "approve", "--bogus"},
	})
}

// checkUsageErrors runs each command without a daemon: each exits 2 and
// says why on stderr only (checked before the daemon is needed).
func checkUsageErrors(t *testing.T, cases [][]string) {
	dir := t.TempDir()
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			code, out, errw := run(context.Background(), append(args, "--data-dir", dir)...)
			is.Equal(code, ExitUsage)
			is.Equal(out, "")
			is.True(strings.HasPrefix(errw, "bridge: "))
		})
	}
}

func TestHumanDaemonNotRunning(t *testing.T) {
	checkNotRunning(t, [][]string{
		{"human", "list", "--mine"},
		{"human", "show", "t-1", "--json"},
		{"human", "claim", "t-1"},
		{"human", "release", "t-1"},
		{"human", "reassign", "t-1", "p-1"},
		{"human", "complete", "t-1", "approve", "--claim"},
	})
}

// checkNotRunning runs each command where no daemon runs: each exits 3.
func checkNotRunning(t *testing.T, cases [][]string) {
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			code, _, errw := run(context.Background(), append(args, "--data-dir", t.TempDir())...)
			is.Equal(code, ExitNotRunning)
			is.True(strings.Contains(errw, "not running"))
		})
	}
}

func TestHumanCommandsHaveHelp(t *testing.T) {
	cmd := (&app{}).humanCmd()
	for _, c := range append(cmd.Commands(), cmd) {
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%q lacks Short, Long or Example", c.CommandPath())
		}
	}
}
