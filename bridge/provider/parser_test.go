package provider

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// toolSpec is the expected shape of a tool call or result.
type toolSpec struct {
	ID, Name string
	Input    string // calls: JSON, compared semantically
	Output   string // results
	IsError  bool
	Files    []string
}

type transcriptCase struct {
	dialect, name string
	newParser     func() lineParser
	kinds         []EventKind
	calls         []toolSpec
	results       []toolSpec
	messages      []string
	session       string
	text          string
	isError       bool
	subtype       string
	usage         Usage
	exitCode      int    // of the fake agent replaying it
	failure       string // Result.Failure
}

const (
	greetGo   = "/home/dev/greet/greet.go"
	claudeSID = "8c1f6d2e-3b4a-4c8e-9f21-6a7d5e4b3c2a"
	codexTID  = "0199a4f7-2c3e-7a11-9d40-5e6f7a8b9c0d"
)

func claudeParserFn() lineParser { return newClaudeParser() }
func codexParserFn() lineParser  { return newCodexParser() }

var transcriptCases = []transcriptCase{
	{
		dialect: "claude", name: "plain", newParser: claudeParserFn,
		kinds:    []EventKind{EventSession, EventMessage, EventUsage, EventResult},
		messages: []string{"2 + 2 = 4."},
		session:  "5d3c0a91-2f6e-4b7a-9c18-0e4d2b6f8a13",
		text:     "2 + 2 = 4.", subtype: "success",
		usage: Usage{InputTokens: 3, OutputTokens: 9, CacheReadTokens: 14022, CostUSD: 0.0043605},
	},
	{
		dialect: "claude", name: "tools", newParser: claudeParserFn,
		kinds: []EventKind{
			EventSession, EventMessage,
			EventToolCall, EventToolResult, // Read
			EventRaw,                                       // rate_limit_event
			EventReasoning, EventToolCall, EventToolResult, // Edit
			EventToolCall, EventToolResult, // Bash go test
			EventToolCall, EventToolResult, // Bash cat (fails)
			EventMessage, EventUsage, EventResult,
		},
		calls: []toolSpec{
			{ID: "toolu_01Read7hGq", Name: "Read", Input: `{"file_path":"` + greetGo + `"}`, Files: []string{greetGo}},
			{ID: "toolu_01Edit9kLm", Name: "Edit", Input: `{"file_path":"` + greetGo + `","old_string":"return \"Hello\"","new_string":"return \"Hello, world\""}`, Files: []string{greetGo}},
			{ID: "toolu_01BashTst1", Name: "Bash", Input: `{"command":"go test ./...","description":"Run the test suite"}`},
			{ID: "toolu_01BashCat2", Name: "Bash", Input: `{"command":"cat CHANGELOG.md","description":"Show the changelog"}`},
		},
		results: []toolSpec{
			{ID: "toolu_01Read7hGq", Name: "Read", Files: []string{greetGo}, Output: "     1\tpackage greet\n     2\t\n     3\tfunc Hello() string { return \"Hello\" }\n"},
			{ID: "toolu_01Edit9kLm", Name: "Edit", Files: []string{greetGo}, Output: "The file /home/dev/greet/greet.go has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     3\tfunc Hello() string { return \"Hello, world\" }"},
			{ID: "toolu_01BashTst1", Name: "Bash", Output: "ok  \texample.com/greet\t0.004s"},
			{ID: "toolu_01BashCat2", Name: "Bash", Output: "cat: CHANGELOG.md: No such file or directory", IsError: true},
		},
		messages: []string{
			"I'll start by reading the greeting code.",
			"Done: `Hello` now returns \"Hello, world\" and `go test ./...` passes. There is no CHANGELOG.md to update.",
		},
		session: claudeSID,
		text:    "Done: `Hello` now returns \"Hello, world\" and `go test ./...` passes. There is no CHANGELOG.md to update.",
		subtype: "success",
		usage:   Usage{InputTokens: 32, OutputTokens: 378, CacheReadTokens: 71140, CacheWriteTokens: 3240, CostUSD: 0.04213875},
	},
	{
		dialect: "claude", name: "error", newParser: claudeParserFn,
		kinds: []EventKind{EventSession, EventToolCall, EventToolResult, EventUsage, EventResult},
		calls: []toolSpec{{ID: "toolu_01BashLoop", Name: "Bash", Input: `{"command":"make build","description":"Build the project"}`}},
		results: []toolSpec{{ID: "toolu_01BashLoop", Name: "Bash", IsError: true,
			Output: "Exit code 2\nmake: *** No rule to make target 'build'.  Stop."}},
		session: "e7a41b09-6c2d-4f58-8a3e-91b0c4d2e6f7",
		text:    "Reached maximum number of turns (2)", isError: true, subtype: "error_max_turns",
		usage:    Usage{InputTokens: 10, OutputTokens: 80, CacheReadTokens: 24100, CacheWriteTokens: 1900, CostUSD: 0.0112},
		exitCode: 1,
	},
	{
		dialect: "codex", name: "plain", newParser: codexParserFn,
		kinds:    []EventKind{EventSession, EventRaw, EventReasoning, EventMessage, EventUsage, EventResult},
		messages: []string{"2 + 2 = 4."},
		session:  "0199a213-81c0-7800-8aa1-bbab2a035a53",
		text:     "2 + 2 = 4.", subtype: "turn.completed",
		usage: Usage{InputTokens: 13836, OutputTokens: 26, CacheReadTokens: 3456, ReasoningTokens: 18},
	},
	{
		dialect: "codex", name: "tools", newParser: codexParserFn,
		kinds: []EventKind{
			EventSession, EventRaw, EventReasoning,
			EventToolCall, EventToolResult, // item_1 cat
			EventRaw,                       // todo_list started
			EventToolCall, EventToolResult, // item_3 file_change (completion only)
			EventRaw,                       // todo_list updated
			EventToolCall, EventToolResult, // item_4 mcp
			EventToolCall, EventToolResult, // item_5 failing command
			EventToolCall, EventToolResult, // item_6 go test
			EventRaw, // todo_list completed
			EventMessage, EventUsage, EventResult,
		},
		calls: []toolSpec{
			{ID: "item_1", Name: "command_execution", Input: `{"command":"bash -lc 'cat greet.go'"}`},
			{ID: "item_3", Name: "file_change",
				Input: `{"changes":[{"path":"/home/dev/greet/greet.go","kind":"update"},{"path":"/home/dev/greet/greet_test.go","kind":"add"}]}`,
				Files: []string{greetGo, "/home/dev/greet/greet_test.go"}},
			{ID: "item_4", Name: "mcp__docs__search", Input: `{"query":"go testing table driven"}`},
			{ID: "item_5", Name: "command_execution", Input: `{"command":"bash -lc 'go vet ./... && golint ./...'"}`},
			{ID: "item_6", Name: "command_execution", Input: `{"command":"bash -lc 'go test ./...'"}`},
		},
		results: []toolSpec{
			{ID: "item_1", Name: "command_execution", Output: "package greet\n\nfunc Hello() string { return \"Hello\" }\n"},
			{ID: "item_3", Name: "file_change", Output: "update /home/dev/greet/greet.go\nadd /home/dev/greet/greet_test.go",
				Files: []string{greetGo, "/home/dev/greet/greet_test.go"}},
			{ID: "item_4", Name: "mcp__docs__search", Output: "Use a slice of test cases and t.Run."},
			{ID: "item_5", Name: "command_execution", Output: "bash: line 1: golint: command not found\n", IsError: true},
			{ID: "item_6", Name: "command_execution", Output: "ok  \texample.com/greet\t0.004s\n"},
		},
		messages: []string{"Updated `Hello` to return \"Hello, world\" and added greet_test.go; `go test ./...` passes."},
		session:  codexTID,
		text:     "Updated `Hello` to return \"Hello, world\" and added greet_test.go; `go test ./...` passes.",
		subtype:  "turn.completed",
		usage:    Usage{InputTokens: 24763, OutputTokens: 1220, CacheReadTokens: 18432, CacheWriteTokens: 2048, ReasoningTokens: 640},
	},
	{
		dialect: "codex", name: "error", newParser: codexParserFn,
		kinds:   []EventKind{EventSession, EventRaw, EventError, EventError, EventResult},
		session: "0199a5aa-7b10-7c22-8e31-0a1b2c3d4e5f",
		text:    "stream disconnected before completion: error sending request for url (https://chatgpt.com/backend-api/codex/responses)",
		isError: true, subtype: "turn.failed", exitCode: 1,
	},
	{
		dialect: "codex", name: "unauthorized", newParser: codexParserFn,
		kinds:   []EventKind{EventSession, EventRaw, EventRetry, EventResult},
		session: "0199b0c1-4d2e-7f30-8a41-5b6c7d8e9f01",
		text:    "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header",
		isError: true, subtype: "turn.failed", exitCode: 1, failure: FailureAuth,
	},
	{
		// Subagent frames (parent_tool_use_id) stay events of their own;
		// the retry and the permission denial are typed.
		dialect: "claude", name: "subagent", newParser: claudeParserFn,
		kinds: []EventKind{
			EventSession, EventMessage, EventToolCall, // Task
			EventRaw,                       // the subagent's prompt
			EventToolCall, EventToolResult, // subagent Grep
			EventMessage,    // subagent answer
			EventToolResult, // Task
			EventRetry, EventReasoning,
			EventToolCall, EventToolResult, // Bash, refused
			EventDenied, EventUsage, EventResult,
		},
		calls: []toolSpec{
			{ID: "toolu_01TaskSub1", Name: "Task", Input: `{"description":"Find TODOs","prompt":"List the TODO comments in the repository.","subagent_type":"Explore"}`},
			{ID: "toolu_01SubGrep1", Name: "Grep", Input: `{"pattern":"TODO","path":"/home/dev/greet"}`},
			{ID: "toolu_01BashRm01", Name: "Bash", Input: `{"command":"rm -rf build","description":"Clean the build"}`},
		},
		results: []toolSpec{
			{ID: "toolu_01SubGrep1", Name: "Grep", Output: "greet.go:5: // TODO: localise"},
			{ID: "toolu_01TaskSub1", Name: "Task", Output: "Found one TODO: greet.go:5 (localise)."},
			{ID: "toolu_01BashRm01", Name: "Bash", IsError: true, Output: "Claude requested permissions to use Bash, but you haven't granted it yet."},
		},
		messages: []string{"I'll ask a subagent to look for TODOs.", "Found one TODO: greet.go:5 (localise)."},
		session:  "3a9d2b71-5c4e-4f80-a1b2-7c6d5e4f3a21",
		text:     "There is one TODO, in greet.go line 5: localise the greeting.", subtype: "success",
		usage: Usage{InputTokens: 21, OutputTokens: 240, CacheReadTokens: 30500, CacheWriteTokens: 1200, ReasoningTokens: 96, CostUSD: 0.0214},
	},
	{
		// A refused request: the CLI writes its own assistant message with
		// an error class, then an error result.
		dialect: "claude", name: "rate-limit", newParser: claudeParserFn,
		kinds:   []EventKind{EventSession, EventRetry, EventError, EventUsage, EventResult},
		session: "6b2e9c40-1d7a-4e3f-8b5c-2a1f0e9d8c7b",
		text:    "API Error: Rate limit reached · Your usage limit resets at 5pm",
		isError: true, subtype: "success", exitCode: 1, failure: FailureRateLimit,
	},
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Errorf("invalid JSON %q: %v", a, err)
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Errorf("invalid JSON %q: %v", b, err)
		return false
	}
	return reflect.DeepEqual(x, y)
}

// checkTranscriptEvents verifies an event stream against a case; it is
// shared by the parser tests and the end-to-end runs of the fake agent.
func checkTranscriptEvents(t *testing.T, tc transcriptCase, evs []Event, wantSession string) {
	t.Helper()
	if got := kindsOf(evs); !reflect.DeepEqual(got, tc.kinds) {
		t.Fatalf("kinds:\n got %v\nwant %v", got, tc.kinds)
	}
	mustValidRaw(t, evs)
	for i, ev := range evs {
		if ev.SessionID != wantSession {
			t.Errorf("event %d (%s): session %q, want %q", i, ev.Kind, ev.SessionID, wantSession)
		}
		if ev.Kind != EventRaw && ev.Raw == nil {
			t.Errorf("event %d (%s): Raw not set", i, ev.Kind)
		}
	}
	calls := ofKind(evs, EventToolCall)
	if len(calls) != len(tc.calls) {
		t.Fatalf("got %d tool calls, want %d", len(calls), len(tc.calls))
	}
	for i, want := range tc.calls {
		got := calls[i].Tool
		if got == nil {
			t.Fatalf("call %d: nil Tool", i)
		}
		if got.ID != want.ID || got.Name != want.Name || !reflect.DeepEqual(got.Files, want.Files) {
			t.Errorf("call %d: got {%s %s %v}, want {%s %s %v}", i, got.ID, got.Name, got.Files, want.ID, want.Name, want.Files)
		}
		if !jsonEqual(t, got.Input, []byte(want.Input)) {
			t.Errorf("call %d input: got %s, want %s", i, got.Input, want.Input)
		}
	}
	results := ofKind(evs, EventToolResult)
	if len(results) != len(tc.results) {
		t.Fatalf("got %d tool results, want %d", len(results), len(tc.results))
	}
	for i, want := range tc.results {
		got := results[i].Tool
		if got.ID != want.ID || got.Name != want.Name || got.IsError != want.IsError ||
			got.Output != want.Output || !reflect.DeepEqual(got.Files, want.Files) {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, *got, want)
		}
	}
	var msgs []string
	for _, ev := range ofKind(evs, EventMessage) {
		msgs = append(msgs, ev.Text)
	}
	if !reflect.DeepEqual(msgs, tc.messages) {
		t.Errorf("messages:\n got %q\nwant %q", msgs, tc.messages)
	}
	res := ofKind(evs, EventResult)
	if len(res) != 1 {
		t.Fatalf("got %d result events, want 1", len(res))
	}
	if res[0].Text != tc.text || res[0].IsError != tc.isError {
		t.Errorf("result event: got (%q, %v), want (%q, %v)", res[0].Text, res[0].IsError, tc.text, tc.isError)
	}
	if u := ofKind(evs, EventUsage); len(u) == 1 && *u[0].Usage != tc.usage {
		t.Errorf("usage event: got %+v, want %+v", *u[0].Usage, tc.usage)
	}
}

func TestParseTranscripts(t *testing.T) {
	for _, tc := range transcriptCases {
		t.Run(tc.dialect+"/"+tc.name, func(t *testing.T) {
			is := is.New(t)
			p := tc.newParser()
			evs := parseFile(t, p, transcriptPath(tc.dialect, tc.name))
			checkTranscriptEvents(t, tc, evs, tc.session)
			st := p.state()
			is.True(st.terminal)
			is.Equal(st.sessionID, tc.session)
			is.Equal(st.text, tc.text)
			is.Equal(st.isError, tc.isError)
			is.Equal(st.subtype, tc.subtype)
			is.Equal(st.usage, tc.usage)
			is.Equal(st.failure, tc.failure)
		})
	}
}

// TestParseLineEdgeCases covers single lines the transcripts do not.
func TestParseLineEdgeCases(t *testing.T) {
	now := time.Unix(1, 0)
	type check func(t *testing.T, evs []Event, st *turnState)
	kinds := func(want ...EventKind) check {
		return func(t *testing.T, evs []Event, _ *turnState) {
			t.Helper()
			if got := kindsOf(evs); (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
				t.Errorf("kinds: got %v, want %v", got, want)
			}
		}
	}
	cases := []struct {
		name   string
		parser func() lineParser
		line   string
		checks []check
	}{
		{"claude blank", claudeParserFn, "  \t", []check{kinds()}},
		{"codex blank", codexParserFn, "", []check{kinds()}},
		{"claude not json", claudeParserFn, "Loading MCP servers...", []check{kinds(EventRaw), func(t *testing.T, evs []Event, _ *turnState) {
			if evs[0].Raw != nil || evs[0].Text != "Loading MCP servers..." {
				t.Errorf("got Raw %q Text %q", evs[0].Raw, evs[0].Text)
			}
		}}},
		{"codex json number", codexParserFn, "42", []check{kinds(EventRaw), func(t *testing.T, evs []Event, _ *turnState) {
			if string(evs[0].Raw) != "42" {
				t.Errorf("Raw = %q", evs[0].Raw)
			}
		}}},
		{"claude unknown type", claudeParserFn, `{"type":"stream_event","event":{"type":"content_block_delta"}}`, []check{kinds(EventRaw)}},
		{"claude assistant empty content", claudeParserFn, `{"type":"assistant","message":{"content":[]}}`, []check{kinds(EventRaw)}},
		{"claude assistant string content", claudeParserFn, `{"type":"assistant","message":{"content":"hi"}}`, []check{kinds(EventMessage)}},
		{"claude user prompt replay", claudeParserFn, `{"type":"user","message":{"role":"user","content":"do it"}}`, []check{kinds(EventRaw)}},
		{"claude init without session", claudeParserFn, `{"type":"system","subtype":"init"}`, []check{kinds(EventRaw)}},
		{"claude api_retry", claudeParserFn, `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":613.4,"error_status":429,"error":"rate_limit","session_id":"s1"}`, []check{
			kinds(EventRetry),
			func(t *testing.T, evs []Event, st *turnState) {
				if st.sessionID != "s1" || evs[0].SessionID != "s1" {
					t.Errorf("session id from any line: st %q ev %q", st.sessionID, evs[0].SessionID)
				}
				want := RetryInfo{Attempt: 1, MaxRetries: 10, DelayMS: 613.4, Status: 429}
				if r := evs[0].Retry; r == nil || *r != want || evs[0].Code != "rate_limit" {
					t.Errorf("retry %+v code %q, want %+v rate_limit", r, evs[0].Code, want)
				}
				if evs[0].Text != "API request failed (rate_limit, HTTP 429), retry 1 of 10" || st.failure != "" {
					t.Errorf("text %q failure %q", evs[0].Text, st.failure)
				}
			},
		}},
		{"claude result wrong-typed cost still terminal", claudeParserFn,
			`{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":"n/a","session_id":"s"}`, []check{
				kinds(EventUsage, EventResult),
				func(t *testing.T, _ []Event, st *turnState) {
					if !st.terminal || st.text != "ok" || st.usage.CostUSD != 0 {
						t.Errorf("state %+v", *st)
					}
				},
			}},
		{"claude error result with object errors", claudeParserFn,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[{"message":"boom"},"bang"]}`, []check{
				kinds(EventUsage, EventResult),
				func(t *testing.T, evs []Event, st *turnState) {
					if !st.isError || st.text != "boom; bang" || !evs[1].IsError {
						t.Errorf("state %+v", *st)
					}
				},
			}},
		{"claude success without result text", claudeParserFn, `{"type":"result","subtype":"success"}`, []check{
			kinds(EventUsage, EventResult),
		}},
		{"claude tool_result unknown id and null content", claudeParserFn,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":null}]}}`, []check{
				kinds(EventToolResult),
				func(t *testing.T, evs []Event, _ *turnState) {
					if tl := evs[0].Tool; tl.ID != "x" || tl.Name != "" || tl.Output != "" {
						t.Errorf("tool %+v", *tl)
					}
				},
			}},
		{"claude tool_result image block", claudeParserFn,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"a"},{"type":"image","source":{}}]}]}}`, []check{
				func(t *testing.T, evs []Event, _ *turnState) {
					if got := evs[0].Tool.Output; got != "a\n[image]" {
						t.Errorf("output %q", got)
					}
				},
			}},
		{"claude NotebookEdit files", claudeParserFn,
			`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"NotebookEdit","input":{"notebook_path":"/n.ipynb","new_source":"x"}}]}}`, []check{
				func(t *testing.T, evs []Event, _ *turnState) {
					if got := evs[0].Tool.Files; !reflect.DeepEqual(got, []string{"/n.ipynb"}) {
						t.Errorf("files %v", got)
					}
				},
			}},
		{"codex item without item", codexParserFn, `{"type":"item.completed"}`, []check{kinds(EventRaw)}},
		{"codex mcp failure", codexParserFn,
			`{"type":"item.completed","item":{"id":"i","type":"mcp_tool_call","server":"s","tool":"t","arguments":null,"result":null,"error":{"message":"denied"},"status":"failed"}}`, []check{
				kinds(EventToolCall, EventToolResult),
				func(t *testing.T, evs []Event, _ *turnState) {
					if evs[0].Tool.Input != nil {
						t.Errorf("null arguments should give nil Input, got %s", evs[0].Tool.Input)
					}
					if r := evs[1].Tool; !r.IsError || r.Output != "denied" || r.Name != "mcp__s__t" {
						t.Errorf("result %+v", *r)
					}
				},
			}},
		{"codex web search", codexParserFn,
			`{"type":"item.started","item":{"id":"ws","type":"web_search","query":"golang"}}`, []check{kinds(EventToolCall)}},
		{"codex turn.failed without message", codexParserFn, `{"type":"turn.failed","error":{}}`, []check{
			kinds(EventResult),
			func(t *testing.T, evs []Event, st *turnState) {
				if !st.isError || st.text == "" || !evs[0].IsError {
					t.Errorf("state %+v", *st)
				}
			},
		}},
		{"codex turn.completed without usage", codexParserFn, `{"type":"turn.completed"}`, []check{kinds(EventUsage, EventResult)}},
		{"codex future event", codexParserFn, `{"type":"item.plan.delta","item_id":"p","delta":"x"}`, []check{kinds(EventRaw)}},
		{"codex wrong-typed item is tolerated", codexParserFn,
			`{"type":"item.completed","item":{"id":"m","type":"agent_message","text":"hi","exit_code":"zero"}}`, []check{kinds(EventMessage)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.parser()
			evs := p.parseLine([]byte(tc.line), now)
			mustValidRaw(t, evs)
			for _, c := range tc.checks {
				c(t, evs, p.state())
			}
		})
	}
}

func TestCodexStartedThenCompletedAnnouncesOnce(t *testing.T) {
	is := is.New(t)
	p := newCodexParser()
	now := time.Now()
	started := p.parseLine([]byte(`{"type":"item.started","item":{"id":"c","type":"command_execution","command":"ls","status":"in_progress"}}`), now)
	updated := p.parseLine([]byte(`{"type":"item.updated","item":{"id":"c","type":"command_execution","command":"ls","aggregated_output":"a","status":"in_progress"}}`), now)
	done := p.parseLine([]byte(`{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"ls","aggregated_output":"a\nb","exit_code":0,"status":"completed"}}`), now)
	is.Equal(kindsOf(started), []EventKind{EventToolCall})
	is.Equal(kindsOf(updated), []EventKind{EventRaw}) // liveness only
	is.Equal(kindsOf(done), []EventKind{EventToolResult})
	is.Equal(done[0].Tool.Output, "a\nb")
	is.True(!done[0].Tool.IsError)
}

// cfgArgs is a defaulted Config with extra args.
func cfgArgs(args ...string) Config { return Config{Args: args}.withDefaults("x") }

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		got  []string
		want string
	}{
		{"claude new", claudeArgs(cfgArgs(), Request{}), "-p --output-format stream-json --verbose --permission-mode acceptEdits"},
		{"claude resume", claudeArgs(cfgArgs("--model", "opus"), Request{SessionID: "abc-123"}), "-p --output-format stream-json --verbose --model opus --permission-mode acceptEdits --resume abc-123"},
		{"claude model and turns", claudeArgs(cfgArgs("--model", "opus"), Request{Model: "sonnet", MaxTurns: 8, SessionID: "s"}),
			"-p --output-format stream-json --verbose --model opus --permission-mode acceptEdits --model sonnet --max-turns 8 --resume s"},
		{"claude profile mode", claudeArgs(Config{PermissionMode: "plan"}.withDefaults("claude"), Request{}), "-p --output-format stream-json --verbose --permission-mode plan"},
		{"claude mode in args wins", claudeArgs(cfgArgs("--permission-mode=bypassPermissions"), Request{}), "-p --output-format stream-json --verbose --permission-mode=bypassPermissions"},
		{"claude skip permissions in args", claudeArgs(cfgArgs("--dangerously-skip-permissions"), Request{}), "-p --output-format stream-json --verbose --dangerously-skip-permissions"},
		{"codex new", codexArgs(cfgArgs(), Request{}), "exec --json --sandbox workspace-write -"},
		{"codex resume", codexArgs(cfgArgs("--skip-git-repo-check"), Request{SessionID: "0199-t"}), "exec --json --skip-git-repo-check --sandbox workspace-write resume 0199-t -"},
		{"codex model", codexArgs(cfgArgs(), Request{Model: "gpt-5-codex", MaxTurns: 8, SessionID: "t"}), "exec --json --sandbox workspace-write --model gpt-5-codex resume t -"},
		{"codex profile sandbox", codexArgs(Config{Sandbox: "read-only"}.withDefaults("codex"), Request{}), "exec --json --sandbox read-only -"},
		{"codex sandbox in args wins", codexArgs(cfgArgs("-s", "danger-full-access"), Request{}), "exec --json -s danger-full-access -"},
		{"codex full-auto in args", codexArgs(cfgArgs("--full-auto"), Request{}), "exec --json --full-auto -"},
	}
	for _, tc := range cases {
		if got := strings.Join(tc.got, " "); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPermissions: the permissions a provider reports are the ones its
// command line carries (profile setting, default, or the profile's args).
func TestPermissions(t *testing.T) {
	cases := []struct {
		p    Provider
		want string
	}{
		{NewClaude(Config{}), "acceptEdits"},
		{NewClaude(Config{PermissionMode: "dontAsk"}), "dontAsk"},
		{NewClaude(Config{Args: []string{"--permission-mode", "plan"}, PermissionMode: "dontAsk"}), "plan"},
		{NewClaude(Config{Args: []string{"--dangerously-skip-permissions"}}), "bypassPermissions"},
		{NewCodex(Config{}), "workspace-write"},
		{NewCodex(Config{Sandbox: "read-only"}), "read-only"},
		{NewCodex(Config{Args: []string{"--sandbox=danger-full-access"}}), "danger-full-access"},
		{NewCodex(Config{Args: []string{"--dangerously-bypass-approvals-and-sandbox"}}), "danger-full-access"},
		{NewEcho(), ""},
	}
	for i, tc := range cases {
		if got := tc.p.Permissions(); got != tc.want {
			t.Errorf("case %d (%s): Permissions() = %q, want %q", i, tc.p.Name(), got, tc.want)
		}
	}
}

// TestClaudeSubagentFrames: frames with parent_tool_use_id carry it, and a
// subagent's text never becomes the fallback answer.
func TestClaudeSubagentFrames(t *testing.T) {
	is := is.New(t)
	p := newClaudeParser()
	evs := parseFile(t, p, transcriptPath("claude", "subagent"))
	const task = "toolu_01TaskSub1"
	var nested []string
	for _, ev := range evs {
		if ev.ParentToolID != "" {
			is.Equal(ev.ParentToolID, task)
			nested = append(nested, string(ev.Kind))
		}
	}
	is.Equal(strings.Join(nested, " "), "raw tool_call tool_result message")
	is.Equal(p.st.lastMessage, "I'll ask a subagent to look for TODOs.")

	// Without a result text the answer falls back to the last main message.
	p = newClaudeParser()
	for _, l := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"main answer"}]},"parent_tool_use_id":null,"session_id":"s"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"subagent chatter"}]},"parent_tool_use_id":"toolu_1","session_id":"s"}`,
		`{"type":"result","subtype":"success","is_error":false,"session_id":"s"}`,
	} {
		p.parseLine([]byte(l), time.Unix(1, 0))
	}
	is.Equal(p.st.text, "main answer")
}

// TestClaudeAssistantError: an assistant message with an error class is an
// error event with that code, never a message or the answer.
func TestClaudeAssistantError(t *testing.T) {
	is := is.New(t)
	p := newClaudeParser()
	evs := p.parseLine([]byte(`{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"parent_tool_use_id":null,"session_id":"s","error":"authentication_failed"}`), time.Unix(1, 0))
	is.Equal(kindsOf(evs), []EventKind{EventError})
	is.Equal(evs[0].Code, "authentication_failed")
	is.Equal(evs[0].Text, "Not logged in · Please run /login")
	is.Equal(p.st.lastMessage, "")
	is.Equal(p.st.failure, FailureAuth)
	for code, want := range map[string]string{"rate_limit": FailureRateLimit, "oauth_org_not_allowed": FailureAuth, "server_error": "", "overloaded": ""} {
		is.Equal(claudeFailure(code), want)
	}
}

func TestFailureFromText(t *testing.T) {
	for msg, want := range map[string]string{
		"unexpected status 401 Unauthorized: Missing bearer":                     FailureAuth,
		"exceeded retry limit, last status: 429 Too Many Requests":               FailureRateLimit,
		"You've hit your usage limit. Upgrade to Pro or try again later.":        FailureRateLimit,
		"API request failed (rate_limit, HTTP 429), retry 3 of 10":               FailureRateLimit,
		"Reconnecting... waiting for network (Connection failed: error sending)": "",
	} {
		if got := failureFromText(msg); got != want {
			t.Errorf("failureFromText(%q) = %q, want %q", msg, got, want)
		}
	}
}

// TestClaudeRetryIsNotTheFailure: a retried rate limit does not make a turn
// that later fails for another reason a rate-limited one.
func TestClaudeRetryIsNotTheFailure(t *testing.T) {
	is := is.New(t)
	p := newClaudeParser()
	for _, l := range []string{
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":429,"error":"rate_limit","session_id":"s"}`,
		`{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s"}`,
	} {
		p.parseLine([]byte(l), time.Unix(1, 0))
	}
	is.True(p.st.isError)
	is.Equal(p.st.failure, "")
}
