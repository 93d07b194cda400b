//go:build unix

package bridge_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
)

// TestMain fails the run when a test leaves a process behind (agents and
// their tool processes run in their own process groups, so a test that
// forgets to end one leaks it past the test binary).
func TestMain(m *testing.M) { os.Exit(providertest.RunGuarded(m)) }

// TestSIGKILLLosesNothing kills a daemon with one job running and one queued;
// the next daemon on the same directory marks the first interrupted and runs
// the second: nothing accepted is lost.
func TestSIGKILLLosesNothing(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	is := is.New(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=TestCrashChild$")
	cmd.Env = append(os.Environ(), "BRIDGE_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	is.NoErr(err)
	cmd.Stderr = os.Stderr
	is.NoErr(cmd.Start())
	// Whatever happens below, the helper daemon goes.
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	is.NoErr(err)
	fields := strings.Fields(line)
	is.Equal(len(fields), 5)
	is.Equal(fields[0], "ready")
	running, queued, tok := fields[1], fields[2], fields[3]
	// The hanging agent runs in a process group of its own, which a
	// SIGKILLed daemon cannot end: the test must, or it outlives the run.
	pgid, err := strconv.Atoi(fields[4])
	is.NoErr(err)
	is.True(pgid > 1)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	e := newEnvIn(t, dir, withBridge("  max-concurrent-jobs: 1\n"))
	job := e.waitState(tok, running, "interrupted")
	is.Equal(job["lastError"].(map[string]any)["code"], "daemon_restarted")
	e.waitState(tok, queued, "succeeded")
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+running+"/attempts", tok, nil).Status, 200)
}

func TestCrashChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("BRIDGE_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestSIGKILLLosesNothing")
	}
	e := newEnvIn(t, dir, withBridge("  max-concurrent-jobs: 1\n"))
	tok := e.token("ide", "read,submit,control")
	running := e.submit(tok, map[string]any{"prompt": "#hang", "profile": "claude"})
	e.waitState(tok, running, "running")
	pgid := hangingGroup(t, e, tok, running)
	queued := e.submit(tok, map[string]any{"prompt": "survive the crash"})
	os.Stdout.WriteString("ready " + running + " " + queued + " " + tok + " " + strconv.Itoa(pgid) + "\n")
	time.Sleep(time.Minute) // killed by the parent
}

// hangingGroup waits for the #hang agent of job id to report its child's
// pid (a fake_child line in the audit log) and returns its process group.
func hangingGroup(t *testing.T, e *env, tok, id string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		audit := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?includePayloads=true", tok, nil)
		var page struct {
			Entries []struct {
				Kind    string `json:"kind"`
				Payload struct {
					Raw struct {
						Subtype string `json:"subtype"`
						PID     int    `json:"pid"`
					} `json:"raw"`
				} `json:"payload"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(audit.Body, &page); err != nil {
			t.Fatal(err)
		}
		for _, en := range page.Entries {
			if en.Kind == "agent.raw" && en.Payload.Raw.Subtype == "fake_child" {
				pgid, err := syscall.Getpgid(en.Payload.Raw.PID)
				if err != nil {
					t.Fatal(err)
				}
				return pgid
			}
		}
	}
	t.Fatal("the hanging agent never reported its child")
	return 0
}
