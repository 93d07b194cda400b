package provider

import (
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Defaults for [Config].
const (
	DefaultMaxLineBytes = 16 << 20
	DefaultStderrBytes  = 64 << 10
	DefaultKillGrace    = 3 * time.Second
	DefaultExitGrace    = 10 * time.Second
	DefaultStallTimeout = 2 * time.Minute

	// DefaultPermissionMode is Claude Code's permission mode unless a
	// profile says otherwise: edits inside the working directory are
	// accepted, anything else that needs permission is refused (print mode
	// cannot ask). See README "Agent providers".
	DefaultPermissionMode = "acceptEdits"
	// DefaultSandbox is Codex's sandbox unless a profile says otherwise: it
	// may write inside the working directory (Codex's own default,
	// read-only, cannot edit files at all).
	DefaultSandbox = "workspace-write"
)

// PermissionModes are the values Claude Code's --permission-mode accepts
// (claude --help, 2.1.x).
var PermissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}

// SandboxModes are the values Codex's --sandbox accepts (codex exec --help).
var SandboxModes = []string{"read-only", "workspace-write", "danger-full-access"}

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
	// StallTimeout ends a turn whose agent keeps retrying (two retry
	// events or more, no progress in between) for this long since its first
	// retry; Run then returns a *StallError. Default DefaultStallTimeout.
	StallTimeout time.Duration
	// PermissionMode is Claude's --permission-mode, added unless Args set
	// one already. Default DefaultPermissionMode. Ignored by other providers.
	PermissionMode string
	// Sandbox is Codex's --sandbox, added unless Args choose a sandbox
	// already. Default DefaultSandbox. Ignored by other providers.
	Sandbox string
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
	if c.StallTimeout <= 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.PermissionMode == "" {
		c.PermissionMode = DefaultPermissionMode
	}
	if c.Sandbox == "" {
		c.Sandbox = DefaultSandbox
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

// argValue returns the value of the first of flags in args ("--flag v" or
// "--flag=v"), and whether one was found.
func argValue(args []string, flags ...string) (string, bool) {
	for i, a := range args {
		for _, f := range flags {
			if a == f {
				if i+1 < len(args) {
					return args[i+1], true
				}
				return "", true
			}
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// hasArg reports whether any of flags appears in args.
func hasArg(args []string, flags ...string) bool {
	_, ok := argValue(args, flags...)
	return ok
}
