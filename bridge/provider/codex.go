package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Codex drives the OpenAI Codex CLI non-interactively:
//
//	codex exec --json [Config.Args...] [--sandbox S] [--model M] -                   new thread
//	codex exec --json [Config.Args...] [--sandbox S] [--model M] resume <thread> -   continue a thread
//
// --sandbox is Config.Sandbox unless Config.Args choose a sandbox already.
// "-" makes codex read the prompt from stdin. Its JSONL events are
// thread.started (thread id), turn.started, item.started / item.updated /
// item.completed (agent_message, reasoning, command_execution, file_change,
// mcp_tool_call, web_search, todo_list, error), turn.completed (usage) and
// turn.failed; a top-level "error" event reports stream errors.
//
// Config.Args go before the resume subcommand, where exec options belong
// (e.g. "--skip-git-repo-check", "--sandbox", "workspace-write", "-m", ...).
type Codex struct{ cfg Config }

// NewCodex returns the Codex provider. cfg.Path defaults to "codex".
func NewCodex(cfg Config) *Codex { return &Codex{cfg: cfg.withDefaults("codex")} }

// Name returns "codex".
func (c *Codex) Name() string { return NameCodex }

// Available reports whether the codex executable is found.
func (c *Codex) Available() error { return c.cfg.available(NameCodex) }

// Demo returns false.
func (c *Codex) Demo() bool { return false }

// sandboxFlags choose Codex's sandbox on the command line.
var sandboxFlags = []string{"-s", "--sandbox", "--full-auto", "--dangerously-bypass-approvals-and-sandbox"}

// Permissions returns the sandbox the CLI runs with: the one in
// Config.Args, else Config.Sandbox.
func (c *Codex) Permissions() string {
	if v, ok := argValue(c.cfg.Args, "-s", "--sandbox"); ok {
		return v
	}
	switch {
	case hasArg(c.cfg.Args, "--dangerously-bypass-approvals-and-sandbox"):
		return "danger-full-access"
	case hasArg(c.cfg.Args, "--full-auto"):
		return "workspace-write"
	}
	return c.cfg.Sandbox
}

// Run executes one turn; see [Provider].
func (c *Codex) Run(ctx context.Context, req Request, emit func(Event)) (Result, error) {
	if req.MCP != nil {
		req.Env = append(slices.Clone(req.Env), MCPTokenEnv+"="+req.MCP.Token)
	}
	return runProcess(ctx, procSpec{
		name:   NameCodex,
		cfg:    c.cfg,
		args:   codexArgs(c.cfg, req),
		req:    req,
		parser: newCodexParser(),
	}, emit)
}

func codexArgs(cfg Config, req Request) []string {
	args := []string{"exec", "--json"}
	args = append(args, cfg.Args...)
	if req.MCP != nil {
		args = append(args, codexMCPArgs(req.MCP)...)
	}
	if !hasArg(cfg.Args, sandboxFlags...) && cfg.Sandbox != "" {
		args = append(args, "--sandbox", cfg.Sandbox)
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.SessionID != "" {
		args = append(args, "resume", req.SessionID)
	}
	return append(args, "-")
}

type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Usage    *codexUsage `json:"usage"`
	Error    *codexError `json:"error"`   // turn.failed
	Message  string      `json:"message"` // error
	Item     *codexItem  `json:"item"`
}

type codexError struct {
	Message string `json:"message"`
}

type codexUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

type codexItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	// agent_message, reasoning
	Text string `json:"text"`
	// command_execution
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	// file_change
	Changes []codexChange `json:"changes"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structured_content"`
	} `json:"result"`
	Error *codexError `json:"error"`
	// web_search
	Query string `json:"query"`
	// error
	Message string `json:"message"`
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

type codexParser struct {
	st        turnState
	announced map[string]toolRef // item id -> tool call already emitted
}

func newCodexParser() *codexParser { return &codexParser{announced: map[string]toolRef{}} }

func (p *codexParser) state() *turnState { return &p.st }

func (p *codexParser) finish(int, string, time.Time) []Event { return nil }

func (p *codexParser) parseLine(line []byte, now time.Time) []Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var m codexLine
	if err := json.Unmarshal(line, &m); !decoded(err) {
		return []Event{rawEvent(line, p.st.sessionID, now)}
	}
	base := Event{SessionID: p.st.sessionID, Raw: line, Time: now}
	var evs []Event
	switch m.Type {
	case "thread.started":
		if m.ThreadID != "" {
			p.st.sessionID = m.ThreadID
			ev := base
			ev.Kind, ev.SessionID = EventSession, m.ThreadID
			evs = append(evs, ev)
		}
	case "item.started", "item.updated":
		if m.Item != nil {
			if call, ok := p.toolCall(m.Item, base); ok {
				evs = append(evs, call)
			}
		}
	case "item.completed":
		if m.Item != nil {
			evs = p.completed(m.Item, base)
		}
	case "error":
		if m.Message != "" {
			p.st.lastError = m.Message
			ev := base
			ev.Kind, ev.Text = EventError, m.Message
			// Codex reports its transport retries as stream errors
			// ("Reconnecting... 2/5 (...)"); offline it never stops.
			if strings.HasPrefix(m.Message, "Reconnecting") {
				ev.Kind = EventRetry
			}
			evs = append(evs, ev)
		}
	case "turn.completed":
		u := Usage{}
		if m.Usage != nil {
			u = Usage{
				InputTokens:      m.Usage.InputTokens,
				OutputTokens:     m.Usage.OutputTokens,
				CacheReadTokens:  m.Usage.CachedInputTokens,
				CacheWriteTokens: m.Usage.CacheWriteInputTokens,
				ReasoningTokens:  m.Usage.ReasoningOutputTokens,
			}
		}
		p.terminal(false, p.st.lastMessage, "turn.completed", u)
		usage, res := base, base
		usage.Kind, usage.Usage = EventUsage, &u
		uc := u
		res.Kind, res.Text, res.Usage = EventResult, p.st.text, &uc
		evs = append(evs, usage, res)
	case "turn.failed":
		msg := p.st.lastError
		if m.Error != nil && m.Error.Message != "" {
			msg = m.Error.Message
		}
		if msg == "" {
			msg = "codex: turn failed"
		}
		p.terminal(true, msg, "turn.failed", p.st.usage)
		p.st.failure = failureFromText(msg)
		res := base
		res.Kind, res.Text, res.IsError = EventResult, msg, true
		evs = append(evs, res)
	}
	if len(evs) == 0 {
		// turn.started, todo_list, plan deltas, unknown future events...
		return []Event{rawEvent(line, p.st.sessionID, now)}
	}
	return evs
}

func (p *codexParser) terminal(isError bool, text, subtype string, u Usage) {
	p.st.terminal = true
	p.st.isError = isError
	p.st.text = text
	p.st.subtype = subtype
	p.st.usage = u
}

// toolCall emits the call for a tool-like item the first time it is seen.
func (p *codexParser) toolCall(it *codexItem, base Event) (Event, bool) {
	if _, seen := p.announced[it.ID]; seen {
		return Event{}, false
	}
	var (
		name  string
		input json.RawMessage
		files []string
	)
	switch it.Type {
	case "command_execution":
		name, input = "command_execution", toJSON(map[string]string{"command": it.Command})
	case "file_change":
		name, input = "file_change", toJSON(map[string][]codexChange{"changes": it.Changes})
		for _, c := range it.Changes {
			if c.Path != "" {
				files = appendUnique(files, c.Path)
			}
		}
	case "mcp_tool_call":
		name = "mcp__" + it.Server + "__" + it.Tool
		if a := bytes.TrimSpace(it.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
			input = a
		}
		files = filesFromInput(input)
	case "web_search":
		name, input = "web_search", toJSON(map[string]string{"query": it.Query})
	default:
		return Event{}, false
	}
	p.announced[it.ID] = toolRef{name: name, files: files}
	ev := base
	ev.Kind = EventToolCall
	ev.Tool = &ToolEvent{ID: it.ID, Name: name, Input: input, Files: files}
	return ev, true
}

func (p *codexParser) completed(it *codexItem, base Event) []Event {
	var evs []Event
	switch it.Type {
	case "agent_message":
		p.st.lastMessage = it.Text
		ev := base
		ev.Kind, ev.Text = EventMessage, it.Text
		return append(evs, ev)
	case "reasoning":
		ev := base
		ev.Kind, ev.Text = EventReasoning, it.Text
		return append(evs, ev)
	case "error":
		p.st.lastError = it.Message
		ev := base
		ev.Kind, ev.Text = EventError, it.Message
		return append(evs, ev)
	}
	// Some items (file_change) are only ever reported on completion.
	if call, ok := p.toolCall(it, base); ok {
		evs = append(evs, call)
	}
	ref, ok := p.announced[it.ID]
	if !ok {
		return evs // not a tool item
	}
	tool := &ToolEvent{ID: it.ID, Name: ref.name, Files: ref.files}
	switch it.Type {
	case "command_execution":
		tool.Output = it.AggregatedOutput
		tool.IsError = it.Status == "failed" || it.Status == "declined" ||
			(it.ExitCode != nil && *it.ExitCode != 0)
	case "file_change":
		var b strings.Builder
		for _, c := range it.Changes {
			fmt.Fprintf(&b, "%s %s\n", c.Kind, c.Path)
		}
		tool.Output = strings.TrimSuffix(b.String(), "\n")
		tool.IsError = it.Status == "failed"
		for _, c := range it.Changes { // paths may be complete only now
			if c.Path != "" {
				tool.Files = appendUnique(tool.Files, c.Path)
			}
		}
	case "mcp_tool_call":
		if it.Result != nil {
			tool.Output = contentText(it.Result.Content)
			if tool.Output == "" && len(it.Result.StructuredContent) > 0 {
				tool.Output = string(bytes.TrimSpace(it.Result.StructuredContent))
			}
		}
		if it.Error != nil {
			tool.Output = it.Error.Message
		}
		tool.IsError = it.Status == "failed" || it.Error != nil
	case "web_search":
		tool.IsError = it.Status == "failed"
	}
	ev := base
	ev.Kind, ev.Tool = EventToolResult, tool
	return append(evs, ev)
}

// toJSON marshals values that cannot fail to marshal (maps of strings).
func toJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// failureFromText classifies an error message. Codex's JSON events carry
// no error class, only the message, which quotes the HTTP failure
// ("unexpected status 401 Unauthorized: ...", "exceeded retry limit, last
// status: 429 Too Many Requests", "You've hit your usage limit").
func failureFromText(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "401") || strings.Contains(m, "unauthorized") ||
		strings.Contains(m, "not logged in") || strings.Contains(m, "codex login") ||
		strings.Contains(m, "refresh token"):
		return FailureAuth
	case strings.Contains(m, "429") || strings.Contains(m, "too many requests") ||
		strings.Contains(m, "rate limit") || strings.Contains(m, "usage limit"):
		return FailureRateLimit
	}
	return ""
}
