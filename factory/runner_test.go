//go:build unix

package factory

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func ptrInt(n int) *int { return &n }

// A build run on a Go project: the checks are detected (go vet, go test),
// the fake agent adds a function and its test, the checkpoint is a real
// commit, and the diff and changes.zip hold the change.
func TestBuildRunPassesDetectedGoChecks(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{
		"go.mod":      "module example.com/calc\n\ngo 1.22\n",
		"add.go":      "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n",
		"add_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
	})
	head := git(t, repo, "rev-parse", "HEAD")
	r := h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "add Double #go-feature", Profile: "fake"})
	is.Equal(r.State, StateQueued)
	is.Equal(r.SourceRevision, head)
	is.Equal(r.SourceTree, git(t, repo, "rev-parse", "HEAD^{tree}"))

	r = h.wait(r.ID)
	is.Equal(r.State, StateSucceeded)
	is.True(r.Error == nil)
	is.Equal(len(r.Verification), 1)
	is.True(r.FinalVerification != nil)
	var names []string
	for _, c := range r.FinalVerification.Commands {
		names = append(names, c.Name)
		is.Equal(c.Source, "go")
		is.Equal(c.ExitCode, 0)
	}
	is.Equal(names, []string{"go vet ./...", "go test ./..."})
	is.Equal(r.ChangedFiles, []string{"feature.go", "feature.txt", "feature_test.go"})
	// The checkpoint is a real commit of the workspace, child of the source.
	is.Equal(git(t, r.Workspace, "rev-parse", "HEAD"), r.CheckpointRevision)
	is.Equal(git(t, r.Workspace, "rev-parse", r.CheckpointRevision+"^"), head)
	is.True(r.Diff != nil && strings.Contains(*r.Diff, "+func Double(n int) int"))
	is.Equal(int64(len(*r.Diff)), r.DiffBytes)
	// The user's repository is untouched.
	is.Equal(git(t, repo, "rev-parse", "HEAD"), head)
	is.Equal(git(t, repo, "status", "--porcelain"), "")
	// Journal: every intent has its receipt and the chain is valid.
	is.True(r.Journal.Valid)
	is.Equal(r.Journal.OpenIntents, []int{})
	j, err := h.svc.Journal(context.Background(), r.ID)
	is.NoErr(err)
	var actions []string
	for _, e := range j.Entries {
		actions = append(actions, e.Kind+":"+e.Action)
	}
	is.Equal(actions, []string{"intent:clone", "receipt:clone", "intent:agent", "receipt:agent", "intent:commit", "receipt:commit",
		"intent:verify", "receipt:verify", "intent:export", "receipt:export"})
	// changes.zip holds the changed files and a manifest.
	f, err := h.svc.Artifact(context.Background(), r.ID, "changes.zip")
	is.NoErr(err)
	st, _ := f.Stat()
	zr, err := zip.NewReader(f, st.Size())
	is.NoErr(err)
	var zipped []string
	for _, zf := range zr.File {
		zipped = append(zipped, zf.Name)
	}
	f.Close()
	is.Equal(zipped, []string{"manifest.json", "files/feature.go", "files/feature.txt", "files/feature_test.go"})
	// Events: queued, running, task changes, succeeded, in order.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(strings.Join(h.events.types(), "\n"), `"state":"succeeded"`) {
		time.Sleep(20 * time.Millisecond)
	}
	evs := h.events.types()
	is.True(len(evs) >= 7)
	is.True(strings.HasPrefix(evs[0], EventRunState+":") && strings.Contains(evs[0], `"state":"queued"`))
	is.True(strings.Contains(evs[len(evs)-1], `"state":"succeeded"`))
}

func TestRepairThenPass(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n", ".factory.yaml": checksYAML("test -f feature.txt", "test -f fixed.txt")})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "do it #repair-fixes", Profile: "fake"}).ID)
	is.Equal(r.State, StateSucceeded)
	is.Equal(len(r.Verification), 2)
	is.True(!r.Verification[0].Passed)
	is.Equal(r.Verification[0].Commands[0].ExitCode, 0)
	is.True(r.Verification[0].Commands[1].ExitCode != 0)
	is.True(r.Verification[1].Passed)
	is.Equal(r.FinalVerification.Attempt, 2)
	is.Equal(r.PlanRevision, 2)
	is.Equal(len(r.Tasks), 4)
	is.Equal(r.Tasks[2].Role, RoleRepairer)
	is.Equal(r.Tasks[2].Revision, 2)
	is.Equal(r.ChangedFiles, []string{"feature.txt", "fixed.txt"})
	// Two agent turns, each committed: the checkpoint has two commits.
	is.Equal(len(r.Turns), 2)
	is.Equal(git(t, r.Workspace, "rev-list", "--count", r.SourceRevision+".."+r.CheckpointRevision), "2")
}

func TestRepairsExhaustedFails(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "factory:\n  repair-attempts: 1\n")
	repo := gitRepo(t, map[string]string{"README": "x\n", ".factory.yaml": checksYAML("test -f fixed.txt")})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "never fixes", Profile: "fake"}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeVerificationFailed)
	is.Equal(len(r.Verification), 2) // the initial attempt and one repair
	is.True(r.FinalVerification == nil)
	is.Equal(r.CheckpointRevision, "")
	// A request may ask for no repairs at all.
	r = h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake", RepairAttempts: ptrInt(0)}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(len(r.Verification), 1)
	is.Equal(len(r.Turns), 1)
}

func TestTestModeRunsNoAgent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"Makefile": "test:\n\ttest -f README\n", "README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeTest}).ID)
	is.Equal(r.State, StateSucceeded)
	is.Equal(len(r.Turns), 0)
	is.Equal(len(r.Tasks), 1)
	is.Equal(r.FinalVerification.Commands[0].Command, []string{"make", "test"})
	is.Equal(r.CheckpointRevision, "")

	// A failing test run does not repair: there is no model.
	repo2 := gitRepo(t, map[string]string{"Makefile": "check:\n\tfalse\n"})
	r = h.wait(h.create(CreateRequest{Repo: repo2, Mode: ModeTest, RepairAttempts: ptrInt(3)}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeVerificationFailed)
	is.Equal(len(r.Verification), 1)

	_, err := h.svc.Create(context.Background(), CreateRequest{Repo: repo, Mode: ModeTest, Instruction: "x"})
	is.Equal(ErrorCode(err), EInvalid)
}

func TestNoChecksFails(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "nothing to run\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake"}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeNoVerification)
	is.Equal(len(r.Turns), 0) // no model time is spent on a run that cannot be verified
	is.Equal(r.CheckpointRevision, "")
}

func TestDiffOverLimitRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#big", Profile: "fake", Verify: []string{"test -f big.txt"}}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeDiffTooLarge)
	is.True(strings.Contains(r.Error.Message, "1 MB"))
	is.True(r.Diff == nil)
	is.True(r.CheckpointRevision != "") // kept for inspection
	_, err := h.svc.Artifact(context.Background(), r.ID, "changes.patch")
	is.Equal(ErrorCode(err), ETooLarge)
	f, err := h.svc.Artifact(context.Background(), r.ID, "changes.zip")
	is.NoErr(err)
	f.Close()
}

func TestNoChangesFails(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#nochange", Profile: "fake", Verify: []string{"true"}}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeNoChanges)
}

func TestAgentFailureFailsRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#fail-agent", Profile: "fake", Verify: []string{"true"}}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeAgentFailed)
	is.Equal(r.Turns[0].ExitCode, 3)
	is.True(strings.Contains(r.Error.Message, "the agent broke"))
	is.True(r.Journal.Valid)
	is.Equal(r.Journal.OpenIntents, []int{})
}

// Verification commands that write files do not end up in the checkpoint.
func TestVerificationOutputsAreNotCheckpointed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake", Verify: []string{"echo out > build-output.txt"}}).ID)
	is.Equal(r.State, StateSucceeded)
	is.Equal(r.ChangedFiles, []string{"feature.txt"})
	_, err := os.Stat(filepath.Join(r.Workspace, "build-output.txt"))
	is.True(os.IsNotExist(err))
}

// Cancelling during verification kills the command's whole process group.
func TestCancelDuringVerificationLeavesNoProcess(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	pids := filepath.Join(h.fake, "check")
	script := "sleep 600 & echo $! > " + pids + ".child; echo $$ > " + pids + ".sh; wait"
	r := h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{script}})
	waitFile(t, pids+".child")
	waitFile(t, pids+".sh")
	child, sh := readPid(pids+".child"), readPid(pids+".sh")
	is.True(alive(child))
	got, err := h.svc.Cancel(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(got.State, StateCancelled)
	deadline := time.Now().Add(15 * time.Second) // free when it passes; room for a loaded run
	for time.Now().Before(deadline) && (alive(child) || alive(sh)) {
		time.Sleep(20 * time.Millisecond)
	}
	is.True(!alive(child))
	is.True(!alive(sh))
	r = h.wait(r.ID)
	is.Equal(r.State, StateCancelled)
	is.True(r.Journal.Valid)
	is.Equal(r.Journal.OpenIntents, []int{}) // the verify intent got its receipt
	is.Equal(r.Tasks[0].State, TaskCancelled)
	_, err = h.svc.Cancel(context.Background(), r.ID)
	is.Equal(ErrorCode(err), EConflict)
}

// At most one run per repository is active; others queue and a queued run
// can be cancelled before it starts.
func TestQueuePerRepository(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	gate := filepath.Join(h.fake, "gate")
	first := h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{"while [ ! -f " + gate + " ]; do sleep 0.05; done"}})
	second := h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{"true"}})
	third := h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{"true"}})
	time.Sleep(300 * time.Millisecond)
	r, err := h.svc.Get(context.Background(), second.ID)
	is.NoErr(err)
	is.Equal(r.State, StateQueued)
	got, err := h.svc.Cancel(context.Background(), third.ID)
	is.NoErr(err)
	is.Equal(got.State, StateCancelled)
	is.NoErr(os.WriteFile(gate, []byte("1"), 0o600))
	is.Equal(h.wait(first.ID).State, StateSucceeded)
	is.Equal(h.wait(second.ID).State, StateSucceeded)
	is.Equal(h.wait(third.ID).State, StateCancelled)
}

// At most max-active-runs runs are active across repositories.
func TestGlobalConcurrencyLimit(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "factory:\n  max-active-runs: 1\n")
	gate := filepath.Join(h.fake, "gate")
	wait := "while [ ! -f " + gate + " ]; do sleep 0.05; done"
	first := h.create(CreateRequest{Repo: gitRepo(t, map[string]string{"a": "1"}), Mode: ModeTest, Verify: []string{wait}})
	second := h.create(CreateRequest{Repo: gitRepo(t, map[string]string{"b": "1"}), Mode: ModeTest, Verify: []string{"true"}})
	time.Sleep(300 * time.Millisecond)
	r, err := h.svc.Get(context.Background(), second.ID)
	is.NoErr(err)
	is.Equal(r.State, StateQueued)
	is.NoErr(os.WriteFile(gate, []byte("1"), 0o600))
	is.Equal(h.wait(first.ID).State, StateSucceeded)
	is.Equal(h.wait(second.ID).State, StateSucceeded)
}

// A changed retained workspace puts a succeeded run in needs_reconciliation
// at the next start; it is no longer reported as accepted source.
func TestChangedWorkspaceNeedsReconciliation(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake", Verify: []string{"true"}}).ID)
	is.Equal(r.State, StateSucceeded)
	is.NoErr(os.WriteFile(filepath.Join(r.Workspace, "feature.txt"), []byte("edited by hand\n"), 0o644))
	h.restart()
	r, err := h.svc.Get(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(r.State, StateNeedsReconciliation)
	is.Equal(r.Error.Code, ErrCodeWorkspaceChanged)
	is.True(r.FinalVerification == nil) // no longer supports success
	is.Equal(len(r.Verification), 1)    // the evidence is kept
	is.True(r.Verification[0].Passed)
	_, err = h.svc.Reconcile(context.Background(), r.ID, ReconcileRequest{Note: ""})
	is.Equal(ErrorCode(err), EInvalid)
	r, err = h.svc.Reconcile(context.Background(), r.ID, ReconcileRequest{Note: "edited by hand; abandoning"})
	is.NoErr(err)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeReconciled)
	j, err := h.svc.Journal(context.Background(), r.ID)
	is.NoErr(err)
	is.True(j.Valid)
	last := j.Entries[len(j.Entries)-1]
	is.Equal(last.Kind, KindReconciliation)
	is.Equal(last.Ref, 0)
}

func TestRetryCreatesFreshRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n", ".factory.yaml": checksYAML("test -f fixed.txt")})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake", RepairAttempts: ptrInt(0)}).ID)
	is.Equal(r.State, StateFailed)
	// The user fixes the repository; the retry clones the new HEAD.
	is.NoErr(os.WriteFile(filepath.Join(repo, "fixed.txt"), []byte("1"), 0o644))
	git(t, repo, "add", "fixed.txt")
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "fix")
	n, err := h.svc.Retry(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(n.RetryOf, r.ID)
	is.True(n.ID != r.ID)
	is.True(n.SourceRevision != r.SourceRevision)
	is.Equal(n.Policy.RepairAttempts, 0)
	n = h.wait(n.ID)
	is.Equal(n.State, StateSucceeded)
	is.True(n.Workspace != r.Workspace)
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	notRepo := t.TempDir()
	cases := map[string]struct {
		req   CreateRequest
		field string
	}{
		"no mode":          {CreateRequest{Repo: repo}, "mode"},
		"bad mode":         {CreateRequest{Repo: repo, Mode: "deploy"}, "mode"},
		"no repo":          {CreateRequest{Mode: ModeTest}, "repo"},
		"relative repo":    {CreateRequest{Repo: "repo", Mode: ModeTest}, "repo"},
		"not a repo":       {CreateRequest{Repo: notRepo, Mode: ModeTest}, "repo"},
		"missing dir":      {CreateRequest{Repo: filepath.Join(notRepo, "nope"), Mode: ModeTest}, "repo"},
		"no instruction":   {CreateRequest{Repo: repo, Mode: ModeBuild, Profile: "fake"}, "instruction"},
		"unknown profile":  {CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "nope"}, "profile"},
		"command alone":    {CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Provider: "command"}, "provider"},
		"profile mismatch": {CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Provider: "claude", Profile: "fake"}, "provider"},
		"repairs 4":        {CreateRequest{Repo: repo, Mode: ModeTest, RepairAttempts: ptrInt(4)}, "repair_attempts"},
		"repairs -1":       {CreateRequest{Repo: repo, Mode: ModeTest, RepairAttempts: ptrInt(-1)}, "repair_attempts"},
		"21 commands":      {CreateRequest{Repo: repo, Mode: ModeTest, Verify: make([]string, 21)}, "verify"},
		"blank command":    {CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{" "}}, "verify[0]"},
		"timeout 0":        {CreateRequest{Repo: repo, Mode: ModeTest, VerifyTimeout: "0s"}, "verify_timeout"},
		"timeout 25h":      {CreateRequest{Repo: repo, Mode: ModeTest, VerifyTimeout: "25h"}, "verify_timeout"},
		"huge instruction": {CreateRequest{Repo: repo, Mode: ModeBuild, Profile: "fake", Instruction: strings.Repeat("x", maxInstruction+1)}, "instruction"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := h.svc.Create(context.Background(), c.req)
			e, ok := err.(*Error)
			if !ok || e.Code != EInvalid || e.Field != c.field {
				t.Fatalf("got %v (%#v), want an invalid %s", err, err, c.field)
			}
		})
	}
	// The bounds themselves are accepted.
	is := is.New(t)
	twenty := make([]string, 20)
	for i := range twenty {
		twenty[i] = "true"
	}
	r := h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: twenty, VerifyTimeout: "1s", RepairAttempts: ptrInt(3)})
	r = h.wait(r.ID)
	is.Equal(r.State, StateSucceeded)
	is.Equal(len(r.FinalVerification.Commands), 20)
	runs, err := h.svc.List(context.Background(), ListQuery{})
	is.NoErr(err)
	is.Equal(len(runs.Runs), 1) // refused requests created nothing
}
