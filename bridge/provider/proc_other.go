//go:build !unix && !windows

package provider

import (
	"os"
	"os/exec"
)

// Platforms without process groups (plan9, js, wasip1): kill the process.

func setProcGroup(*exec.Cmd) {}

func terminateGroup(p *os.Process) { killGroup(p) }

func killLeftovers(*os.Process) {}

func killGroup(p *os.Process) {
	if p != nil {
		_ = p.Kill()
	}
}
