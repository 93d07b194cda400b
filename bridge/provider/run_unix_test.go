//go:build unix

package provider

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// processGone reports whether pid no longer runs. A zombie counts as gone:
// in containers the orphan's new parent may never reap it.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// Format: pid (comm) state ...; comm may contain spaces.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			fields := strings.Fields(string(b)[i+1:])
			return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
		}
	}
	return false
}

func childPID(ev Event) int {
	var m struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
		PID     int    `json:"pid"`
	}
	if ev.Kind != EventRaw || json.Unmarshal(ev.Raw, &m) != nil {
		return 0
	}
	if m.Subtype == "fake_child" || m.Type == "fake.child" {
		return m.PID
	}
	return 0
}

// TestCancelKillsProcessGroup hangs the fake agent, which has spawned a
// child sharing its stdout, cancels, and checks the child is gone too.
// With #ignore-term both ignore SIGTERM, so only the SIGKILL escalation
// can end them.
func TestCancelKillsProcessGroup(t *testing.T) {
	for _, dialect := range []string{"claude", "codex"} {
		for _, prompt := range []string{"#hang", "#hang #ignore-term"} {
			t.Run(dialect+"/"+prompt, func(t *testing.T) {
				is := is.New(t)
				cfg := testConfig("")
				cfg.KillGrace = 300 * time.Millisecond
				p := newFakeProvider(t, dialect, cfg)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				rec := newRecorder(t)
				pid := 0
				rec.onEvent = func(ev Event) {
					if n := childPID(ev); n > 0 {
						pid = n // emit is serialized and Run has not returned: no race
						cancel()
					}
				}
				start := time.Now()
				res, err := p.Run(ctx, Request{Prompt: prompt}, rec.emit)
				rec.finish()
				elapsed := time.Since(start)
				is.True(errors.Is(err, context.Canceled))
				is.True(res.IsError)
				is.True(pid > 0)
				if strings.Contains(prompt, "ignore-term") {
					is.True(elapsed >= cfg.KillGrace) // needed SIGKILL
					is.Equal(res.ExitCode, -1)
				}
				if elapsed > 5*time.Second {
					t.Errorf("cancel took %v", elapsed)
				}
				deadline := time.Now().Add(10 * time.Second)
				for !processGone(pid) {
					if time.Now().After(deadline) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
						t.Fatalf("child process %d survived the group kill", pid)
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
	}
}
