package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Command runs any executable as a one-shot agent: the prompt goes to its
// stdin and its stdout is the answer. Exit code 0 is a successful result,
// any other exit code an error result whose text includes the end of
// stderr. There is no session: Request.SessionID is ignored.
type Command struct{ cfg Config }

// NewCommand returns a provider running cfg.Path with cfg.Args.
func NewCommand(cfg Config) (*Command, error) {
	if cfg.Path == "" {
		return nil, errors.New("command provider: executable path is required")
	}
	return &Command{cfg: cfg.withDefaults("")}, nil
}

// Name returns "command".
func (c *Command) Name() string { return NameCommand }

// Available reports whether the configured executable is found.
func (c *Command) Available() error { return c.cfg.available(NameCommand) }

// Demo returns false.
func (c *Command) Demo() bool { return false }

// Permissions returns "": a plain command has no permission setting the
// bridge knows of.
func (c *Command) Permissions() string { return "" }

// Run executes the command once; see [Provider]. Each stdout line is
// emitted as a raw event (Text) as it arrives; at exit a message event
// carries the whole answer, followed by the result.
func (c *Command) Run(ctx context.Context, req Request, emit func(Event)) (Result, error) {
	return runProcess(ctx, procSpec{
		name:   NameCommand,
		cfg:    c.cfg,
		args:   c.cfg.Args,
		req:    req,
		parser: &commandParser{limit: c.cfg.MaxLineBytes},
	}, emit)
}

// commandParser collects stdout as the answer, bounded like one line.
type commandParser struct {
	st        turnState
	out       strings.Builder
	lines     int
	limit     int
	truncated bool
}

func (p *commandParser) state() *turnState { return &p.st }

func (p *commandParser) parseLine(line []byte, now time.Time) []Event {
	if p.lines > 0 {
		p.write("\n")
	}
	p.lines++
	p.write(string(line))
	if strings.TrimSpace(string(line)) == "" {
		return nil
	}
	return []Event{{Kind: EventRaw, Text: truncateText(string(line), maxTextBytes), Time: now}}
}

func (p *commandParser) write(s string) {
	if p.truncated {
		return
	}
	if p.out.Len()+len(s) > p.limit {
		p.truncated = true
		p.out.WriteString(truncateText(s, p.limit-p.out.Len()))
		return
	}
	p.out.WriteString(s)
}

func (p *commandParser) finish(exitCode int, stderr string, now time.Time) []Event {
	if exitCode < 0 {
		return nil // killed: no outcome (crash or cancel, decided by the runner)
	}
	text := strings.TrimRight(p.out.String(), "\r\n")
	p.st.terminal, p.st.subtype = true, "exit"
	var evs []Event
	if exitCode == 0 {
		p.st.text = text
		if text != "" {
			evs = append(evs, Event{Kind: EventMessage, Text: text, Time: now})
		}
	} else {
		p.st.isError = true
		p.st.text = fmt.Sprintf("command exited with code %d", exitCode)
		if tail := lastLines(stderr, 5, 2048); tail != "" {
			p.st.text += ": " + tail
		}
	}
	return append(evs, Event{Kind: EventResult, Text: p.st.text, IsError: p.st.isError, Time: now})
}
