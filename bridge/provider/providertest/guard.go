package providertest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// GuardEnv marks every process a test binary starts: RunGuarded sets it
// to a value of its own, and children inherit it.
const GuardEnv = "AGENTBRIDGE_TEST_PROCESS"

// RunGuarded runs the tests and then fails the run when a process that
// one of them started is still alive: every test that starts an agent must
// end it, process group included (see the provider package comment). The
// survivors are listed and killed. It is meant for TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(providertest.RunGuarded(m)) }
//
// A test binary started by another one (a helper process) inherits the
// mark and leaves the check to the outer binary. The check needs /proc
// (Linux); elsewhere RunGuarded only runs the tests.
func RunGuarded(m *testing.M) int {
	if os.Getenv(GuardEnv) != "" {
		return m.Run() // a helper process: the outer binary checks
	}
	mark := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.Setenv(GuardEnv, mark); err != nil {
		fmt.Fprintf(os.Stderr, "providertest: cannot mark child processes: %v\n", err)
		return m.Run()
	}
	code := m.Run()
	if runtime.GOOS != "linux" {
		return code
	}
	// Processes killed at the end of a test may take a moment to go.
	var left []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if left = Marked(GuardEnv + "=" + mark); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) == 0 {
		return code
	}
	fmt.Fprintf(os.Stderr, "FAIL: the tests left %d child process(es) running:\n", len(left))
	for _, pid := range left {
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		fmt.Fprintf(os.Stderr, "  pid %d: %s\n", pid, bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '}))
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
	return 1
}

// Marked lists the live processes (zombies excluded) whose environment
// holds the entry "KEY=value" given as mark, other than this one.
func Marked(mark string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == mark {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
