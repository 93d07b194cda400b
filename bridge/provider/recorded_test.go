package provider

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// The recordings in testdata/fakeagent/transcripts/recorded are the real
// CLIs' output without credentials and without network, captured with the
// arguments these providers pass. The fake agent replays them.

// TestRecordedNotLoggedIn: Claude Code without a login answers with an
// assistant message carrying error "authentication_failed" and an error
// result. The message is an error event, the turn's failure is auth, and
// nothing of it is an agent message.
func TestRecordedNotLoggedIn(t *testing.T) {
	is := is.New(t)
	p := newFakeProvider(t, "claude", testConfig(""))
	rec, res, err := run(t, p, context.Background(), Request{Prompt: "say hi #recorded:claude-not-logged-in"})
	is.NoErr(err) // the CLI reported an outcome
	is.True(res.IsError)
	is.Equal(res.Failure, FailureAuth)
	is.Equal(res.Text, "Not logged in · Please run /login")
	is.Equal(res.ExitCode, 1)
	evs := rec.events()
	is.Equal(len(ofKind(evs, EventMessage)), 0)
	errs := ofKind(evs, EventError)
	is.Equal(len(errs), 1)
	is.Equal(errs[0].Code, "authentication_failed")
}

// TestRecordedOfflineStalls: offline, Codex reconnects forever and Claude
// retries for minutes. With nothing but retries for StallTimeout, the run
// is stopped with a *StallError naming the agent's last error.
func TestRecordedOfflineStalls(t *testing.T) {
	for _, tc := range []struct{ dialect, recording, lastPrefix string }{
		{"codex", "codex-offline", "Reconnecting... waiting for network"},
		{"claude", "claude-offline-api-key", "API request failed (connection error), retry"},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig("")
			cfg.StallTimeout = 400 * time.Millisecond
			p := newFakeProvider(t, tc.dialect, cfg)
			start := time.Now()
			rec, res, err := run(t, p, context.Background(), Request{Prompt: "say hi #slow:20 #recorded:" + tc.recording})
			var stall *StallError
			is.True(errors.As(err, &stall))
			is.True(time.Since(start) < 10*time.Second)
			is.True(stall.For >= cfg.StallTimeout)
			is.True(strings.HasPrefix(stall.LastError, tc.lastPrefix)) // the agent's last error
			is.Equal(stall.Provider, tc.dialect)
			is.True(res.IsError)
			is.Equal(res.Text, stall.Error())
			is.True(strings.Contains(res.Text, tc.lastPrefix))
			is.True(len(ofKind(rec.events(), EventRetry)) >= 3)
			is.Equal(len(ofKind(rec.events(), EventResult)), 0)
		})
	}
}

// TestNoStallWhileProgressing: retries are a stall only when repeated with
// no progress for StallTimeout. Each turn below runs longer than it.
func TestNoStallWhileProgressing(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		stall        time.Duration
	}{
		// One retry, then a silence longer than StallTimeout (a long
		// answer being written).
		{"single retry", "#slow:450 #transcript:subagent", 300 * time.Millisecond},
		// Two retries, progress, two more: the clock restarts at progress.
		// Each spell of retries lasts two lines (1 s), under the limit;
		// from the first retry to the end (3 s) is over it.
		{"progress between retries", "#slow:500 #transcript:retries", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig("")
			cfg.StallTimeout = tc.stall
			p := newFakeProvider(t, "claude", cfg)
			start := time.Now()
			rec, res, err := run(t, p, context.Background(), Request{Prompt: tc.prompt})
			is.NoErr(err)
			is.True(time.Since(start) > tc.stall)
			is.True(!res.IsError)
			is.True(len(ofKind(rec.events(), EventRetry)) > 0)
		})
	}
}

// TestRecordedCodexUntrustedDir: outside a git repository Codex refuses to
// start; the run ends as a crash whose message quotes its stderr.
func TestRecordedCodexUntrustedDir(t *testing.T) {
	is := is.New(t)
	p := newFakeProvider(t, "codex", testConfig(""))
	_, res, err := run(t, p, context.Background(), Request{Prompt: "say hi #recorded:codex-untrusted-dir"})
	var exitErr *ExitError
	is.True(errors.As(err, &exitErr))
	is.Equal(exitErr.ExitCode, 1)
	is.True(strings.Contains(res.Text, "Not inside a trusted directory and --skip-git-repo-check was not specified."))
}

// TestRecordedBlankPrompt: given a whitespace-only prompt, the real claude
// prints nothing and exits 0 and codex exits 1; neither reports a result,
// which is why the bridge refuses such prompts before starting a job.
func TestRecordedBlankPrompt(t *testing.T) {
	for dialect, want := range map[string]int{"claude": 0, "codex": 1} {
		t.Run(dialect, func(t *testing.T) {
			is := is.New(t)
			p := newFakeProvider(t, dialect, testConfig(""))
			_, res, err := run(t, p, context.Background(), Request{Prompt: "  \n\t "})
			var exitErr *ExitError
			is.True(errors.As(err, &exitErr))
			is.Equal(exitErr.ExitCode, want)
			is.True(res.IsError)
		})
	}
}

// TestAutoDetectsPerRun: auto looks for the CLIs each time it is asked, so
// an install or removal while the daemon runs counts at the next job.
func TestAutoDetectsPerRun(t *testing.T) {
	is := is.New(t)
	installed := map[string]bool{}
	look := func(file string) (string, error) {
		if installed[file] {
			return "/usr/bin/" + file, nil
		}
		return "", exec.ErrNotFound
	}
	a, err := NewAuto(Config{LookPath: look})
	is.NoErr(err)
	is.Equal(a.Name(), NameEcho)
	is.True(a.Demo())
	installed["codex"] = true
	is.Equal(a.Name(), NameCodex)
	is.Equal(a.Permissions(), DefaultSandbox)
	installed["claude"] = true
	is.Equal(a.Name(), NameClaude)
	is.Equal(a.Permissions(), DefaultPermissionMode)
	is.True(!a.Demo())
	delete(installed, "claude")
	delete(installed, "codex")
	is.Equal(a.Name(), NameEcho)
}

// TestAutoHonoursProfile: an auto profile's command, args and env reach the
// CLI exactly as an explicit profile's do.
func TestAutoHonoursProfile(t *testing.T) {
	is := is.New(t)
	claude, codex := fakeAgents(t)
	for _, path := range []string{claude, codex} {
		cfg := testConfig(path)
		cfg.Args = []string{"--model", "profile-model"}
		cfg.Env = []string{"AB_AUTO_ENV=from-profile"}
		cfg.Sandbox, cfg.PermissionMode = "read-only", "plan"
		a, err := NewAuto(cfg)
		is.NoErr(err)
		is.Equal(a.Name(), filepath.Base(path))
		_, res, err := run(t, a, context.Background(), Request{Prompt: "#args #env:AB_AUTO_ENV"})
		is.NoErr(err)
		is.True(strings.Contains(res.Text, "--model profile-model"))
		is.True(strings.Contains(res.Text, "AB_AUTO_ENV=from-profile"))
		if a.Name() == NameClaude {
			is.True(strings.Contains(res.Text, "--permission-mode plan"))
		} else {
			is.True(strings.Contains(res.Text, "--sandbox read-only"))
		}
	}
	_, err := NewAuto(Config{Path: "/usr/local/bin/my-agent"})
	is.True(err != nil) // neither claude nor codex: use the command provider
}

// TestEchoIsDemo: the echo provider's result says it is a simulation.
func TestEchoIsDemo(t *testing.T) {
	is := is.New(t)
	res, err := NewEcho().Run(context.Background(), Request{Prompt: "hi"}, nil)
	is.NoErr(err)
	is.True(res.Demo)
}
