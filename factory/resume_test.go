//go:build unix

package factory

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

const fixerProfile = "    fixer:\n      provider: command\n      command: sh\n      args: [\"-c\", \"echo handed over >> feature.txt\"]\n"

// A run interrupted by a shutdown resumes in the same workspace after the
// restart, with its unfinished tasks in a new plan revision.
func TestResumeAfterShutdown(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#stall-once", Profile: "fake", Verify: []string{"test -f feature.txt"}})
	waitFile(t, filepath.Join(h.fake, "agent.pid"))
	h.restart()
	got, err := h.svc.Get(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(got.State, StateFailed)
	is.Equal(got.Error.Code, ErrCodeInterrupted)
	is.Equal(got.Journal.OpenIntents, []int{}) // the shutdown wrote the receipt

	res, err := h.svc.Resume(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(res.State, StateQueued)
	is.True(res.Error == nil)
	got = h.wait(r.ID)
	is.Equal(got.State, StateSucceeded)
	is.Equal(got.Workspace, r.Workspace)
	is.Equal(got.PlanRevision, 2)
	is.Equal(len(got.Turns), 2)
	var states []string
	for _, tk := range got.Tasks {
		states = append(states, tk.Title+":"+tk.State)
	}
	is.Equal(states, []string{"implement:skipped", "verify (attempt 1):skipped", "implement:succeeded", "verify (attempt 1):succeeded"})
	is.True(got.Journal.Valid)
	j, err := h.svc.Journal(context.Background(), r.ID)
	is.NoErr(err)
	clones := 0
	for _, e := range j.Entries {
		if e.Action == ActionClone && e.Kind == KindIntent {
			clones++
		}
	}
	is.Equal(clones, 1) // the same workspace, not a new clone

	_, err = h.svc.Resume(context.Background(), r.ID)
	is.Equal(ErrorCode(err), EConflict) // succeeded runs are not resumed
}

// A handoff gives a failed run's unfinished work to another provider
// configuration, keeping source, policy, checks and evidence.
func TestHandoffToAnotherProfile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, fixerProfile)
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#fail-agent", Profile: "fake", Verify: []string{"test -f feature.txt"}}).ID)
	is.Equal(r.Error.Code, ErrCodeAgentFailed)

	_, err := h.svc.Handoff(context.Background(), r.ID, HandoffRequest{})
	is.Equal(ErrorCode(err), EInvalid)
	_, err = h.svc.Handoff(context.Background(), r.ID, HandoffRequest{Profile: "nope"})
	is.Equal(ErrorCode(err), EInvalid)
	got, err := h.svc.Handoff(context.Background(), r.ID, HandoffRequest{Profile: "fixer"})
	is.NoErr(err)
	is.Equal(got.Profile, "fixer")
	got = h.wait(r.ID)
	is.Equal(got.State, StateSucceeded)
	is.Equal(got.SourceTree, r.SourceTree)
	is.Equal(got.Policy, r.Policy)
	is.Equal(len(got.Turns), 2)        // the failed turn is kept as evidence
	is.Equal(got.Turns[0].ExitCode, 3) // by the first agent
	is.Equal(got.ChangedFiles, []string{"feature.txt"})
	plan, err := h.svc.Plan(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(plan.Revision, 2)
	is.Equal(plan.Provider.Profile, "fixer")
}

func TestResumeRefusals(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	// Verification failed: the work was judged; retry instead.
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake", Verify: []string{"false"}, RepairAttempts: ptrInt(0)}).ID)
	_, err := h.svc.Resume(context.Background(), r.ID)
	is.Equal(ErrorCode(err), EConflict)
	// A changed workspace cannot be resumed.
	r = h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#fail-agent", Profile: "fake", Verify: []string{"true"}}).ID)
	is.NoErr(os.WriteFile(filepath.Join(r.Workspace, "stray.txt"), []byte("x"), 0o644))
	_, err = h.svc.Resume(context.Background(), r.ID)
	is.Equal(ErrorCode(err), EConflict)
	got, err := h.svc.Get(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(got.State, StateFailed) // unchanged
	// No checks: nothing was prepared to resume from.
	r = h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "fake"}).ID)
	is.Equal(r.Error.Code, ErrCodeNoVerification)
	_, err = h.svc.Resume(context.Background(), r.ID)
	is.Equal(ErrorCode(err), EConflict)
}
