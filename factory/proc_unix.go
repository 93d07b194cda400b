//go:build unix

package factory

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own, so that the command
// and everything it spawns can be signalled together.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// terminateGroup asks the process group led by pid to stop.
func terminateGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }

// killGroup kills the process group led by pid, leftovers included.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
