//go:build unix

package factory

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// crashEnv tells the test binary, re-executed as a child, to act as a
// daemon running a factory run on the data directory it names.
const crashEnv = "FACTORY_CRASH_CHILD_DIR"

// TestCrashChild is the child of TestSIGKILLNeedsReconciliation: it starts a
// build run whose agent hangs, then waits to be killed.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process of TestSIGKILLNeedsReconciliation")
	}
	h := newHarnessAt(t, dir, "")
	h.create(CreateRequest{Repo: os.Getenv(crashEnv + "_REPO"), Mode: ModeBuild, Instruction: "#hang", Profile: "fake", Verify: []string{"true"}})
	time.Sleep(10 * time.Minute) // until SIGKILL
}

// A daemon killed with SIGKILL while its agent works leaves an intent
// without a receipt: after restart the journal is valid, the run is in
// needs_reconciliation, nothing is reported as accepted source, and the
// operator resolves it explicitly.
func TestSIGKILLNeedsReconciliation(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	child := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	child.Env = append(os.Environ(), crashEnv+"="+dir, crashEnv+"_REPO="+repo)
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	is.NoErr(child.Start())
	agentPid := filepath.Join(dir, "fake", "agent.pid")
	defer func() {
		_ = syscall.Kill(-child.Process.Pid, syscall.SIGKILL)
		if pid := readPid(agentPid); pid > 0 {
			killGroup(pid) // the agent runs in a process group of its own
		}
	}()
	waitFile(t, agentPid)
	is.NoErr(syscall.Kill(-child.Process.Pid, syscall.SIGKILL))
	_ = child.Wait()
	killGroup(readPid(agentPid))

	h := newHarnessAt(t, dir, "")
	page, err := h.svc.List(context.Background(), ListQuery{})
	is.NoErr(err)
	is.Equal(len(page.Runs), 1)
	r, err := h.svc.Get(context.Background(), page.Runs[0].ID)
	is.NoErr(err)
	is.Equal(r.State, StateNeedsReconciliation)
	is.Equal(r.Error.Code, ErrCodeUnacknowledged)
	is.True(r.Journal.Valid)
	j, err := h.svc.Journal(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(len(j.OpenIntents), 1)
	open := j.Entries[j.OpenIntents[0]-1]
	is.Equal(open.Action, ActionAgent)
	// Nothing is accepted source: no checkpoint, no artifacts, no final
	// verification.
	is.Equal(r.CheckpointRevision, "")
	is.True(r.FinalVerification == nil)
	_, err = h.svc.Artifact(context.Background(), r.ID, "changes.zip")
	is.Equal(ErrorCode(err), ENotFound)
	// It stays there across restarts until an operator reconciles it.
	h.restart()
	r, err = h.svc.Get(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(r.State, StateNeedsReconciliation)
	_, err = h.svc.Cancel(context.Background(), r.ID)
	is.Equal(ErrorCode(err), EConflict)
	r, err = h.svc.Reconcile(context.Background(), r.ID, ReconcileRequest{Note: "agent was killed mid-turn; workspace discarded"})
	is.NoErr(err)
	is.Equal(r.State, StateFailed)
	j, err = h.svc.Journal(context.Background(), r.ID)
	is.NoErr(err)
	is.True(j.Valid)
	is.Equal(j.OpenIntents, []int{})
	last := j.Entries[len(j.Entries)-1]
	is.Equal(last.Kind, KindReconciliation)
	is.Equal(last.Ref, open.Seq)
	_, err = h.svc.Reconcile(context.Background(), r.ID, ReconcileRequest{Note: "again"})
	is.Equal(ErrorCode(err), EConflict)
}

// The workspace shares no file with the user's repository: its objects are
// copies (a hard link would let a write in the workspace reach the source).
func TestWorkspaceSharesNoFileWithSource(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{"true"}}).ID)
	is.Equal(r.State, StateSucceeded)
	links := 0
	err := filepath.WalkDir(filepath.Join(repo, ".git", "objects"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return err
		}
		if st.Nlink > 1 {
			links++
		}
		return nil
	})
	is.NoErr(err)
	is.Equal(links, 0)
	is.Equal(git(t, r.Workspace, "remote"), "") // no way back to the source
}
