package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Claude drives Claude Code in print mode:
//
//	claude -p --output-format stream-json --verbose [Config.Args...]
//	       [--permission-mode <Config.PermissionMode>] [--model M] [--max-turns N] [--resume <session>]
//
// with the prompt on stdin. Its stream-json output is one JSON object per
// line: system/init (session id), assistant messages (text, thinking and
// tool_use blocks), user messages (tool_result blocks) and a terminal
// result line with the final text, cost and usage.
type Claude struct{ cfg Config }

// NewClaude returns the Claude Code provider. cfg.Path defaults to "claude".
func NewClaude(cfg Config) *Claude { return &Claude{cfg: cfg.withDefaults("claude")} }

// Name returns "claude".
func (c *Claude) Name() string { return NameClaude }

// Available reports whether the claude executable is found.
func (c *Claude) Available() error { return c.cfg.available(NameClaude) }

// Demo returns false.
func (c *Claude) Demo() bool { return false }

// Permissions returns the permission mode the CLI runs with: the one in
// Config.Args, else Config.PermissionMode. "--dangerously-skip-permissions"
// in Args reports "bypassPermissions".
func (c *Claude) Permissions() string {
	if v, ok := argValue(c.cfg.Args, "--permission-mode"); ok {
		return v
	}
	if hasArg(c.cfg.Args, "--dangerously-skip-permissions") {
		return "bypassPermissions"
	}
	return c.cfg.PermissionMode
}

// Run executes one turn; see [Provider].
func (c *Claude) Run(ctx context.Context, req Request, emit func(Event)) (Result, error) {
	args := claudeArgs(c.cfg, req)
	if req.MCP != nil {
		path, err := writeClaudeMCPConfig(req.MCP)
		if err != nil {
			return Result{}, err
		}
		defer os.Remove(path)
		args = append(args, claudeMCPArgs(path, req.MCP.Name)...)
	}
	return runProcess(ctx, procSpec{
		name:   NameClaude,
		cfg:    c.cfg,
		args:   args,
		req:    req,
		parser: newClaudeParser(),
	}, emit)
}

// claudeArgs builds the argument list. The prompt is not among them: with
// no prompt argument, print mode reads it from stdin, which avoids argv
// limits and prompts that look like flags.
func claudeArgs(cfg Config, req Request) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	args = append(args, cfg.Args...)
	if !hasArg(cfg.Args, "--permission-mode", "--dangerously-skip-permissions") && cfg.PermissionMode != "" {
		args = append(args, "--permission-mode", cfg.PermissionMode)
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(req.MaxTurns))
	}
	if req.SessionID != "" {
		args = append(args, "--resume", req.SessionID)
	}
	return args
}

// claudeLine is the union of the stream-json line shapes we read.
type claudeLine struct {
	Type      string         `json:"type"`
	Subtype   string         `json:"subtype"`
	SessionID string         `json:"session_id"`
	Message   *claudeMessage `json:"message"`
	// ParentToolUseID is set on frames produced inside a subagent.
	ParentToolUseID string `json:"parent_tool_use_id"`
	// Error is the assistant message's error class (SDKAssistantMessageError:
	// "authentication_failed", "rate_limit", ...), also on api_retry lines.
	Error string `json:"error"`
	// system/api_retry lines
	Attempt      int      `json:"attempt"`
	MaxRetries   int      `json:"max_retries"`
	RetryDelayMS float64  `json:"retry_delay_ms"`
	ErrorStatus  *int     `json:"error_status"`
	Denials      []denial `json:"permission_denials"` // result lines
	// result lines
	Result       string          `json:"result"`
	IsError      bool            `json:"is_error"`
	TotalCostUSD float64         `json:"total_cost_usd"`
	Usage        *claudeUsage    `json:"usage"`
	Errors       json.RawMessage `json:"errors"` // strings, or objects in some versions
}

// denial is one entry of a result's permission_denials (SDKPermissionDenial).
type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

type claudeMessage struct {
	Content json.RawMessage `json:"content"` // array of blocks, or a string
}

type claudeBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

type claudeParser struct {
	st    turnState
	tools map[string]toolRef
}

func newClaudeParser() *claudeParser { return &claudeParser{tools: map[string]toolRef{}} }

func (p *claudeParser) state() *turnState { return &p.st }

func (p *claudeParser) finish(int, string, time.Time) []Event { return nil }

func (p *claudeParser) parseLine(line []byte, now time.Time) []Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var m claudeLine
	if err := json.Unmarshal(line, &m); !decoded(err) {
		return []Event{rawEvent(line, p.st.sessionID, now)}
	}
	if m.SessionID != "" && p.st.sessionID == "" {
		p.st.sessionID = m.SessionID // every line carries it; init may be missed
	}
	base := Event{SessionID: p.st.sessionID, Raw: line, Time: now, ParentToolID: m.ParentToolUseID}
	var evs []Event
	switch m.Type {
	case "system":
		switch {
		case m.Subtype == "init" && m.SessionID != "":
			p.st.sessionID = m.SessionID
			ev := base
			ev.Kind, ev.SessionID = EventSession, m.SessionID
			evs = append(evs, ev)
		case m.Subtype == "api_retry":
			ev := base
			ev.Kind, ev.Code = EventRetry, m.Error
			ev.Retry = &RetryInfo{Attempt: m.Attempt, MaxRetries: m.MaxRetries, DelayMS: m.RetryDelayMS}
			if m.ErrorStatus != nil {
				ev.Retry.Status = *m.ErrorStatus
			}
			ev.Text = fmt.Sprintf("API request failed (%s), retry %d of %d", retryCause(m.Error, ev.Retry.Status), m.Attempt, m.MaxRetries)
			// Not the turn's failure (the retry may succeed); a stall is
			// classified from this text (failureFromText).
			if m.ParentToolUseID == "" {
				p.st.lastError = ev.Text
			}
			evs = append(evs, ev)
		}
	case "assistant":
		if m.Error != "" {
			evs = p.assistantError(&m, base)
		} else {
			evs = p.assistant(m.Message, base)
		}
	case "user":
		evs = p.user(m.Message, base)
	case "result":
		evs = p.result(&m, base)
	}
	if len(evs) == 0 {
		// rate_limit_event, stream_event, other system subtypes, user text...
		ev := rawEvent(line, p.st.sessionID, now)
		ev.ParentToolID = m.ParentToolUseID
		return []Event{ev}
	}
	return evs
}

func blocks(msg *claudeMessage) ([]claudeBlock, string) {
	if msg == nil || len(msg.Content) == 0 {
		return nil, ""
	}
	var bs []claudeBlock
	if json.Unmarshal(msg.Content, &bs) == nil {
		return bs, ""
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return nil, s
	}
	return nil, ""
}

// assistantError handles an assistant message that carries an error class:
// its text ("Not logged in · Please run /login") is the CLI describing a
// failure, not the model answering, so it is an error event and never the
// answer.
func (p *claudeParser) assistantError(m *claudeLine, base Event) []Event {
	bs, text := blocks(m.Message)
	parts := []string{}
	if text != "" {
		parts = append(parts, text)
	}
	for _, b := range bs {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	ev := base
	ev.Kind, ev.Code = EventError, m.Error
	ev.Text = strings.Join(parts, "\n")
	if ev.Text == "" {
		ev.Text = "claude: " + m.Error
	}
	if m.ParentToolUseID == "" {
		p.st.lastError, p.st.failure = ev.Text, claudeFailure(m.Error)
	}
	return []Event{ev}
}

// claudeFailure maps Claude's assistant error classes (SDKAssistantMessageError)
// to failure classes; others stay unclassified agent errors.
func claudeFailure(code string) string {
	switch code {
	case "authentication_failed", "oauth_org_not_allowed", "verification_required", "cloud_credential_error":
		return FailureAuth
	case "rate_limit":
		return FailureRateLimit
	}
	return ""
}

func retryCause(code string, status int) string {
	switch {
	case status != 0 && code != "":
		return fmt.Sprintf("%s, HTTP %d", code, status)
	case status != 0:
		return fmt.Sprintf("HTTP %d", status)
	case code != "" && code != "unknown":
		return code
	}
	return "connection error"
}

func (p *claudeParser) assistant(msg *claudeMessage, base Event) []Event {
	bs, text := blocks(msg)
	var evs []Event
	if text != "" {
		bs = append(bs, claudeBlock{Type: "text", Text: text})
	}
	for _, b := range bs {
		ev := base
		switch b.Type {
		case "text":
			if b.Text == "" {
				continue
			}
			if base.ParentToolID == "" { // a subagent's text is not the answer
				p.st.lastMessage = b.Text
			}
			ev.Kind, ev.Text = EventMessage, b.Text
		case "thinking":
			if b.Thinking == "" {
				continue
			}
			ev.Kind, ev.Text = EventReasoning, b.Thinking
		case "tool_use", "server_tool_use", "mcp_tool_use":
			files := filesFromInput(b.Input)
			p.tools[b.ID] = toolRef{name: b.Name, files: files}
			ev.Kind = EventToolCall
			ev.Tool = &ToolEvent{ID: b.ID, Name: b.Name, Input: b.Input, Files: files}
		default:
			continue // redacted_thinking, images, ...
		}
		evs = append(evs, ev)
	}
	return evs
}

func (p *claudeParser) user(msg *claudeMessage, base Event) []Event {
	bs, _ := blocks(msg)
	var evs []Event
	for _, b := range bs {
		if b.Type != "tool_result" {
			continue
		}
		ref := p.tools[b.ToolUseID]
		ev := base
		ev.Kind = EventToolResult
		ev.Tool = &ToolEvent{
			ID:      b.ToolUseID,
			Name:    ref.name,
			Output:  contentText(b.Content),
			IsError: b.IsError,
			Files:   ref.files,
		}
		evs = append(evs, ev)
	}
	return evs
}

func (p *claudeParser) result(m *claudeLine, base Event) []Event {
	if m.SessionID != "" {
		p.st.sessionID = m.SessionID
	}
	u := Usage{CostUSD: m.TotalCostUSD}
	if m.Usage != nil {
		u.InputTokens = m.Usage.InputTokens
		u.OutputTokens = m.Usage.OutputTokens
		u.CacheReadTokens = m.Usage.CacheReadInputTokens
		u.CacheWriteTokens = m.Usage.CacheCreationInputTokens
		if d := m.Usage.OutputTokensDetails; d != nil {
			u.ReasoningTokens = d.ThinkingTokens
		}
	}
	isError := m.IsError || (m.Subtype != "" && m.Subtype != "success")
	text := m.Result
	switch {
	case text == "" && isError:
		text = errorsText(m.Errors)
		if text == "" {
			text = "claude: " + m.Subtype
		}
	case text == "":
		text = p.st.lastMessage
	}
	p.st.terminal = true
	p.st.text = text
	p.st.isError = isError
	p.st.subtype = m.Subtype
	p.st.usage = u
	if !isError {
		p.st.failure = ""
	}

	base.SessionID = p.st.sessionID
	var evs []Event
	for _, d := range m.Denials {
		ev := base
		ev.Kind = EventDenied
		ev.Tool = &ToolEvent{ID: d.ToolUseID, Name: d.ToolName, Input: d.ToolInput, Files: filesFromInput(d.ToolInput)}
		evs = append(evs, ev)
	}
	usage, res := base, base
	usage.Kind = EventUsage
	usage.Usage = &u
	res.Kind, res.Text, res.IsError = EventResult, text, isError
	uc := u
	res.Usage = &uc
	return append(evs, usage, res)
}

// errorsText renders the result's errors field (an array of strings or of
// objects with a message) as one line.
func errorsText(raw json.RawMessage) string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return contentText(raw)
	}
	var out []string
	for _, it := range items {
		var obj struct {
			Message string `json:"message"`
		}
		s := contentText(it)
		if json.Unmarshal(it, &obj) == nil && obj.Message != "" {
			s = obj.Message
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}
