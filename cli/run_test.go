package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/platform/platformtest"

	"github.com/matryer/is"
	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/platform/activation"
	"github.com/agentbridge/bridge/platform/engine"
)

// daemonCLI runs commands against an in-process daemon.
type daemonCLI struct {
	t   *testing.T
	dir string
}

// startDaemon serves a fresh data directory for the test.
func startDaemon(t *testing.T) *daemonCLI {
	dir := t.TempDir()
	_, stop := serveInProcess(t, dir)
	t.Cleanup(stop)
	return &daemonCLI{t: t, dir: dir}
}

func (d *daemonCLI) run(args ...string) (int, string, string) {
	return run(context.Background(), append(args, "--data-dir", d.dir)...)
}

// ok runs a command that must succeed and answers its stdout.
func (d *daemonCLI) ok(args ...string) string {
	d.t.Helper()
	code, out, errw := d.run(args...)
	if code != 0 {
		d.t.Fatalf("bridge %s: exit %d: %s", strings.Join(args, " "), code, errw)
	}
	return out
}

// okJSON runs a command that must succeed and decodes its stdout.
func (d *daemonCLI) okJSON(out any, args ...string) {
	d.t.Helper()
	if err := json.Unmarshal([]byte(d.ok(args...)), out); err != nil {
		d.t.Fatalf("bridge %s: %v", strings.Join(args, " "), err)
	}
}

// runUntil runs a command and interrupts it, as Ctrl-C would, once its
// stdout (stderr with onStderr) contains marker; after 30 s without it the
// command is interrupted anyway, and the test's assertions on what it
// printed fail.
func (d *daemonCLI) runUntil(marker string, onStderr bool, args ...string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errw := &syncBuffer{}, &syncBuffer{}
	watched := out
	if onStderr {
		watched = errw
	}
	watched.onWrite = func(text string) {
		if strings.Contains(text, marker) {
			cancel()
		}
	}
	code := runTo(ctx, out, errw, append(args, "--data-dir", d.dir)...)
	return code, out.String(), errw.String()
}

// writeDefs writes sources to files in a temporary directory, in order.
func writeDefs(t *testing.T, sources ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, src := range sources {
		p := filepath.Join(dir, string(rune('a'+i))+".yaml")
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// startJSON starts a run of acme/flow with args and answers it.
func (d *daemonCLI) startJSON(args ...string) engine.Run {
	d.t.Helper()
	var r engine.Run
	d.okJSON(&r, append([]string{"run", "start", "acme/flow", "--json"}, args...)...)
	return r
}

func TestWorkflowPublishActivateAndRun(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	files := writeDefs(t, platformtest.GreetAction, platformtest.NothingAction, platformtest.FlowWorkflow, platformtest.ApprovalWorkflow)

	// Publish in dependency order; again is safe.
	out := d.ok(append([]string{"workflow", "publish"}, files...)...)
	is.True(strings.Contains(out, "published acme/greet@1 (id "))
	is.True(strings.Contains(out, "published acme/flow@1 (id "))
	var pubs []published
	d.okJSON(&pubs, append([]string{"workflow", "publish", "--json"}, files...)...)
	is.Equal(len(pubs), 4)
	is.Equal(pubs[2].DefinitionID, "acme/flow")
	is.True(pubs[2].AlreadyPublished)
	// A changed source of a published version is refused.
	changed := writeDefs(t, strings.Replace(platformtest.GreetAction, "version: 1\n", "version: 1\ntitle: Greet\n", 1))
	code, _, errw := d.run("workflow", "publish", changed[0])
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "acme/greet@1 is already published"))

	// Activate; again changes nothing; other defaults need --replace.
	out = d.ok("workflow", "activate", "acme/flow")
	is.True(strings.HasPrefix(out, "activated acme/flow@1 (activation "))
	out = d.ok("workflow", "activate", "acme/flow@1")
	is.True(strings.HasPrefix(out, "already active: acme/flow@1"))
	code, _, errw = d.run("workflow", "activate", "acme/flow", "--input-defaults", `{"name":"Grace"}`)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "pass --replace"))
	var act activation.Activation
	d.okJSON(&act, "workflow", "activate", "acme/flow", "--input-defaults", `{"name":"Grace"}`, "--replace", "--json")
	is.Equal(compactJSON(act.InputDefaults), `{"name":"Grace"}`)
	d.ok("workflow", "activate", "acme/approval")
	var acts []activation.Activation
	d.okJSON(&acts, "workflow", "activations", "--workflow", "acme/flow", "--json")
	is.Equal(len(acts), 2)
	out = d.ok("workflow", "activations", "--status", "active")
	is.True(strings.Contains(out, act.ID+"  acme/flow@1"))
	is.True(!strings.Contains(out, "retired"))
	code, _, errw = d.run("workflow", "activate", "acme/unknown")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is not published"))

	// start --wait: success exits 0, failure 1; the defaults fill the name.
	code, out, errw = d.run("run", "start", "acme/flow", "--wait")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "succeeded"))
	is.True(strings.Contains(out, `{"count":1,"greeting":"hello Grace"}`))
	is.True(strings.Contains(errw, "Started run "))
	code, out, errw = d.run("run", "start", "acme/flow", "--set", "mode=fail", "--wait", "--json")
	is.Equal(code, ExitError)
	var failed engine.Run
	is.NoErr(json.Unmarshal([]byte(out), &failed))
	is.Equal(failed.Status, "failed")
	is.True(strings.Contains(errw, "ASKED_TO_FAIL"))

	// get and list.
	ok := d.startJSON("--input", `{"name":"Ada"}`, "--set", "apiKey=k-1", "--business-key", "B-1")
	var got engine.Run
	d.okJSON(&got, "run", "get", ok.ID, "--json")
	is.Equal(got.ID, ok.ID)
	is.Equal(compactJSON(got.State.Output), `{"count":1,"greeting":"hello Ada"}`)
	out = d.ok("run", "get", ok.ID)
	is.True(strings.Contains(out, "acme/flow@1 (activation "+act.ID+")"))
	is.True(strings.Contains(out, `"apiKey":"[redacted]"`))
	var runs []engine.RunSummary
	d.okJSON(&runs, "run", "list", "--json")
	is.Equal(len(runs), 3)
	is.Equal(runs[0].ID, ok.ID) // newest first
	d.okJSON(&runs, "run", "list", "--status", "failed", "--workflow", "acme/flow", "--json")
	is.Equal(len(runs), 1)
	is.Equal(runs[0].ID, failed.ID)
	out = d.ok("run", "list", "--limit", "1")
	is.Equal(strings.Count(out, "\n"), 2) // header and one run
	is.True(strings.Contains(out, "B-1"))

	// A secret input cannot be retried without --input; a plain one can.
	code, _, errw = d.run("run", "retry", ok.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "secret input"))
	var retried engine.Run
	d.okJSON(&retried, "run", "retry", failed.ID, "--set", "mode=none", "--json")
	is.Equal(*retried.ParentRunID, failed.ID)
	is.Equal(retried.Status, "succeeded")

	// Steps and logs of an ended run.
	var steps []engine.Step
	d.okJSON(&steps, "run", "steps", ok.ID, "--json")
	is.Equal(steps[0].NodeID, "greet")
	out = d.ok("run", "steps", ok.ID)
	is.True(strings.Contains(out, "greet"))
	out = d.ok("run", "logs", ok.ID)
	is.True(strings.Contains(out, " INFO  greet "))
	is.True(strings.HasSuffix(out, " INFO  - run succeeded\n"))
	out = d.ok("run", "logs", failed.ID, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var e engine.LogEntry
		is.NoErr(json.Unmarshal([]byte(l), &e))
	}

	// logs --follow ends with the run: 0 when it succeeded, 1 otherwise.
	waiting := d.startJSON("--set", "mode=wait", "--set", "pause=300ms")
	is.Equal(waiting.Status, "waiting")
	code, out, _ = d.run("run", "logs", waiting.ID, "--follow")
	is.Equal(code, 0)
	is.True(strings.Contains(out, " INFO  pause "))
	is.True(strings.HasSuffix(out, " INFO  - run succeeded\n"))
	code, out, errw = d.run("run", "logs", failed.ID, "-f")
	is.Equal(code, ExitError)
	is.True(strings.Contains(out, "broken"))
	is.True(strings.Contains(errw, "run "+failed.ID+" failed"))

	// Pause, resume and cancel a waiting run.
	long := d.startJSON("--set", "mode=wait", "--set", "pause=1h")
	// Ctrl-C stops following (exit 0) and waiting (exit 1); the run goes on.
	// The interrupt comes once the command has shown it follows or waits
	// (not after a fixed time, which a slow machine may spend connecting).
	code, out, _ = d.runUntil(" INFO  pause step started", false, "run", "logs", long.ID, "--follow")
	is.Equal(code, 0)
	is.True(strings.Contains(out, " INFO  pause step started"))
	code, _, errw = d.runUntil(" is waiting\n", true, "run", "start", "acme/flow", "--set", "mode=wait", "--set", "pause=1h", "--wait")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "stopped waiting: run "))
	is.True(strings.Contains(errw, "is still waiting"))
	out = d.ok("run", "pause", long.ID, "--reason", "checking")
	is.True(strings.Contains(out, "waiting (paused)"))
	var resumed engine.Run
	d.okJSON(&resumed, "run", "resume", long.ID, "--json")
	is.Equal(resumed.Paused, false)
	out = d.ok("run", "cancel", long.ID, "--reason", "not needed")
	is.True(strings.Contains(out, "Run "+long.ID+" cancelled"))
	code, _, errw = d.run("run", "logs", long.ID, "--follow")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "cancelled"))

	// Archive, restore and purge the cancelled run; a waiting one is refused.
	waitingRun := d.startJSON("--set", "mode=wait", "--set", "pause=1h")
	code, _, errw = d.run("run", "archive", waitingRun.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-RUNTIME-STATE"))
	out = d.ok("run", "archive", long.ID, "--reason", "done with it")
	is.True(strings.Contains(out, "Run "+long.ID+" cancelled archived: "))
	out = d.ok("run", "get", long.ID)
	is.True(strings.Contains(out, "cancelled (archived)"))
	is.True(!strings.Contains(d.ok("run", "list", "--limit", "1000"), long.ID))
	is.True(strings.Contains(d.ok("run", "list", "--limit", "1000", "--include-archived"), long.ID+"  cancelled (archived)"))
	code, _, errw = d.run("run", "logs", long.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-RUNTIME-STATE"))
	var restored client.RunArchive
	d.okJSON(&restored, "run", "restore", long.ID, "--json")
	is.Equal(restored.Archived, false)
	is.True(restored.Events > 0)
	is.True(strings.Contains(d.ok("run", "logs", long.ID), " INFO  pause step started"))
	code, _, errw = d.run("run", "purge", long.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-RUNTIME-STATE")) // only an archived run
	d.ok("run", "archive", long.ID)
	var purged client.RunPurged
	d.okJSON(&purged, "run", "purge", long.ID, "--json")
	is.True(purged.Purged)
	code, _, errw = d.run("run", "get", long.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-NOT-FOUND"))
	d.ok("run", "cancel", waitingRun.ID, "--reason", "not needed")

	// A signal completes the approval run.
	var approval engine.Run
	d.okJSON(&approval, "run", "start", "acme/approval", "--json")
	is.Equal(approval.Status, "waiting")
	code, _, errw = d.run("run", "signal", approval.ID, "order.approved", "--payload", `{"approver":1}`)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-VALIDATION"))
	var accepted engine.SignalAccepted
	d.okJSON(&accepted, "run", "signal", approval.ID, "order.approved", "--payload", `{"approver":"ada"}`, "--json")
	is.Equal(accepted.RunID, approval.ID)
	is.Equal(accepted.Status, "succeeded")
	out = d.ok("run", "start", "acme/approval", "--idempotency-key", "approval-2")
	second := strings.Fields(out)[1]
	out = d.ok("run", "signal", second, "order.approved", "--payload", `{"approver":"bob"}`)
	is.True(strings.HasPrefix(out, "Signal order.approved accepted by run "+second))
	out = d.ok("run", "start", "acme/approval", "--idempotency-key", "approval-2")
	is.Equal(strings.Fields(out)[1], second) // the same key answers the same run

	// The API's problems exit 1.
	code, _, errw = d.run("run", "start", "acme/nope")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "no active activation of workflow acme/nope"))
	code, _, errw = d.run("run", "start", "acme/flow", "--set", "name=3")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-VALIDATION"))
	code, _, errw = d.run("run", "get", "0190a0b0-0000-7000-8000-000000000001")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "HTTP 404"))
	code, _, _ = d.run("run", "list", "--environment", "0190a0b0-0000-7000-8000-000000000001")
	is.Equal(code, ExitError)
}

func TestRunUsageErrors(t *testing.T) {
	// Checked before the daemon is needed: no daemon runs here.
	checkUsageErrors(t, [][]string{
		{"run", "start"},
		{"run", "start", "acme/flow", "--activation", "x"},
		{"run", "start", "acme/flow", "--input", "{bad"},
		{"run", "start", "acme/flow", "--input", "[1]"},
		{"run", "start", "acme/flow", "--set", "novalue"},
		{"run", "start", "acme/flow", "--bogus"},
		{"run", "get"},
		{"run", "list", "--limit", "0"},
		{"run", "list", "--status", "done"},
		{"run", "cancel", "r-1"},
		{"run", "signal", "r-1"},
		{"run", "logs", "r-1", "--level", "debug"},
		{"run", "archive"},
		{"run", "restore", "r-1", "r-2"},
		{"run", "purge", "r-1", "--bogus"},
		{"incident", "list", "--status", "open"},
		{"incident", "resolve", "i-1", "--kind", "retry", "--reason", "r"},
		{"incident", "resolve", "i-1", "--kind", "terminate"},
		{"incident", "resolve", "i-1", "--kind", "accept_reconciled_result", "--reason", "r", "--output", "{"},
		{"workflow", "publish"},
		{"workflow", "activate", "acme/flow@x"},
		{"workflow", "activate", "acme/flow", "--input-defaults", "3"},
		{"workflow", "activations", "--status", "gone"},
		{"workflow", "catalog", "extra"},
	})
}

func TestRunDaemonNotRunning(t *testing.T) {
	files := writeDefs(t, platformtest.GreetAction)
	checkNotRunning(t, [][]string{
		{"run", "start", "acme/flow", "--wait"},
		{"run", "get", "r-1", "--json"},
		{"run", "list"},
		{"run", "logs", "r-1", "--follow"},
		{"incident", "list"},
		{"incident", "resolve", "i-1", "--kind", "terminate", "--reason", "r"},
		{"workflow", "publish", files[0]},
		{"workflow", "activate", "acme/flow"},
		{"workflow", "activations"},
		{"workflow", "catalog"},
	})
}

func TestPublishRefusesUnknownFiles(t *testing.T) {
	is := is.New(t)
	files := writeDefs(t, "kind: nonsense\nid: x\n")
	// The files are checked before the daemon is contacted.
	code, _, errw := run(context.Background(), "workflow", "publish", files[0], "--data-dir", t.TempDir())
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "is not a workflow, action, connector or decision table"))
	code, _, errw = run(context.Background(), "workflow", "publish", filepath.Join(t.TempDir(), "missing.yaml"), "--data-dir", t.TempDir())
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "read definition"))
}

func TestInputFlags(t *testing.T) {
	is := is.New(t)
	f := inputFlags{input: `{"a":{"b":1},"keep":true}`, sets: []string{"a.c=2", "name=Ada", `quoted="3"`, "list=[1,2]", "x.y.z=null"}}
	got, err := f.build(nil)
	is.NoErr(err)
	is.Equal(string(got), `{"a":{"b":1,"c":2},"keep":true,"list":[1,2],"name":"Ada","quoted":"3","x":{"y":{"z":null}}}`)
	got, err = (&inputFlags{sets: []string{"n=1"}}).build(json.RawMessage(`{"m":2}`))
	is.NoErr(err)
	is.Equal(string(got), `{"m":2,"n":1}`)
	_, err = (&inputFlags{sets: []string{"keep.x=1"}}).build(json.RawMessage(`{"keep":true}`))
	is.True(err != nil)
	p := filepath.Join(t.TempDir(), "in.json")
	is.NoErr(os.WriteFile(p, []byte(" {\"from\":\"file\"}\n"), 0o600))
	got, err = (&inputFlags{input: "@" + p}).build(nil)
	is.NoErr(err)
	is.Equal(string(got), `{"from":"file"}`)
}

func TestPickWorkspace(t *testing.T) {
	is := is.New(t)
	env := func(id, name string) client.WorkspaceEnvironment {
		return client.WorkspaceEnvironment{ID: id, Name: name}
	}
	local := client.Workspace{ID: "t1", Name: client.LocalTenantName, Projects: []client.WorkspaceProject{
		{ID: "p1", Name: client.LocalProjectName, Environments: []client.WorkspaceEnvironment{env("e1", client.LocalEnvironmentName), env("e2", "prod")}},
		{ID: "p2", Name: "payments", Environments: []client.WorkspaceEnvironment{env("e3", "prod")}},
	}}
	acme := client.Workspace{ID: "t2", Name: "acme", Projects: []client.WorkspaceProject{
		{ID: "p3", Name: "web", Environments: []client.WorkspaceEnvironment{env("e4", "dev"), env("e5", "prod")}},
	}}
	ws := []client.Workspace{local, acme}
	got, err := pickWorkspace(ws, scopeIDs{}, true)
	is.NoErr(err)
	is.Equal(got, scopeIDs{tenant: "t1", project: "p1", environment: "e1"}) // the local workspace
	got, err = pickWorkspace(ws, scopeIDs{project: "p2"}, true)
	is.NoErr(err)
	is.Equal(got, scopeIDs{tenant: "t1", project: "p2", environment: "e3"}) // the only one
	got, err = pickWorkspace(ws, scopeIDs{tenant: "t2"}, false)
	is.NoErr(err)
	is.Equal(got, scopeIDs{tenant: "t2", project: "p3"})
	_, err = pickWorkspace(ws, scopeIDs{tenant: "t2"}, true)
	is.True(err != nil && strings.Contains(err.Error(), "you can use 2 environments; pass --environment"))
	_, err = pickWorkspace(nil, scopeIDs{}, true)
	is.True(err != nil && strings.Contains(err.Error(), "no tenant to default to"))
	got, err = pickWorkspace(nil, scopeIDs{tenant: "x", project: "y", environment: "z"}, true)
	is.NoErr(err)
	is.Equal(got, scopeIDs{tenant: "x", project: "y", environment: "z"})
}

// TestWorkflowCommandsHaveHelp checks the run, incident and workflow trees.
func TestWorkflowCommandsHaveHelp(t *testing.T) {
	a := &app{}
	todo := []*cobra.Command{a.runCmd(), a.incidentCmd(), a.workflowCmd()}
	for len(todo) > 0 {
		c := todo[0]
		todo = append(todo[1:], c.Commands()...)
		if c.Short == "" || c.Example == "" || c.Long == "" {
			t.Errorf("%q lacks Short, Long or Example", c.CommandPath())
		}
	}
}

// waitFor polls cond for 10 s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestWorkflowCatalogFeedsCompile: 'workflow catalog' prints the project's
// lock, against which the example workflow compiles once its dependencies
// are published (README: Workflow definitions).
func TestWorkflowCatalogFeedsCompile(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	deps, err := filepath.Glob("../examples/fulfil-order/[1-5]-*.yaml")
	is.NoErr(err)
	is.Equal(len(deps), 5)
	d.ok(append([]string{"workflow", "publish"}, deps...)...)
	out := d.ok("workflow", "catalog")
	lock := filepath.Join(t.TempDir(), "catalog.lock.json")
	is.NoErr(os.WriteFile(lock, []byte(out), 0o600))
	code, res, _ := d.run("workflow", "compile", "../examples/fulfil-order/6-fulfil-order.yaml", "--catalog", lock)
	is.Equal(code, 0)
	is.True(strings.Contains(res, "ok: "))
	is.True(strings.Contains(out, `"id":"acme/kyc-check"`))
}
