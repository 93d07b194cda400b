//go:build windows

package provider

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// setProcGroup starts the child in a new process group. Windows has no
// SIGTERM for console-less children, so termination is a tree kill.
func setProcGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// terminateGroup kills the process tree at once (best effort).
func terminateGroup(p *os.Process) { killTree(p) }

// killGroup kills the process tree (best effort).
func killGroup(p *os.Process) { killTree(p) }

// killLeftovers is a no-op: once the leader was reaped its PID may be reused
// and its orphans can no longer be found by parent id.
func killLeftovers(*os.Process) {}

func killTree(p *os.Process) {
	if p == nil || p.Pid <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// taskkill /T walks the tree by parent id while the leader is alive.
	_ = exec.CommandContext(ctx, "taskkill", "/T", "/F", "/PID", strconv.Itoa(p.Pid)).Run()
	_ = p.Kill()
}
