package bridge_test

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestSIGKILLLosesNothing kills a daemon with one job running and one queued;
// the next daemon on the same directory marks the first interrupted and runs
// the second: nothing accepted is lost.
func TestSIGKILLLosesNothing(t *testing.T) {
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
	line, err := bufio.NewReader(out).ReadString('\n')
	is.NoErr(err)
	fields := strings.Fields(line)
	is.Equal(len(fields), 4)
	is.Equal(fields[0], "ready")
	running, queued, tok := fields[1], fields[2], fields[3]
	is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	e := newEnvIn(t, dir, withBridge("  max-concurrent-jobs: 1\n"))
	job := e.waitState(tok, running, "interrupted")
	is.Equal(job["lastError"].(map[string]any)["code"], "daemon_restarted")
	e.waitState(tok, queued, "succeeded")
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+running+"/attempts", tok, nil).Status, 200)
}

func TestCrashChild(t *testing.T) {
	dir := os.Getenv("BRIDGE_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestSIGKILLLosesNothing")
	}
	e := newEnvIn(t, dir, withBridge("  max-concurrent-jobs: 1\n"))
	tok := e.token("ide", "read,submit,control")
	running := e.submit(tok, map[string]any{"prompt": "#hang", "profile": "claude"})
	e.waitState(tok, running, "running")
	queued := e.submit(tok, map[string]any{"prompt": "survive the crash"})
	os.Stdout.WriteString("ready " + running + " " + queued + " " + tok + "\n")
	time.Sleep(time.Minute) // killed by the parent
}
