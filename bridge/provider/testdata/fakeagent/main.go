// Command fakeagent impersonates agent CLIs for tests. It decides what to be
// from the base name of argv[0]:
//
//	claude*   Claude Code: claude -p --output-format stream-json --verbose [--resume ID]
//	codex*    Codex: codex exec --json [flags] [resume ID] [-|PROMPT]
//	other     a plain command: prompt on stdin, answer on stdout
//
// It validates the flags the real CLIs require, reads the prompt (stdin,
// or a positional argument) and acts on directives in it:
//
//	#transcript:NAME  replay transcripts/<claude|codex>/NAME.jsonl (claude: plain,
//	                  tools, error, subagent, rate-limit, retries; codex: plain, tools,
//	                  error, unauthorized)
//	#recorded:NAME    replay transcripts/recorded/NAME.txt, output captured from
//	                  the real CLI (stdout, stderr, then its exit code; a CLI that
//	                  was still running when killed repeats its last stdout line
//	                  every #slow ms, default 100, until killed: codex offline
//	                  reconnects forever)
//	#echo             answer with the prompt (the default)
//	#pwd, #env:NAME   answer with the working directory / NAME=value
//	#args             answer with the command-line arguments, space-separated
//	#slow:MS          sleep MS milliseconds before each line
//	#big:N            add an assistant message of N bytes before the last line
//	#malformed        add a non-JSON line after the first line
//	#crash            print two lines, write to stderr, exit 2 without a result
//	#hang             print the first line, spawn a child process (same process
//	                  group, inherits stdout), report its pid in a line
//	                  ({"type":"system","subtype":"fake_child","pid":N} or
//	                  {"type":"fake.child","pid":N}) and sleep forever
//	#ignore-term      with #hang/#linger: ignore SIGTERM (parent and child)
//	#linger           print everything, then sleep forever
//	#mcp-call:TOOL:JSON  claude: call TOOL of the --mcp-config server with the
//	                  JSON arguments (no spaces), answer with its result (mcp.go)
//	#exit:N           command mode: print the answer, then exit N with a stderr line
//
// A resumed session (--resume ID / resume ID) replaces the transcript's
// session id with ID in every line. Error transcripts exit 1, like the
// real CLIs. A blank (whitespace-only) prompt gets what the real CLI does
// with one (recorded/<claude|codex>-blank-prompt.txt): claude prints
// nothing and exits 0, codex complains and exits 1.
package main

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed transcripts
var transcripts embed.FS

const sleeperEnv = "FAKEAGENT_SLEEPER"

func main() { os.Exit(run()) }

func run() int {
	if os.Getenv(sleeperEnv) != "" {
		sleepForever(os.Getenv(sleeperEnv) == "ignore-term")
		return 0
	}
	name := strings.ToLower(strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe"))
	switch {
	case strings.Contains(name, "claude"):
		return claude(os.Args[1:])
	case strings.Contains(name, "codex"):
		return codex(os.Args[1:])
	default:
		return command()
	}
}

func fail(code int, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	return code
}

// valueFlags take a separate value argument in the real CLIs.
var claudeValueFlags = map[string]bool{
	"--model": true, "--permission-mode": true, "--allowedTools": true, "--allowed-tools": true,
	"--disallowedTools": true, "--disallowed-tools": true, "--append-system-prompt": true,
	"--system-prompt": true, "--max-turns": true, "--mcp-config": true, "--settings": true,
	"--add-dir": true, "--input-format": true, "--fallback-model": true, "--session-id": true,
}

func claude(args []string) int {
	var (
		print, verbose bool
		format, resume string
		mcpConfig      string
		positional     []string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-p" || a == "--print":
			print = true
		case a == "--verbose":
			verbose = true
		case a == "--output-format":
			format = next()
		case strings.HasPrefix(a, "--output-format="):
			format = strings.TrimPrefix(a, "--output-format=")
		case a == "--resume" || a == "-r":
			resume = next()
			if resume == "" {
				return fail(1, "error: option '-r, --resume [value]' argument missing")
			}
		case a == "--mcp-config":
			mcpConfig = next()
		case claudeValueFlags[a]:
			next()
		case strings.HasPrefix(a, "-"):
		default:
			positional = append(positional, a)
		}
	}
	if !print {
		return fail(1, "fakeagent: claude must run with -p")
	}
	if format != "stream-json" {
		return fail(1, "fakeagent: expected --output-format stream-json, got %q", format)
	}
	if !verbose {
		return fail(1, "Error: When using --print, --output-format=stream-json requires --verbose")
	}
	prompt, err := readPrompt(positional, false)
	if err != nil {
		return fail(1, "fakeagent: %v", err)
	}
	if strings.TrimSpace(prompt) == "" {
		return replayRecorded("claude-blank-prompt", 0)
	}
	return play(dialectClaude, prompt, resume, mcpConfig)
}

var codexValueFlags = map[string]bool{
	"-m": true, "--model": true, "-s": true, "--sandbox": true, "-C": true, "--cd": true,
	"-c": true, "--config": true, "-p": true, "--profile": true, "-o": true,
	"--output-last-message": true, "--color": true, "-i": true, "--image": true,
	"--output-schema": true, "--add-dir": true,
}

func codex(args []string) int {
	if len(args) == 0 || args[0] != "exec" {
		return fail(2, "fakeagent: codex must run as 'codex exec'")
	}
	var (
		jsonOut, resumeCmd, stdinPrompt bool
		resume                          string
		positional                      []string
	)
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--json" || a == "--experimental-json":
			jsonOut = true
		case codexValueFlags[a]:
			i++
		case a == "-":
			stdinPrompt = true
		case strings.HasPrefix(a, "-"):
		case a == "resume" && !resumeCmd && len(positional) == 0:
			resumeCmd = true
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") {
				return fail(2, "fakeagent: resume needs a session id")
			}
			i++
			resume = args[i]
		default:
			positional = append(positional, a)
		}
	}
	if !jsonOut {
		return fail(2, "fakeagent: codex exec must run with --json")
	}
	prompt, err := readPrompt(positional, stdinPrompt)
	if err != nil {
		return fail(1, "fakeagent: %v", err)
	}
	if strings.TrimSpace(prompt) == "" {
		return replayRecorded("codex-blank-prompt", 0)
	}
	return play(dialectCodex, prompt, resume, "")
}

// readPrompt takes the positional prompt, or stdin when there is none or
// when "-" was given.
func readPrompt(positional []string, forceStdin bool) (string, error) {
	if len(positional) > 0 && !forceStdin {
		return strings.Join(positional, " "), nil
	}
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return string(b), nil
}

type plan struct {
	transcript        string
	recorded          string
	slow              time.Duration
	big               int
	exit              int
	malformed, crash  bool
	hang, linger, ign bool
	pwd, args         bool
	envs              []string
	mcp               *mcpCall
}

func parsePlan(prompt string) plan {
	var p plan
	for _, f := range strings.Fields(prompt) {
		key, val, _ := strings.Cut(f, ":")
		switch key {
		case "#transcript":
			p.transcript = val
		case "#recorded":
			p.recorded = val
		case "#slow":
			if ms, err := strconv.Atoi(val); err == nil {
				p.slow = time.Duration(ms) * time.Millisecond
			}
		case "#big":
			p.big, _ = strconv.Atoi(val)
		case "#exit":
			p.exit, _ = strconv.Atoi(val)
		case "#malformed":
			p.malformed = true
		case "#crash":
			p.crash = true
		case "#hang":
			p.hang = true
		case "#linger":
			p.linger = true
		case "#ignore-term":
			p.ign = true
		case "#pwd":
			p.pwd = true
		case "#args":
			p.args = true
		case "#env":
			p.envs = append(p.envs, val)
		case "#mcp-call":
			if c, ok := parseMCPCall(val); ok {
				p.mcp = &c
			}
		}
	}
	return p
}

func (p plan) answer(prompt string) string {
	var parts []string
	if p.pwd {
		wd, _ := os.Getwd()
		parts = append(parts, wd)
	}
	for _, e := range p.envs {
		parts = append(parts, e+"="+os.Getenv(e))
	}
	if p.args {
		parts = append(parts, strings.Join(os.Args[1:], " "))
	}
	if len(parts) == 0 {
		return prompt
	}
	return strings.Join(parts, "\n")
}

type dialect string

const (
	dialectClaude dialect = "claude"
	dialectCodex  dialect = "codex"
)

func play(d dialect, prompt, resume, mcpConfig string) int {
	p := parsePlan(prompt)
	if p.ign {
		signal.Ignore(syscall.SIGTERM)
	}
	if p.mcp != nil {
		if d != dialectClaude || mcpConfig == "" {
			return fail(1, "fakeagent: #mcp-call needs claude with --mcp-config")
		}
		sid := newUUID()
		lines := echoLines(d, sid, "")
		out(lines[0], p.slow)
		server, text, isErr, err := callMCP(mcpConfig, *p.mcp)
		if err != nil {
			return fail(1, "fakeagent: MCP: %v", err)
		}
		for _, l := range mcpLines(sid, server, *p.mcp, text, isErr) {
			out(l, p.slow)
		}
		for _, l := range echoLines(d, sid, text)[1:] {
			out(l, p.slow)
		}
		return 0
	}
	if p.recorded != "" {
		return replayRecorded(p.recorded, p.slow)
	}
	var lines []string
	if p.transcript != "" {
		b, err := transcripts.ReadFile("transcripts/" + string(d) + "/" + p.transcript + ".jsonl")
		if err != nil {
			return fail(1, "fakeagent: unknown transcript %q: %v", p.transcript, err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		if resume != "" {
			if orig := sessionOf(lines[0]); orig != "" {
				for i := range lines {
					lines[i] = strings.ReplaceAll(lines[i], orig, resume)
				}
			}
		}
	} else {
		sid := resume
		if sid == "" {
			sid = newUUID()
		}
		lines = echoLines(d, sid, p.answer(prompt))
	}
	sid := sessionOf(lines[0])

	if p.malformed {
		lines = insert(lines, 1, `this line is not JSON {"type":`)
	}
	if p.big > 0 {
		lines = insert(lines, len(lines)-1, bigLine(d, sid, p.big))
	}
	switch {
	case p.hang:
		out(lines[0], 0)
		pid, err := spawnSleeper(p.ign)
		if err != nil {
			return fail(1, "fakeagent: spawn child: %v", err)
		}
		if d == dialectClaude {
			out(mustJSON(map[string]any{"type": "system", "subtype": "fake_child", "pid": pid, "session_id": sid}), 0)
		} else {
			out(mustJSON(map[string]any{"type": "fake.child", "pid": pid}), 0)
		}
		sleepForever(p.ign)
	case p.crash:
		for i := 0; i < len(lines) && i < 2; i++ {
			out(lines[i], p.slow)
		}
		fmt.Fprintln(os.Stderr, "fakeagent: starting turn")
		fmt.Fprintln(os.Stderr, "fatal: simulated crash (SIGSEGV in tool runner)")
		return 2
	}
	for _, l := range lines {
		out(l, p.slow)
	}
	if p.linger {
		sleepForever(p.ign)
	}
	if isErrorEnd(lines[len(lines)-1]) {
		return 1
	}
	return 0
}

// replayRecorded plays back a capture of a real CLI: a comment header
// ("# ..."), an end line ("exit N", or "killed" when the CLI was still
// running when the capture stopped), then "--- stdout" and "--- stderr"
// sections.
func replayRecorded(name string, delay time.Duration) int {
	b, err := transcripts.ReadFile("transcripts/recorded/" + name + ".txt")
	if err != nil {
		return fail(1, "fakeagent: unknown recording %q: %v", name, err)
	}
	var end string
	var stdout, stderr []string
	section := ""
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		switch {
		case section == "" && strings.HasPrefix(l, "#"):
		case l == "--- stdout" || l == "--- stderr":
			section = l
		case section == "--- stdout":
			stdout = append(stdout, l)
		case section == "--- stderr":
			stderr = append(stderr, l)
		case end == "":
			end = l
		}
	}
	for _, l := range stderr {
		fmt.Fprintln(os.Stderr, l)
	}
	for _, l := range stdout {
		out(l, delay)
	}
	if end == "killed" {
		if delay <= 0 {
			delay = 100 * time.Millisecond
		}
		for len(stdout) > 0 {
			out(stdout[len(stdout)-1], delay)
		}
		sleepForever(false)
	}
	code, err := strconv.Atoi(strings.TrimPrefix(end, "exit "))
	if err != nil {
		return fail(1, "fakeagent: recording %q: bad end line %q", name, end)
	}
	return code
}

func command() int {
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fail(1, "fakeagent: read stdin: %v", err)
	}
	prompt := string(b)
	p := parsePlan(prompt)
	if p.hang {
		sleepForever(p.ign)
	}
	for _, l := range strings.Split(p.answer(prompt), "\n") {
		out(l, p.slow)
	}
	if p.exit != 0 {
		fmt.Fprintln(os.Stderr, "fakeagent: warming up")
		fmt.Fprintf(os.Stderr, "fakeagent: failing with exit code %d as requested\n", p.exit)
		return p.exit
	}
	return 0
}

func out(line string, delay time.Duration) {
	if delay > 0 {
		time.Sleep(delay)
	}
	// One write per line so readers never see a torn line.
	_, _ = os.Stdout.WriteString(line + "\n")
}

func insert(lines []string, at int, l string) []string {
	lines = append(lines, "")
	copy(lines[at+1:], lines[at:])
	lines[at] = l
	return lines
}

func sessionOf(line string) string {
	var m struct {
		SessionID string `json:"session_id"`
		ThreadID  string `json:"thread_id"`
	}
	_ = json.Unmarshal([]byte(line), &m)
	if m.SessionID != "" {
		return m.SessionID
	}
	return m.ThreadID
}

func isErrorEnd(line string) bool {
	var m struct {
		Type    string `json:"type"`
		IsError bool   `json:"is_error"`
	}
	_ = json.Unmarshal([]byte(line), &m)
	return (m.Type == "result" && m.IsError) || m.Type == "turn.failed"
}

func echoLines(d dialect, sid, answer string) []string {
	words := len(strings.Fields(answer))
	if d == dialectCodex {
		return []string{
			mustJSON(map[string]any{"type": "thread.started", "thread_id": sid}),
			`{"type":"turn.started"}`,
			mustJSON(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "agent_message", "text": answer}}),
			mustJSON(map[string]any{"type": "turn.completed", "usage": map[string]any{
				"input_tokens": 1200 + words, "cached_input_tokens": 0, "output_tokens": words, "reasoning_output_tokens": 0}}),
		}
	}
	wd, _ := os.Getwd()
	usage := map[string]any{"input_tokens": 3 + words, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": words}
	return []string{
		mustJSON(map[string]any{"type": "system", "subtype": "init", "cwd": wd, "session_id": sid,
			"tools": []string{"Bash", "Read", "Edit", "Write"}, "mcp_servers": []any{},
			"model": "claude-sonnet-4-5-20250929", "permissionMode": "default", "apiKeySource": "none", "uuid": newUUID()}),
		mustJSON(map[string]any{"type": "assistant", "message": map[string]any{
			"id": "msg_fake01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": []any{map[string]any{"type": "text", "text": answer}}, "stop_reason": nil, "usage": usage},
			"parent_tool_use_id": nil, "session_id": sid, "uuid": newUUID()}),
		mustJSON(map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 5,
			"duration_api_ms": 4, "num_turns": 1, "result": answer, "session_id": sid,
			"total_cost_usd": 0.0001, "usage": usage, "permission_denials": []any{}, "uuid": newUUID()}),
	}
}

func bigLine(d dialect, sid string, n int) string {
	text := strings.Repeat("x", n)
	if d == dialectCodex {
		return mustJSON(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_big", "type": "agent_message", "text": text}})
	}
	return mustJSON(map[string]any{"type": "assistant", "message": map[string]any{
		"id": "msg_big", "type": "message", "role": "assistant",
		"content": []any{map[string]any{"type": "text", "text": text}}}, "session_id": sid})
}

func spawnSleeper(ignoreTerm bool) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	mode := "1"
	if ignoreTerm {
		mode = "ignore-term"
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), sleeperEnv+"="+mode)
	// Inheriting stdout means the bridge sees EOF only when this child is
	// gone too, which is what the process-group kill must achieve.
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

func sleepForever(ignoreTerm bool) {
	if ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}" // unreachable: only plain maps are marshalled
	}
	return string(b)
}
