//go:build unix

package factory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// rateLimitHarness adds claude profiles played by testdata/claude-ratelimit.sh:
// rl2 is refused twice then works, rl9 is always refused, quota hits a usage
// quota.
func rateLimitHarness(t *testing.T, backoff string) *harness {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/claude-ratelimit.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "claude-fake")
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for name, env := range map[string]string{"rl2": "FAKE_LIMITED=2", "rl9": "FAKE_LIMITED=9", "quota": "FAKE_LIMITED=9\", \"FAKE_QUOTA=1"} {
		fd := filepath.Join(dir, name)
		if err := os.MkdirAll(fd, 0o700); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "    %s:\n      provider: claude\n      command: %s\n      env: [\"FAKE_DIR=%s\", \"%s\"]\n", name, script, fd, env)
	}
	return newHarness(t, b.String()+"factory:\n  rate-limit-backoff: "+backoff+"\n")
}

func TestRateLimitRetriedThenPasses(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := rateLimitHarness(t, "20ms")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "rl2", Verify: []string{"test -f feature.txt"}}).ID)
	is.Equal(r.State, StateSucceeded)
	is.Equal(len(r.Turns), 3)
	for i, turn := range r.Turns {
		is.Equal(turn.Task, 1)
		is.Equal(turn.Turn, i+1)
		is.Equal(turn.IsError, i < 2)
	}
	is.Equal(r.Turns[0].Failure, "rate_limit")
	is.Equal(r.Policy.RateLimitRetries, RateLimitRetries)
	is.True(r.Journal.Valid)
	// The task was paused twice with its retry time, and announced so.
	paused := 0
	for _, ev := range h.events.types() {
		if strings.Contains(ev, `"state":"paused"`) {
			paused++
		}
	}
	is.Equal(paused, 2)
	is.Equal(r.ChangedFiles, []string{"feature.txt"})
}

func TestRateLimitRetriesExhausted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := rateLimitHarness(t, "20ms")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "rl9", Verify: []string{"true"}}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeProviderRateLimit)
	is.Equal(len(r.Turns), 1+RateLimitRetries)
	is.Equal(r.Tasks[0].State, TaskFailed)
	is.Equal(r.Journal.OpenIntents, []int{})
}

func TestQuotaStopsForOperator(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := rateLimitHarness(t, "20ms")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.wait(h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "quota", Verify: []string{"true"}}).ID)
	is.Equal(r.State, StateFailed)
	is.Equal(r.Error.Code, ErrCodeProviderQuota)
	is.Equal(len(r.Turns), 1) // no automatic retry
}

// A task paused by a rate limit shows its retry time and can be cancelled.
func TestPausedRunCancelled(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := rateLimitHarness(t, "1h")
	repo := gitRepo(t, map[string]string{"README": "x\n"})
	r := h.create(CreateRequest{Repo: repo, Mode: ModeBuild, Instruction: "x", Profile: "rl9", Verify: []string{"true"}})
	seen := false
	deadline := time.Now().Add(30 * time.Second)
	for !seen && time.Now().Before(deadline) {
		got, err := h.svc.Get(context.Background(), r.ID)
		is.NoErr(err)
		if got.Progress != nil && got.Progress.Paused != "" {
			is.True(strings.Contains(got.Progress.Paused, "automatic retry 1 of 3 at "))
			is.Equal(got.Tasks[0].State, TaskPaused)
			seen = true
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	is.True(seen)
	got, err := h.svc.Cancel(context.Background(), r.ID)
	is.NoErr(err)
	is.Equal(got.State, StateCancelled)
	got = h.wait(r.ID)
	is.Equal(got.Tasks[0].State, TaskCancelled)
	is.Equal(len(got.Turns), 1)
}
