//go:build !unix

package factory

import (
	"os"
	"os/exec"
)

// Without process groups (Windows) only the command itself is stopped.

func setGroup(*exec.Cmd) {}

func terminateGroup(pid int) { killGroup(pid) }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
