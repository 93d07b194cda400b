package provider

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// New returns the provider called name configured with cfg. For "echo"
// cfg is ignored; for "command" cfg.Path is required.
func New(name string, cfg Config) (Provider, error) {
	switch name {
	case NameClaude:
		return NewClaude(cfg), nil
	case NameCodex:
		return NewCodex(cfg), nil
	case NameCommand:
		c, err := NewCommand(cfg)
		if err != nil {
			return nil, err
		}
		return c, nil
	case NameEcho:
		return NewEcho(), nil
	case NameAuto:
		a, err := NewAuto(cfg)
		if err != nil {
			return nil, err
		}
		return a, nil
	default:
		return nil, fmt.Errorf("%w %q (want %s, %s, %s, %s or %s)",
			ErrUnknownProvider, name, NameAuto, NameClaude, NameCodex, NameCommand, NameEcho)
	}
}

// NameAuto is accepted by [New]: see [Auto].
const NameAuto = "auto"

// Auto picks its agent each time it is asked: claude when its executable
// is found, else codex, else the echo demo. Detecting per call means a CLI
// installed (or removed) while the daemon runs is used by the next job
// without a restart. Config (Path, Args, Env, permissions, ...) applies to
// whichever CLI is picked, exactly as for an explicit profile.
//
// With Config.Path set, the executable is fixed and its base name says
// which CLI it is ("claude..." or "codex..."); it is never replaced by echo.
type Auto struct {
	cfg   Config
	fixed string // NameClaude or NameCodex when cfg.Path names the CLI
}

// NewAuto returns the auto-detecting provider. A cfg.Path whose base name
// contains neither "claude" nor "codex" is an error: use the command
// provider for other agents.
func NewAuto(cfg Config) (*Auto, error) {
	a := &Auto{cfg: cfg}
	if cfg.Path != "" {
		base := strings.ToLower(filepath.Base(cfg.Path))
		switch {
		case strings.Contains(base, NameClaude):
			a.fixed = NameClaude
		case strings.Contains(base, NameCodex):
			a.fixed = NameCodex
		default:
			return nil, fmt.Errorf("provider auto: cannot tell whether %q is claude or codex; name the provider, or use provider command for other agents", cfg.Path)
		}
	}
	return a, nil
}

// Pick returns the provider a turn started now would use.
func (a *Auto) Pick() Provider {
	switch a.fixed {
	case NameClaude:
		return NewClaude(a.cfg)
	case NameCodex:
		return NewCodex(a.cfg)
	}
	cfg := a.cfg
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	if p := NewClaude(cfg); p.Available() == nil {
		return p
	}
	if p := NewCodex(cfg); p.Available() == nil {
		return p
	}
	return NewEcho()
}

// Name returns the name of the provider picked now.
func (a *Auto) Name() string { return a.Pick().Name() }

// Available reports whether the picked provider can run (always, unless
// Config.Path fixes a missing executable).
func (a *Auto) Available() error { return a.Pick().Available() }

// Demo reports whether the pick is the echo demo (neither CLI found).
func (a *Auto) Demo() bool { return a.Pick().Demo() }

// Permissions returns the picked provider's permissions.
func (a *Auto) Permissions() string { return a.Pick().Permissions() }

// Run picks the provider now and runs the turn with it; see [Provider].
func (a *Auto) Run(ctx context.Context, req Request, emit func(Event)) (Result, error) {
	return a.Pick().Run(ctx, req, emit)
}

// Detect picks the default provider: claude when its executable is found
// by lookPath, else codex, else the echo demo. A nil lookPath means
// exec.LookPath.
func Detect(lookPath func(file string) (string, error)) Provider {
	return (&Auto{cfg: Config{LookPath: lookPath}}).Pick()
}
