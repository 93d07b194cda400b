package bridge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/bridge/provider/providertest"
)

// newProfilesEnv starts a daemon whose profiles are given as YAML lines
// (indented under profiles:) in which {claude} and {codex} stand for the
// quoted paths of the fake agents.
func newProfilesEnv(t *testing.T, extra, profiles string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.claude, e.codex = providertest.BuildFakeAgent(t, t.TempDir())
	e.yaml = "bridge:\n  inactivity-timeout: 5s\n  heartbeat: 200ms\n" + extra + "  profiles:\n" +
		strings.NewReplacer("{claude}", strconv.Quote(e.claude), "{codex}", strconv.Quote(e.codex)).Replace(profiles)
	e.start()
	return e
}

// result returns a finished job's GET .../result body.
func (e *env) result(tok, id string) map[string]any {
	e.t.Helper()
	return e.do("GET", "/v1/bridge/jobs/"+id+"/result", tok, nil).json(e.t)
}

// auditKinds returns the job's audit entries (with payloads) by kind.
func (e *env) auditKinds(tok, id string) map[string][]map[string]any {
	e.t.Helper()
	out := map[string][]map[string]any{}
	page := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?includePayloads=true&limit=200", tok, nil).json(e.t)
	for _, en := range page["entries"].([]any) {
		m := en.(map[string]any)
		out[m["kind"].(string)] = append(out[m["kind"].(string)], m)
	}
	return out
}

// TestAutoProfileHonoursCommandArgsEnv: an auto profile's command, args and
// env reach the CLI it picks, as an explicit profile's do; permissions
// default per provider and follow the profile's settings.
func TestAutoProfileHonoursCommandArgsEnv(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newProfilesEnv(t, "", `    default: {provider: echo}
    auto: {provider: auto, command: {claude}, args: ["--model", "from-profile"], env: ["AB_PROFILE_ENV=auto-env"]}
    explicit: {provider: codex, command: {codex}, env: ["AB_PROFILE_ENV=codex-env"], sandbox: read-only}
`)
	tok := e.token("ide", "read,submit")
	id := e.submit(tok, map[string]any{"prompt": "#args #env:AB_PROFILE_ENV", "profile": "auto"})
	job := e.waitState(tok, id, "succeeded")
	is.Equal(job["provider"], "claude")
	answer := e.result(tok, id)["result"].(string)
	is.True(strings.Contains(answer, "--model from-profile"))
	is.True(strings.Contains(answer, "--permission-mode acceptEdits"))
	is.True(strings.Contains(answer, "AB_PROFILE_ENV=auto-env"))

	id = e.submit(tok, map[string]any{"prompt": "#args #env:AB_PROFILE_ENV", "profile": "explicit"})
	e.waitState(tok, id, "succeeded")
	answer = e.result(tok, id)["result"].(string)
	is.True(strings.Contains(answer, "--sandbox read-only"))
	is.True(strings.Contains(answer, "AB_PROFILE_ENV=codex-env"))

	// Status shows each profile's permissions.
	st := e.do("GET", "/v1/bridge/status", e.owner, nil).json(t)
	perms := map[string]any{}
	for _, p := range st["providers"].([]any) {
		m := p.(map[string]any)
		perms[m["profile"].(string)] = m["permissions"]
	}
	is.Equal(perms["auto"], "acceptEdits")
	is.Equal(perms["explicit"], "read-only")
	is.Equal(perms["default"], nil) // echo has none
}

// TestAutoDetectsAtJobStart: with neither CLI installed an auto profile
// runs the echo demo, and says so; a CLI installed later is used by the
// next job without a restart.
func TestAutoDetectsAtJobStart(t *testing.T) {
	is := is.New(t)
	bin := t.TempDir()
	e := newProfilesEnv(t, "", "    default: {provider: auto}\n")
	t.Setenv("PATH", bin) // after the fake agent is built: go is not needed now
	tok := e.token("ide", "read,submit")
	st := e.do("GET", "/v1/bridge/status", tok, nil).json(t)
	def := st["providers"].([]any)[0].(map[string]any)
	is.Equal(def["provider"], "echo")
	is.Equal(def["demo"], true)

	id := e.submit(tok, map[string]any{"prompt": "hello"})
	job := e.waitState(tok, id, "succeeded")
	is.Equal(job["provider"], "echo")
	res := e.result(tok, id)
	is.Equal(res["demo"], true)
	is.Equal(res["result"], "hello")

	is.NoErr(os.Symlink(e.claude, filepath.Join(bin, "claude")))
	id = e.submit(tok, map[string]any{"prompt": "#args"})
	job = e.waitState(tok, id, "succeeded")
	is.Equal(job["provider"], "claude")
	res = e.result(tok, id)
	is.Equal(res["demo"], false)
	is.True(strings.Contains(res["result"].(string), "--output-format stream-json"))
}

// TestProviderLoginAndLimitErrors: a CLI that is not logged in, or is
// rate-limited, fails the job with a specific code whose message says what
// to do; the CLI's words are an error event, never the answer.
func TestProviderLoginAndLimitErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read,submit")
	for _, tc := range []struct{ profile, prompt, code, hint, said string }{
		{"claude", "say hi #recorded:claude-not-logged-in", "provider_auth", "claude /login", "Not logged in · Please run /login"},
		{"codex", "#transcript:unauthorized", "provider_auth", "codex login", "401 Unauthorized"},
		{"claude", "#transcript:rate-limit", "provider_rate_limited", "retry the job later", "Rate limit reached"},
	} {
		t.Run(tc.profile+"/"+tc.code, func(t *testing.T) {
			is := is.New(t)
			id := e.submit(tok, map[string]any{"prompt": tc.prompt, "profile": tc.profile})
			job := e.waitState(tok, id, "failed")
			le := job["lastError"].(map[string]any)
			is.Equal(le["code"], tc.code)
			msg := le["message"].(string)
			is.True(strings.Contains(msg, tc.hint))
			is.True(strings.Contains(msg, tc.said))
			if tc.code == "provider_auth" && tc.profile == "claude" { // as README "Agent providers" shows it
				is.Equal(msg, "claude is not logged in or its login was refused: run `claude /login` (or give the daemon ANTHROPIC_API_KEY) as the user the bridge runs as, then retry the job. The agent said: Not logged in · Please run /login")
			}
			res := e.result(tok, id)
			is.Equal(res["result"], nil) // no answer was stored
			msgs := e.do("GET", "/v1/bridge/jobs/"+id+"/messages", tok, nil).json(t)["messages"].([]any)
			for _, m := range msgs {
				is.True(m.(map[string]any)["role"] != "assistant")
			}
			audit := e.auditKinds(tok, id)
			is.Equal(len(audit["agent.message"]), 0)
			if tc.profile == "claude" {
				errs := audit["agent.error"]
				is.Equal(len(errs), 1)
				want := map[string]string{"provider_auth": "authentication_failed", "provider_rate_limited": "rate_limit"}[tc.code]
				is.Equal(errs[0]["summary"].(map[string]any)["code"], want)
			}
		})
	}
}

// TestOfflineCodexFailsAfterStallTimeout: offline, codex reconnects forever;
// the job fails once it has made no progress for bridge.stall-timeout, with
// the agent's last error, instead of burning the whole job timeout.
func TestOfflineCodexFailsAfterStallTimeout(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newEnv(t, withBridge("  stall-timeout: 600ms\n"))
	tok := e.token("ide", "read,submit")
	start := time.Now()
	id := e.submit(tok, map[string]any{"prompt": "say hi #slow:20 #recorded:codex-offline", "profile": "codex"})
	job := e.waitState(tok, id, "failed")
	is.True(time.Since(start) < 20*time.Second)
	le := job["lastError"].(map[string]any)
	is.Equal(le["code"], "provider_unavailable")
	is.True(strings.Contains(le["message"].(string), "Reconnecting... waiting for network"))
	retries := e.auditKinds(tok, id)["agent.retry"]
	is.True(len(retries) >= 3)
	is.True(strings.HasPrefix(retries[0]["summary"].(map[string]any)["text"].(string), "Reconnecting..."))
}

// TestBlankPromptRefused: a whitespace-only prompt, message or chat is
// refused with 400 like an empty one, and creates nothing.
func TestBlankPromptRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newEnv(t)
	tok := e.token("ide", "read,submit")
	r := e.do("POST", "/v1/bridge/jobs", tok, map[string]any{"prompt": " \n\t "})
	is.Equal(r.Status, 400)
	is.Equal(r.code(), "invalid_request")
	is.Equal(len(e.do("GET", "/v1/bridge/jobs", tok, nil).json(t)["jobs"].([]any)), 0)

	id := e.submit(tok, map[string]any{"prompt": "hello"})
	e.waitState(tok, id, "succeeded")
	r = e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, map[string]any{"text": "   "})
	is.Equal(r.Status, 400)
	is.Equal(r.code(), "invalid_request")
	is.Equal(len(e.do("GET", "/v1/bridge/jobs/"+id+"/messages", tok, nil).json(t)["messages"].([]any)), 2)

	r = e.do("POST", "/v1/chat/completions", tok, map[string]any{"model": "bridge/default",
		"messages": []map[string]any{{"role": "user", "content": "  \n "}}})
	is.Equal(r.Status, 400)
	is.Equal(len(e.do("GET", "/v1/bridge/jobs", tok, nil).json(t)["jobs"].([]any)), 1)
}

// TestSubagentFramesKeptApart: a subagent's messages and tools are nested
// under the tool call that started it, and only the main agent answers;
// retries, permission denials and thinking tokens are recorded.
func TestSubagentFramesKeptApart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newEnv(t)
	tok := e.token("ide", "read,submit")
	id := e.submit(tok, map[string]any{"prompt": "#transcript:subagent", "profile": "claude"})
	job := e.waitState(tok, id, "succeeded")
	is.Equal(e.result(tok, id)["result"], "There is one TODO, in greet.go line 5: localise the greeting.")
	is.Equal(job["usage"].(map[string]any)["reasoningTokens"], float64(96))

	audit := e.auditKinds(tok, id)
	var main, sub []string
	for _, m := range audit["agent.message"] {
		s := m["summary"].(map[string]any)
		if s["parentToolUseId"] == "toolu_01TaskSub1" {
			sub = append(sub, s["text"].(string))
		} else {
			main = append(main, s["text"].(string))
		}
	}
	is.Equal(main, []string{"I'll ask a subagent to look for TODOs."})
	is.Equal(sub, []string{"Found one TODO: greet.go:5 (localise)."})
	var nestedTools int
	for _, m := range audit["tool.call"] {
		if m["summary"].(map[string]any)["parentToolUseId"] == "toolu_01TaskSub1" {
			nestedTools++
		}
	}
	is.Equal(nestedTools, 1) // the subagent's Grep
	// Tool observations nest the same way.
	tools := e.do("GET", "/v1/bridge/jobs/"+id+"/tools", tok, nil).json(t)["tools"].([]any)
	parents := map[string]any{}
	for _, tl := range tools {
		m := tl.(map[string]any)
		parents[m["name"].(string)] = m["parentCallId"]
	}
	is.Equal(parents, map[string]any{"Task": nil, "Grep": "toolu_01TaskSub1", "Bash": nil})

	retry := audit["agent.retry"]
	is.Equal(len(retry), 1)
	rs := retry[0]["summary"].(map[string]any)
	is.Equal(rs["code"], "overloaded")
	is.Equal(rs["attempt"], float64(1))
	is.Equal(rs["status"], float64(529))
	denied := audit["agent.permission_denied"]
	is.Equal(len(denied), 1)
	is.Equal(denied[0]["summary"].(map[string]any)["name"], "Bash")
	is.Equal(denied[0]["payload"].(map[string]any)["input"].(map[string]any)["command"], "rm -rf build")
}

// TestChatStreamsNoSubagentText: a streamed completion carries the main
// agent's text only; the subagent's report stays in the audit log. (The
// raw stream is read: the point is what the bridge sends.)
func TestChatStreamsNoSubagentText(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e := newEnv(t)
	r := e.do("POST", "/v1/chat/completions", e.token("ide", "read,submit"), map[string]any{"model": "bridge/claude", "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "#transcript:subagent"}}})
	is.Equal(r.Status, 200)
	var content strings.Builder
	for _, line := range strings.Split(string(r.Body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		is.NoErr(json.Unmarshal([]byte(data), &chunk))
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
		}
	}
	is.True(strings.Contains(content.String(), "I'll ask a subagent to look for TODOs."))
	is.True(!strings.Contains(content.String(), "Found one TODO: greet.go:5 (localise)."))
}

// TestProfilePermissionsValidated: permission settings must be values the
// CLI accepts, on a provider that has them.
func TestProfilePermissionsValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p  bridge.Profile
		ok bool
	}{
		{bridge.Profile{Provider: "claude", PermissionMode: "plan"}, true},
		{bridge.Profile{Provider: "codex", Sandbox: "danger-full-access"}, true},
		{bridge.Profile{Provider: "auto", PermissionMode: "dontAsk", Sandbox: "read-only"}, true},
		{bridge.Profile{Provider: "claude", PermissionMode: "yolo"}, false},
		{bridge.Profile{Provider: "codex", Sandbox: "none"}, false},
		{bridge.Profile{Provider: "claude", Sandbox: "read-only"}, false},
		{bridge.Profile{Provider: "codex", PermissionMode: "plan"}, false},
		{bridge.Profile{Provider: "echo", Sandbox: "read-only"}, false},
	} {
		cfg := bridge.DefaultConfig()
		cfg.Profiles = map[string]bridge.Profile{"p": tc.p}
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}

// TestWorkflowAgentBlankPrompt: an agent step with nothing to say fails at
// once, without a job the CLI would end without a result.
func TestWorkflowAgentBlankPrompt(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	_, svc := newBridgeOnly(t, "")
	res := runAgent(t, svc.WorkflowAgents(nil), agentTask("fake", " \n\t ", ""))
	is.True(!res.Succeeded)
	is.Equal(res.Code, "AGENT_PROMPT_EMPTY")
	is.Equal(res.JobID, "")
}
