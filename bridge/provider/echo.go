package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Echo is the built-in demo provider. It needs nothing installed and runs
// no subprocess: it reports a session, optionally a simulated tool call and
// its result, an assistant message and a result, all echoing the prompt.
// Demo reports true so that user interfaces can label its output.
type Echo struct {
	// SimulateTool adds a tool call ("echo", input {"text": prompt}) and its
	// result before the answer.
	SimulateTool bool
	// Delay is slept before each event (cancellable), to make the stream
	// observable in demos and tests.
	Delay time.Duration
}

// NewEcho returns the demo provider.
func NewEcho() *Echo { return &Echo{} }

// Name returns "echo".
func (e *Echo) Name() string { return NameEcho }

// Available always returns nil.
func (e *Echo) Available() error { return nil }

// Demo returns true.
func (e *Echo) Demo() bool { return true }

// Permissions returns "": echo runs nothing.
func (e *Echo) Permissions() string { return "" }

// Run echoes req.Prompt; see [Provider]. A non-empty req.SessionID is
// kept, otherwise a new "echo-<uuid>" session id is issued.
func (e *Echo) Run(ctx context.Context, req Request, emit func(Event)) (Result, error) {
	sid := req.SessionID
	if sid == "" {
		sid = "echo-" + uuid.NewString()
	}
	words := int64(len(strings.Fields(req.Prompt)))
	usage := Usage{InputTokens: words, OutputTokens: words}
	res := Result{SessionID: sid, Usage: usage, Subtype: "exit", Demo: true}

	evs := []Event{{Kind: EventSession}}
	if e.SimulateTool {
		input, err := json.Marshal(map[string]string{"text": req.Prompt})
		if err != nil {
			return Result{SessionID: sid, IsError: true, ExitCode: -1}, fmt.Errorf("echo: encode tool input: %w", err)
		}
		const id = "echo-tool-1"
		evs = append(evs,
			Event{Kind: EventToolCall, Tool: &ToolEvent{ID: id, Name: "echo", Input: input}},
			Event{Kind: EventToolResult, Tool: &ToolEvent{ID: id, Name: "echo", Output: req.Prompt}},
		)
	}
	u := usage
	evs = append(evs,
		Event{Kind: EventMessage, Text: req.Prompt},
		Event{Kind: EventUsage, Usage: &usage},
		Event{Kind: EventResult, Text: req.Prompt, Usage: &u},
	)
	for _, ev := range evs {
		if err := e.pause(ctx); err != nil {
			res.IsError, res.Text, res.ExitCode = true, "cancelled", -1
			return res, fmt.Errorf("echo: run cancelled: %w", err)
		}
		ev.SessionID, ev.Time = sid, time.Now()
		if emit != nil {
			emit(ev)
		}
	}
	res.Text = req.Prompt
	return res, nil
}

func (e *Echo) pause(ctx context.Context) error {
	if e.Delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(e.Delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
