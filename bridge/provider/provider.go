// Package provider runs one turn of an AI coding-agent conversation by
// driving the user's own agent CLI (Claude Code, Codex, or any configured
// command) as a subprocess, and normalizes its output stream into typed
// [Event] values. The bridge never holds provider credentials: the CLI uses
// its own login.
//
// A [Provider] is stateless and safe for concurrent use; every call to
// [Provider.Run] starts a fresh process. Conversations continue across turns
// through [Request.SessionID], which each provider maps to its CLI's resume
// mechanism.
//
// Subprocesses run in their own process group (unix) so that cancelling the
// context kills the agent together with every tool process it spawned.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Provider names returned by [Provider.Name] and accepted by [New].
const (
	NameClaude  = "claude"
	NameCodex   = "codex"
	NameCommand = "command"
	NameEcho    = "echo"
)

// Provider runs agent turns.
type Provider interface {
	// Name is the provider's stable name: "claude", "codex", "command" or "echo".
	Name() string
	// Available reports nil when the provider can run, i.e. its executable
	// is found. The echo provider is always available.
	Available() error
	// Demo reports whether the provider is a built-in simulation rather than
	// a real agent (true only for echo).
	Demo() bool
	// Permissions describes what the agent may do without asking, as passed
	// to its CLI: Claude's permission mode ("acceptEdits", ...) or Codex's
	// sandbox ("workspace-write", ...); empty when the provider has no such
	// setting (command, echo).
	Permissions() string
	// Run executes one turn and blocks until the agent process has exited
	// and its output is drained.
	//
	// emit receives every event in stream order. It is never called
	// concurrently and never after Run returns; it may be nil. It is called
	// at least once for every non-blank output line, including lines the
	// parser does not understand, so a caller can implement an inactivity
	// watchdog on top of it. emit must not block indefinitely.
	//
	// Cancelling ctx terminates the whole process group: SIGTERM first, then
	// SIGKILL after the provider's kill grace (unix; on Windows the process
	// tree is killed at once).
	//
	// The returned Result is always filled as far as known, even with a
	// non-nil error. The error is nil exactly when the turn reached a
	// terminal outcome (the agent reported a result, possibly an error
	// result with Result.IsError set). Otherwise it reports why not: the
	// executable could not be started, ctx was cancelled (errors.Is with
	// ctx.Err()), or the process ended without a result (*[ExitError]).
	Run(ctx context.Context, req Request, emit func(Event)) (Result, error)
}

// Request describes one turn.
type Request struct {
	// Prompt is the user message. It is passed on the agent's stdin, never
	// on the command line, so it may be arbitrarily long and start with "-".
	Prompt string
	// WorkDir is the agent's working directory; empty means the daemon's.
	WorkDir string
	// SessionID resumes an earlier conversation when non-empty (Claude
	// session id, Codex thread id).
	SessionID string
	// Env holds extra "KEY=value" entries added to the inherited environment;
	// they override inherited and configured values.
	Env []string
	// Model names the model to use (claude and codex: --model), after the
	// profile's args, so it wins; empty keeps the agent's default.
	Model string
	// MaxTurns bounds the agent's turns (claude: --max-turns; codex has no
	// such bound); 0 keeps the agent's default.
	MaxTurns int
	// MCP, when set, is an MCP server given to the agent for this turn
	// (claude: --mcp-config; codex: -c mcp_servers...). Other providers
	// ignore it.
	MCP *MCPServer
}

// EventKind names the kind of an [Event].
type EventKind string

// Event kinds. The fields set on an Event depend on its kind:
//
//	session      SessionID: the conversation id to resume later.
//	message      Text: assistant text.
//	reasoning    Text: thinking / reasoning summary.
//	tool_call    Tool: ID, Name, Input, Files.
//	tool_result  Tool: ID, Name, Output, IsError, Files (Name and Files
//	             are carried over from the matching call when known).
//	usage        Usage: token counts and cost for the turn.
//	result       Text (final answer, or error message), IsError, Usage.
//	             Terminal: the agent reported the end of the turn.
//	error        Text: a non-terminal error reported by the agent, an
//	             oversized output line, or why the turn ended without result.
//	             Code: the agent's error class when it names one (Claude's
//	             assistant error: "authentication_failed", "rate_limit", ...).
//	retry        Text: a transport error the agent is retrying (Claude
//	             system/api_retry, Codex "Reconnecting..."); Code and Retry
//	             give the details the agent reports.
//	permission_denied  Tool: ID, Name, Input of a tool call the agent's
//	             permission settings refused (Claude result
//	             permission_denials).
//	raw          A stdout line that carries nothing of the above: Raw holds
//	             it when it is JSON (unknown or uninteresting types),
//	             otherwise Text holds it (truncated to 64 KiB).
//	log          Text: one line of the agent's stderr (truncated to 64 KiB).
//
// Every event carries Time; events parsed from a JSON line carry that line
// in Raw and the current SessionID when known. Events produced inside a
// subagent (Claude frames with parent_tool_use_id) carry ParentToolID: they
// belong to that tool call, never to the main transcript or the answer.
const (
	EventSession    EventKind = "session"
	EventMessage    EventKind = "message"
	EventReasoning  EventKind = "reasoning"
	EventToolCall   EventKind = "tool_call"
	EventToolResult EventKind = "tool_result"
	EventUsage      EventKind = "usage"
	EventResult     EventKind = "result"
	EventError      EventKind = "error"
	EventRaw        EventKind = "raw"
	EventLog        EventKind = "log"
	EventRetry      EventKind = "retry"
	EventDenied     EventKind = "permission_denied"
)

// Event is one normalized item of an agent's output stream.
type Event struct {
	Kind      EventKind  `json:"kind"`
	SessionID string     `json:"sessionId,omitempty"`
	Text      string     `json:"text,omitempty"`
	IsError   bool       `json:"isError,omitempty"`
	Tool      *ToolEvent `json:"tool,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
	// Code is the agent's own error class (error and retry events).
	Code string `json:"code,omitempty"`
	// Retry details a retry event.
	Retry *RetryInfo `json:"retry,omitempty"`
	// ParentToolID names the tool call (a subagent) that produced the event.
	ParentToolID string `json:"parentToolUseId,omitempty"`
	// Raw is the original JSON line. Events derived from the same line share
	// its backing array: treat it as read-only.
	Raw  json.RawMessage `json:"raw,omitempty"`
	Time time.Time       `json:"time"`
}

// ToolEvent describes a tool invocation or its outcome.
type ToolEvent struct {
	// ID correlates a call with its result.
	ID string `json:"id"`
	// Name is the tool name: Claude's tool name ("Read", "Bash",
	// "mcp__server__tool"), or for Codex "command_execution", "file_change",
	// "web_search" or "mcp__<server>__<tool>".
	Name string `json:"name,omitempty"`
	// Input is the tool input as JSON (calls only).
	Input json.RawMessage `json:"input,omitempty"`
	// Output is the textual tool output (results only).
	Output string `json:"output,omitempty"`
	// IsError reports a failed tool execution (results only).
	IsError bool `json:"isError,omitempty"`
	// Files lists the files the tool touches, derived from inputs such as
	// file_path / notebook_path or Codex file_change paths.
	Files []string `json:"files,omitempty"`
}

// RetryInfo is what an agent reports about a request it retries.
type RetryInfo struct {
	Attempt    int     `json:"attempt,omitempty"`
	MaxRetries int     `json:"maxRetries,omitempty"`
	DelayMS    float64 `json:"delayMs,omitempty"`
	// Status is the HTTP status of the failed request; 0 for a connection
	// error without a response.
	Status int `json:"status,omitempty"`
}

// Failure classes of [Result.Failure] and [StallError.Failure]: the cause
// of a failed turn when the agent names it, so callers can tell the user to
// log in or back off instead of reporting a generic agent error.
const (
	FailureAuth      = "auth"       // the CLI is not logged in or its credentials are refused
	FailureRateLimit = "rate_limit" // the provider refused the request for rate or usage limits
)

// Usage is token accounting for a turn.
type Usage struct {
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64   `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  int64   `json:"reasoningTokens,omitempty"`
	CostUSD          float64 `json:"costUsd,omitempty"`
}

// Result is the outcome of one [Provider.Run].
type Result struct {
	// SessionID identifies the conversation for a later resume.
	SessionID string `json:"sessionId,omitempty"`
	// Text is the final answer, or a description of the failure when
	// IsError is set.
	Text string `json:"text"`
	// Usage is the turn's usage as reported by the agent.
	Usage Usage `json:"usage"`
	// IsError reports a failed turn (agent error result, non-zero command
	// exit, crash or cancellation).
	IsError bool `json:"isError"`
	// Subtype is the provider's terminal reason: Claude's result subtype
	// ("success", "error_max_turns", ...), "turn.completed"/"turn.failed"
	// for Codex, "exit" for command and echo, empty without a terminal event.
	Subtype string `json:"subtype,omitempty"`
	// ExitCode is the process exit code; -1 when killed by a signal or never
	// started, 0 for echo.
	ExitCode int `json:"exitCode"`
	// Stderr is the tail (at most 64 KiB by default) of the process's stderr.
	Stderr string `json:"stderr,omitempty"`
	// DroppedLines counts stdout lines skipped for exceeding the line limit.
	DroppedLines int `json:"droppedLines,omitempty"`
	// Failure classifies a failed turn when the agent said why
	// (FailureAuth, FailureRateLimit); empty otherwise.
	Failure string `json:"failure,omitempty"`
	// Demo is set by the echo provider: the answer is a simulation.
	Demo bool `json:"demo,omitempty"`
}

// ErrUnknownProvider is returned by [New] for an unsupported name.
var ErrUnknownProvider = errors.New("unknown provider")

// ExitError reports that an agent process ended without reporting a
// terminal result (it crashed, was killed externally, or its stream broke).
type ExitError struct {
	Provider string
	// ExitCode is the process exit code, -1 when killed by a signal.
	ExitCode int
	// Stderr is the tail of the process's stderr.
	Stderr string
}

// StallError reports that the agent kept failing to reach its service
// (repeated retry events, no progress) for longer than
// [Config.StallTimeout], and was stopped. Codex, for one, retries forever
// when offline.
type StallError struct {
	Provider string
	// For is how long the agent made no progress.
	For time.Duration
	// LastError is the agent's last retry or error text.
	LastError string
	// Failure classifies LastError when possible (FailureAuth, ...).
	Failure string
}

func (e *StallError) Error() string {
	msg := fmt.Sprintf("%s: no progress for %s, only transport errors; stopped", e.Provider, roundDuration(e.For))
	if e.LastError != "" {
		msg += " (last error: " + e.LastError + ")"
	}
	return msg
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s: process exited with code %d without a result", e.Provider, e.ExitCode)
	if e.ExitCode < 0 {
		msg = fmt.Sprintf("%s: process was killed before producing a result", e.Provider)
	}
	if tail := lastLines(e.Stderr, 3, 512); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// roundDuration keeps messages short: whole seconds, or milliseconds below
// a second.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
