package provider

import (
	"fmt"
	"os/exec"
	"time"
)

// Defaults for [Config].
const (
	DefaultMaxLineBytes = 16 << 20
	DefaultStderrBytes  = 64 << 10
	DefaultKillGrace    = 3 * time.Second
	DefaultExitGrace    = 10 * time.Second
)

// Config configures a subprocess provider ([NewClaude], [NewCodex],
// [NewCommand]). The zero value is usable for claude and codex.
type Config struct {
	// Path is the executable, a name looked up on PATH or a path. Defaults
	// to "claude" / "codex"; required for the command provider.
	Path string
	// Args are extra arguments. For claude and codex they follow the fixed
	// flags the provider needs (e.g. "--model", "--permission-mode",
	// "--skip-git-repo-check"); for the command provider they are the whole
	// argument list.
	Args []string
	// Env holds extra "KEY=value" entries for every run; Request.Env
	// entries override them.
	Env []string
	// MaxLineBytes bounds one stdout line; longer lines are skipped with an
	// error event. Default DefaultMaxLineBytes.
	MaxLineBytes int
	// StderrBytes is how much of the stderr tail Result.Stderr keeps.
	// Default DefaultStderrBytes.
	StderrBytes int
	// KillGrace is how long a cancelled process group gets between SIGTERM
	// and SIGKILL. Default DefaultKillGrace.
	KillGrace time.Duration
	// ExitGrace is how long the process may linger after it reported its
	// terminal result before it is terminated. Default DefaultExitGrace.
	ExitGrace time.Duration
	// LookPath resolves Path; default exec.LookPath. Tests substitute it.
	LookPath func(file string) (string, error)
}

func (c Config) withDefaults(defaultPath string) Config {
	if c.Path == "" {
		c.Path = defaultPath
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.StderrBytes <= 0 {
		c.StderrBytes = DefaultStderrBytes
	}
	if c.KillGrace <= 0 {
		c.KillGrace = DefaultKillGrace
	}
	if c.ExitGrace <= 0 {
		c.ExitGrace = DefaultExitGrace
	}
	if c.LookPath == nil {
		c.LookPath = exec.LookPath
	}
	// Copy slices so later mutation by the caller cannot race with runs.
	c.Args = append([]string(nil), c.Args...)
	c.Env = append([]string(nil), c.Env...)
	return c
}

// available resolves the configured executable.
func (c Config) available(name string) error {
	if _, err := c.LookPath(c.Path); err != nil {
		return fmt.Errorf("%s: executable %q not found: %w", name, c.Path, err)
	}
	return nil
}
