//go:build unix

package provider

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcGroup makes the child the leader of a new process group so the
// agent and every tool process it spawns can be signalled together.
func setProcGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup asks the whole group to exit (SIGTERM).
func terminateGroup(p *os.Process) { signalGroup(p, syscall.SIGTERM) }

// killGroup kills the whole group (SIGKILL).
func killGroup(p *os.Process) { signalGroup(p, syscall.SIGKILL) }

// killLeftovers kills what remains of the group after the leader was reaped.
// The group id stays reserved while any member is alive, and a group that
// is already gone just yields ESRCH.
func killLeftovers(p *os.Process) { signalGroup(p, syscall.SIGKILL) }

func signalGroup(p *os.Process, sig syscall.Signal) {
	if p == nil || p.Pid <= 0 {
		return
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		// No such group (it is gone, or the process is not a group leader
		// after all): signal the process itself. After it was reaped this
		// is a harmless os.ErrProcessDone.
		_ = p.Signal(sig)
	}
}
