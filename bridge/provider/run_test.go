package provider

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
	"github.com/matryer/is"
)

func newFakeProvider(t *testing.T, dialect string, cfg Config) Provider {
	t.Helper()
	claude, codex := fakeAgents(t)
	if dialect == "claude" {
		cfg.Path = claude
		return NewClaude(cfg)
	}
	cfg.Path = codex
	return NewCodex(cfg)
}

func run(t *testing.T, p Provider, ctx context.Context, req Request) (*recorder, Result, error) {
	t.Helper()
	rec := newRecorder(t)
	res, err := p.Run(ctx, req, rec.emit)
	rec.finish()
	return rec, res, err
}

// TestRunTranscripts replays every transcript through the real process
// machinery and expects exactly what the bare parser produced.
func TestRunTranscripts(t *testing.T) {
	for _, tc := range transcriptCases {
		for _, resume := range []string{"", "resumed-session-42"} {
			name := tc.dialect + "/" + tc.name
			if resume != "" {
				name += "/resume"
			}
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				p := newFakeProvider(t, tc.dialect, testConfig(""))
				rec, res, err := run(t, p, context.Background(), Request{
					Prompt:    "please work #transcript:" + tc.name,
					SessionID: resume,
				})
				is.NoErr(err)
				wantSession := tc.session
				if resume != "" {
					wantSession = resume
				}
				checkTranscriptEvents(t, tc, withoutLogs(rec.events()), wantSession)
				is.Equal(res.SessionID, wantSession)
				is.Equal(res.Text, tc.text)
				is.Equal(res.IsError, tc.isError)
				is.Equal(res.Subtype, tc.subtype)
				is.Equal(res.Usage, tc.usage)
				is.Equal(res.ExitCode, tc.exitCode)
				is.Equal(res.DroppedLines, 0)
				is.Equal(res.Failure, tc.failure)
			})
		}
	}
}

func TestRunEchoesPromptSafely(t *testing.T) {
	// Flag-like, multi-line, quoted and large: the prompt travels on stdin,
	// well past one pipe buffer.
	prompt := "--resume evil\n\"quoted\" 'single' $HOME `tick`\n" + strings.Repeat("long prompt line\n", 20000)
	for _, dialect := range []string{"claude", "codex"} {
		t.Run(dialect, func(t *testing.T) {
			is := is.New(t)
			p := newFakeProvider(t, dialect, testConfig(""))
			rec, res, err := run(t, p, context.Background(), Request{Prompt: prompt})
			is.NoErr(err)
			is.Equal(res.Text, prompt)
			is.True(!res.IsError)
			is.True(res.SessionID != "")
			msgs := ofKind(rec.events(), EventMessage)
			is.Equal(len(msgs), 1)
			is.Equal(msgs[0].Text, prompt)
		})
	}
}

func TestRunEnvAndWorkDir(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	cfg := testConfig("")
	cfg.Env = []string{"AB_PROVIDER_TEST=from-config", "AB_OTHER=kept"}
	p := newFakeProvider(t, "claude", cfg)
	_, res, err := run(t, p, context.Background(), Request{
		Prompt:  "#pwd #env:AB_PROVIDER_TEST #env:AB_OTHER",
		WorkDir: dir,
		Env:     []string{"AB_PROVIDER_TEST=from-request"},
	})
	is.NoErr(err)
	lines := strings.Split(res.Text, "\n")
	is.Equal(len(lines), 3)
	gotDir, err := filepath.EvalSymlinks(lines[0])
	is.NoErr(err)
	wantDir, err := filepath.EvalSymlinks(dir)
	is.NoErr(err)
	is.Equal(gotDir, wantDir)
	is.Equal(lines[1], "AB_PROVIDER_TEST=from-request") // request env wins
	is.Equal(lines[2], "AB_OTHER=kept")
}

func TestRunCrash(t *testing.T) {
	for _, dialect := range []string{"claude", "codex"} {
		t.Run(dialect, func(t *testing.T) {
			is := is.New(t)
			p := newFakeProvider(t, dialect, testConfig(""))
			rec, res, err := run(t, p, context.Background(), Request{Prompt: "#transcript:tools #crash"})
			var exitErr *ExitError
			is.True(errors.As(err, &exitErr))
			is.Equal(exitErr.ExitCode, 2)
			is.Equal(exitErr.Provider, dialect)
			is.True(strings.Contains(err.Error(), "simulated crash"))
			is.True(res.IsError)
			is.Equal(res.ExitCode, 2)
			is.True(strings.Contains(res.Stderr, "fatal: simulated crash"))
			is.True(strings.Contains(res.Text, "simulated crash"))
			is.True(res.SessionID != "") // learnt before the crash
			evs := rec.events()
			is.Equal(withoutLogs(evs)[0].Kind, EventSession)
			last := evs[len(evs)-1]
			is.Equal(last.Kind, EventError)
			is.Equal(len(ofKind(evs, EventResult)), 0)
			logs := ofKind(evs, EventLog)
			is.Equal(len(logs), 2) // each stderr line is a log event
			is.Equal(logs[1].Text, "fatal: simulated crash (SIGSEGV in tool runner)")
		})
	}
}

func TestRunOversizedLine(t *testing.T) {
	for _, dialect := range []string{"claude", "codex"} {
		t.Run(dialect, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig("")
			cfg.MaxLineBytes = 4096
			p := newFakeProvider(t, dialect, cfg)
			rec, res, err := run(t, p, context.Background(), Request{Prompt: "#transcript:plain #big:100000"})
			is.NoErr(err) // the turn still completes
			is.Equal(res.Text, "2 + 2 = 4.")
			is.Equal(res.DroppedLines, 1)
			errs := ofKind(rec.events(), EventError)
			is.Equal(len(errs), 1)
			is.True(strings.Contains(errs[0].Text, "exceeds the 4096-byte line limit"))

			// Under the default limit the same line is an ordinary message.
			p = newFakeProvider(t, dialect, testConfig(""))
			rec, res, err = run(t, p, context.Background(), Request{Prompt: "#transcript:plain #big:100000"})
			is.NoErr(err)
			is.Equal(res.DroppedLines, 0)
			found := false
			for _, m := range ofKind(rec.events(), EventMessage) {
				found = found || len(m.Text) == 100000
			}
			is.True(found)
		})
	}
}

func TestRunMalformedLine(t *testing.T) {
	for _, dialect := range []string{"claude", "codex"} {
		t.Run(dialect, func(t *testing.T) {
			is := is.New(t)
			p := newFakeProvider(t, dialect, testConfig(""))
			rec, res, err := run(t, p, context.Background(), Request{Prompt: "#transcript:plain #malformed"})
			is.NoErr(err)
			is.True(!res.IsError)
			evs := rec.events()
			is.Equal(evs[1].Kind, EventRaw)
			is.Equal(evs[1].Text, `this line is not JSON {"type":`)
			is.Equal(evs[1].Raw, nil)
		})
	}
}

func TestRunStreamsIncrementally(t *testing.T) {
	is := is.New(t)
	p := newFakeProvider(t, "claude", testConfig(""))
	rec, _, err := run(t, p, context.Background(), Request{Prompt: "#slow:150 hello"})
	is.NoErr(err)
	evs := rec.events()
	session, result := evs[0], evs[len(evs)-1]
	is.Equal(session.Kind, EventSession)
	is.Equal(result.Kind, EventResult)
	// Two more lines at 150 ms each: events are timed as they arrive, not
	// when the process exits.
	if gap := result.Time.Sub(session.Time); gap < 250*time.Millisecond {
		t.Errorf("session and result only %v apart; stream is not incremental", gap)
	}
}

func TestRunLingeringAgentIsStoppedAfterResult(t *testing.T) {
	for _, prompt := range []string{"#linger", "#linger #ignore-term"} {
		t.Run(prompt, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig("")
			cfg.ExitGrace, cfg.KillGrace = 200*time.Millisecond, 200*time.Millisecond
			p := newFakeProvider(t, "codex", cfg)
			start := time.Now()
			_, res, err := run(t, p, context.Background(), Request{Prompt: prompt})
			is.NoErr(err) // the result was reported, so the turn succeeded
			is.True(!res.IsError)
			is.Equal(res.Text, prompt)
			if runtime.GOOS != "windows" {
				is.Equal(res.ExitCode, -1) // signalled
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestRunCancel(t *testing.T) {
	for _, dialect := range []string{"claude", "codex"} {
		t.Run(dialect, func(t *testing.T) {
			is := is.New(t)
			p := newFakeProvider(t, dialect, testConfig(""))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := newRecorder(t)
			rec.onEvent = func(ev Event) {
				if ev.Kind == EventSession {
					cancel()
				}
			}
			start := time.Now()
			res, err := p.Run(ctx, Request{Prompt: "#hang"}, rec.emit)
			rec.finish()
			is.True(errors.Is(err, context.Canceled))
			is.True(res.IsError)
			is.True(res.SessionID != "")
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cancel took %v", d)
			}
			evs := rec.events()
			is.Equal(evs[len(evs)-1].Kind, EventError)
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	is := is.New(t)
	p := newFakeProvider(t, "claude", testConfig(""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec, res, err := run(t, p, ctx, Request{Prompt: "x"})
	is.True(errors.Is(err, context.Canceled))
	is.True(res.IsError)
	is.Equal(len(rec.events()), 0)
}

func TestRunExecutableNotFound(t *testing.T) {
	is := is.New(t)
	cfg := Config{LookPath: func(string) (string, error) { return "", exec.ErrNotFound }}
	for _, p := range []Provider{NewClaude(cfg), NewCodex(cfg)} {
		is.True(errors.Is(p.Available(), exec.ErrNotFound))
		_, res, err := run(t, p, context.Background(), Request{Prompt: "x"})
		is.True(errors.Is(err, exec.ErrNotFound))
		is.True(res.IsError)
		is.Equal(res.ExitCode, -1)
	}
}

func TestCommandProvider(t *testing.T) {
	bin := providertest.FakeAgent(t) // runs in plain command mode under its own name

	t.Run("success", func(t *testing.T) {
		is := is.New(t)
		p, err := NewCommand(testConfig(bin))
		is.NoErr(err)
		is.NoErr(p.Available())
		rec, res, err := run(t, p, context.Background(), Request{Prompt: "line one\n\nline three\n"})
		is.NoErr(err)
		is.Equal(res.Text, "line one\n\nline three")
		is.Equal(res.ExitCode, 0)
		is.Equal(res.Subtype, "exit")
		is.True(!res.IsError)
		evs := withoutLogs(rec.events())
		is.Equal(kindsOf(evs), []EventKind{EventRaw, EventRaw, EventMessage, EventResult})
		is.Equal(evs[0].Text, "line one")
		is.Equal(evs[2].Text, "line one\n\nline three")
	})

	t.Run("non-zero exit", func(t *testing.T) {
		is := is.New(t)
		p, err := NewCommand(testConfig(bin))
		is.NoErr(err)
		rec, res, err := run(t, p, context.Background(), Request{Prompt: "partial answer #exit:3"})
		is.NoErr(err) // the exit is the command's terminal outcome
		is.True(res.IsError)
		is.Equal(res.ExitCode, 3)
		is.True(strings.HasPrefix(res.Text, "command exited with code 3: "))
		is.True(strings.Contains(res.Text, "failing with exit code 3 as requested"))
		is.True(strings.Contains(res.Stderr, "warming up"))
		results := ofKind(rec.events(), EventResult)
		is.Equal(len(results), 1)
		is.True(results[0].IsError)
		is.Equal(len(ofKind(rec.events(), EventLog)), 2)
	})

	t.Run("cancel", func(t *testing.T) {
		is := is.New(t)
		p, err := NewCommand(testConfig(bin))
		is.NoErr(err)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, res, err := run(t, p, ctx, Request{Prompt: "#hang"})
		is.True(errors.Is(err, context.DeadlineExceeded))
		is.True(res.IsError)
	})

	t.Run("sh cat", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("needs /bin/sh")
		}
		is := is.New(t)
		p, err := NewCommand(testConfig("/bin/sh"))
		is.NoErr(err)
		p.cfg.Args = []string{"-c", "cat; echo done >&2"}
		_, res, err := run(t, p, context.Background(), Request{Prompt: "héllo\nwörld"})
		is.NoErr(err)
		is.Equal(res.Text, "héllo\nwörld")
		is.Equal(res.Stderr, "done\n")
	})

	t.Run("path required", func(t *testing.T) {
		is := is.New(t)
		_, err := NewCommand(Config{})
		is.True(err != nil)
	})
}

func TestEchoProvider(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		is := is.New(t)
		e := NewEcho()
		is.Equal(e.Name(), NameEcho)
		is.True(e.Demo())
		is.NoErr(e.Available())
		rec, res, err := run(t, e, context.Background(), Request{Prompt: "hello demo"})
		is.NoErr(err)
		evs := rec.events()
		is.Equal(kindsOf(evs), []EventKind{EventSession, EventMessage, EventUsage, EventResult})
		is.True(strings.HasPrefix(res.SessionID, "echo-"))
		for _, ev := range evs {
			is.Equal(ev.SessionID, res.SessionID)
			is.True(!ev.Time.IsZero())
		}
		is.Equal(res.Text, "hello demo")
		is.Equal(evs[3].Text, "hello demo")
		is.Equal(res.Usage.InputTokens, int64(2))
	})

	t.Run("tool and resume", func(t *testing.T) {
		is := is.New(t)
		e := &Echo{SimulateTool: true}
		rec, res, err := run(t, e, context.Background(), Request{Prompt: "p", SessionID: "echo-old"})
		is.NoErr(err)
		is.Equal(res.SessionID, "echo-old")
		evs := rec.events()
		is.Equal(kindsOf(evs), []EventKind{EventSession, EventToolCall, EventToolResult, EventMessage, EventUsage, EventResult})
		is.Equal(evs[1].Tool.Name, "echo")
		is.Equal(string(evs[1].Tool.Input), `{"text":"p"}`)
		is.Equal(evs[2].Tool.Output, "p")
		is.Equal(evs[2].Tool.ID, evs[1].Tool.ID)
	})

	t.Run("cancel", func(t *testing.T) {
		is := is.New(t)
		e := &Echo{Delay: time.Hour}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		rec, res, err := run(t, e, ctx, Request{Prompt: "p"})
		is.True(errors.Is(err, context.DeadlineExceeded))
		is.True(res.IsError)
		is.Equal(len(rec.events()), 0)
	})
}

func TestDetect(t *testing.T) {
	lookup := func(found ...string) func(string) (string, error) {
		return func(file string) (string, error) {
			for _, f := range found {
				if f == file {
					return "/usr/bin/" + file, nil
				}
			}
			return "", exec.ErrNotFound
		}
	}
	cases := []struct {
		found []string
		want  string
		demo  bool
	}{
		{[]string{"claude", "codex"}, NameClaude, false},
		{[]string{"claude"}, NameClaude, false},
		{[]string{"codex"}, NameCodex, false},
		{nil, NameEcho, true},
	}
	for _, tc := range cases {
		p := Detect(lookup(tc.found...))
		if p.Name() != tc.want || p.Demo() != tc.demo {
			t.Errorf("found %v: got %s (demo %v), want %s", tc.found, p.Name(), p.Demo(), tc.want)
		}
		if err := p.Available(); err != nil {
			t.Errorf("found %v: detected provider unavailable: %v", tc.found, err)
		}
	}
}

func TestNew(t *testing.T) {
	is := is.New(t)
	for _, name := range []string{NameClaude, NameCodex, NameEcho} {
		p, err := New(name, Config{})
		is.NoErr(err)
		is.Equal(p.Name(), name)
	}
	p, err := New(NameCommand, Config{Path: os.Args[0]})
	is.NoErr(err)
	is.Equal(p.Name(), NameCommand)
	_, err = New(NameCommand, Config{})
	is.True(err != nil)
	_, err = New("gemini", Config{})
	is.True(errors.Is(err, ErrUnknownProvider))
}
