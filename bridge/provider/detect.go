package provider

import (
	"fmt"
	"os/exec"
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
	default:
		return nil, fmt.Errorf("%w %q (want %s, %s, %s or %s)",
			ErrUnknownProvider, name, NameClaude, NameCodex, NameCommand, NameEcho)
	}
}

// Detect picks the default provider: claude when its executable is found
// by lookPath, else codex, else the echo demo. A nil lookPath means
// exec.LookPath.
func Detect(lookPath func(file string) (string, error)) Provider {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	cfg := Config{LookPath: lookPath}
	if p := NewClaude(cfg); p.Available() == nil {
		return p
	}
	if p := NewCodex(cfg); p.Available() == nil {
		return p
	}
	return NewEcho()
}
