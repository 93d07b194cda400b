//go:build unix

package factory

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// A worker's question pauses the run (no slot held) until it is answered
// and explicitly resumed; the answer reaches the agent.
func TestWorkerQuestionAnsweredAndResumed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	ctx := context.Background()
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "greet #ask", Profile: "fake", Verify: []string{"test -f feature.txt"}}).ID)
	is.Equal(r.State, StatePaused)
	is.True(r.Error == nil)
	is.Equal(r.Tasks[0].State, TaskPaused)
	is.True(strings.Contains(r.Tasks[0].Error, "which greeting should it use?"))
	m, err := h.svc.Messages(ctx, r.ID)
	is.NoErr(err)
	is.Equal(len(m.Messages), 1)
	is.Equal(m.Messages[0].Kind, MessageQuestion)
	is.Equal(m.Messages[0].Text, "which greeting should it use?")
	is.Equal(m.Messages[0].Task, 1)

	_, err = h.svc.Resume(ctx, r.ID)
	is.Equal(ErrorCode(err), EConflict) // not answered yet
	_, err = h.svc.Answer(ctx, r.ID, AnswerRequest{Text: " "})
	is.Equal(ErrorCode(err), EInvalid)
	_, err = h.svc.Answer(ctx, r.ID, AnswerRequest{Text: "say hi"})
	is.NoErr(err)
	_, err = h.svc.Answer(ctx, r.ID, AnswerRequest{Text: "again"})
	is.Equal(ErrorCode(err), EConflict) // no question waits
	got, err := h.svc.Get(ctx, r.ID)
	is.NoErr(err)
	is.Equal(got.State, StatePaused) // an answer alone does not resume

	_, err = h.svc.Resume(ctx, r.ID)
	is.NoErr(err)
	got = h.wait(r.ID)
	is.Equal(got.State, StateSucceeded)
	is.Equal(len(got.Turns), 2)
	is.Equal(got.ChangedFiles, []string{"feature.txt"})
	m, err = h.svc.Messages(ctx, r.ID)
	is.NoErr(err)
	is.Equal(len(m.Messages), 2)
	is.Equal(m.Messages[1].Kind, MessageAnswer)
	is.True(got.Journal.Valid)
}

func TestPausedRunCanBeCancelled(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, "")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "#ask", Profile: "fake", Verify: []string{"true"}}).ID)
	is.Equal(r.State, StatePaused)
	// A paused run holds no slot: another run of the repository starts.
	other := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeTest, Verify: []string{"true"}}).ID)
	is.Equal(other.State, StateSucceeded)
	got, err := h.svc.Cancel(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(got.State, StateCancelled)
	is.Equal(got.Tasks[0].State, TaskCancelled)
}
