package bridge_test

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestControlTransitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBridge("  max-concurrent-jobs: 1\n"))
	is := is.New(t)
	tok := e.token("ide", "read,submit,control")

	hung := e.submit(tok, map[string]any{"prompt": "#hang", "profile": "claude"})
	e.waitState(tok, hung, "running")
	queued := e.submit(tok, map[string]any{"prompt": "wait your turn"})
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+queued, tok, nil).json(t)["state"], "queued") // concurrency limit 1

	r := e.do("GET", "/v1/bridge/jobs/"+hung+"/result", tok, nil)
	is.Equal(r.Status, 202)
	is.Equal(r.json(t)["state"], "running")

	// Pause the queued job: it is held even when a slot frees.
	r = e.do("POST", "/v1/bridge/jobs/"+queued+"/pause", tok, "{}")
	is.Equal(r.Status, 200)
	is.Equal(r.json(t)["state"], "paused")
	r = e.do("POST", "/v1/bridge/jobs/"+queued+"/pause", tok, "{}")
	is.Equal(r.Status, 409)
	is.Equal(r.code(), "invalid_transition")

	r = e.do("POST", "/v1/bridge/jobs/"+hung+"/cancel", tok, "{}")
	is.Equal(r.Status, 200)
	is.Equal(r.json(t)["state"], "cancelled")
	time.Sleep(100 * time.Millisecond)
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+queued, tok, nil).json(t)["state"], "paused")

	r = e.do("POST", "/v1/bridge/jobs/"+queued+"/resume", tok, "{}")
	is.Equal(r.Status, 200)
	e.waitState(tok, queued, "succeeded")

	// Invalid transitions answer 409 with a code.
	for _, act := range []string{"pause", "resume", "cancel"} {
		r := e.do("POST", "/v1/bridge/jobs/"+queued+"/"+act, tok, "{}")
		is.Equal(r.Status, 409)
		is.Equal(r.code(), "invalid_transition")
	}
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+hung+"/messages", tok, `{"text":"hello?"}`).Status, 409)

	// Retry creates a new attempt.
	r = e.do("POST", "/v1/bridge/jobs/"+hung+"/retry", tok, "{}")
	is.Equal(r.Status, 202)
	is.Equal(r.json(t)["attempt"], float64(2))
	att := e.do("GET", "/v1/bridge/jobs/"+hung+"/attempts", tok, nil).json(t)
	is.Equal(len(att["attempts"].([]any)), 2)
	is.Equal(att["attempts"].([]any)[0].(map[string]any)["state"], "cancelled")
	e.waitState(tok, hung, "running") // #hang again
	e.do("POST", "/v1/bridge/jobs/"+hung+"/cancel", tok, "{}")

	// Control bodies must be exactly {}.
	for _, body := range []string{"", "[]", "null", `{"force":true}`, "{} {}", `"x"`} {
		r := e.do("POST", "/v1/bridge/jobs/"+queued+"/retry", tok, body)
		if r.Status != 400 || r.code() != "invalid_request" {
			t.Errorf("body %q: %d %s", body, r.Status, r.Body)
		}
	}
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+queued+"/retry", tok, " { } ").Status, 202)
}

func TestPauseRunningJobKeepsConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit,control")
	id := e.submit(tok, map[string]any{"prompt": "#slow:400 #transcript:tools", "profile": "claude"})
	e.waitState(tok, id, "running")
	// Paused once the session line arrived, so that resuming continues
	// that session.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if sid, _ := e.do("GET", "/v1/bridge/jobs/"+id, tok, nil).json(t)["sessionId"].(string); sid != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job's session line did not arrive")
		}
	}
	r := e.do("POST", "/v1/bridge/jobs/"+id+"/pause", tok, "{}")
	is.Equal(r.Status, 200)
	time.Sleep(200 * time.Millisecond)
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+id, tok, nil).json(t)["state"], "paused")
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/resume", tok, "{}").Status, 200)
	job := e.waitState(tok, id, "succeeded")
	is.True(strings.HasPrefix(job["sessionId"].(string), "8c1f6d2e"))
	msgs := e.do("GET", "/v1/bridge/jobs/"+id+"/messages", tok, nil).json(t)["messages"].([]any)
	is.Equal(msgs[0].(map[string]any)["status"], "delivered")
}

func TestMessagesContinueConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	id := e.submit(tok, map[string]any{"prompt": "#transcript:plain", "profile": "claude"})
	first := e.waitState(tok, id, "succeeded")
	session := first["sessionId"].(string)
	is.True(session != "")

	r := e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, `{"text":"#echo and now?"}`, "Idempotency-Key", "m1")
	is.Equal(r.Status, 202)
	body := r.json(t)
	is.Equal(body["message"].(map[string]any)["role"], "user")
	is.Equal(body["job"].(map[string]any)["state"], "queued")
	again := e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, `{"text":"#echo and now?"}`, "Idempotency-Key", "m1")
	is.Equal(again.Status, 202)
	is.Equal(again.json(t)["message"], body["message"])
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, `{"text":"other"}`, "Idempotency-Key", "m1").Status, 409)

	done := e.waitState(tok, id, "succeeded")
	is.Equal(done["sessionId"], session) // resumed, not a new conversation
	msgs := e.do("GET", "/v1/bridge/jobs/"+id+"/messages", tok, nil).json(t)["messages"].([]any)
	is.Equal(len(msgs), 4) // prompt, answer, message, answer
	is.Equal(msgs[3].(map[string]any)["role"], "assistant")
	res := e.do("GET", "/v1/bridge/jobs/"+id+"/result", tok, nil).json(t)
	is.True(strings.Contains(res["result"].(string), "and now?"))

	long := strings.Repeat("ß", 100_000)
	for body, want := range map[string]int{
		`{"text":""}`: 400, `{}`: 400, `{"text":"x","role":"user"}`: 400, `{"text":5}`: 400,
		`{"text":"` + long + `"}`: 202, `{"text":"` + long + `x"}`: 400,
	} {
		if r := e.do("POST", "/v1/bridge/jobs/"+id+"/messages", tok, body); r.Status != want {
			t.Errorf("message %.40q: %d %s, want %d", body, r.Status, r.Body, want)
		}
	}
}

func TestAgentFailures(t *testing.T) {
	t.Parallel()
	// Only #hang waits for the inactivity timeout; the others must start
	// and print within it.
	e := newEnv(t, withBridge("  inactivity-timeout: 2s\n"))
	tok := e.token("ide", "read,submit,control")
	cases := []struct {
		prompt, profile, state, code string
	}{
		{"#crash", "claude", "failed", "agent_crashed"},
		{"#crash", "codex", "failed", "agent_crashed"},
		{"#transcript:error", "claude", "failed", "agent_error"},
		{"#transcript:error", "codex", "failed", "agent_error"},
		{"#hang", "claude", "failed", "agent_inactive"},
	}
	for _, c := range cases {
		t.Run(c.prompt+"/"+c.profile, func(t *testing.T) {
			is := is.New(t)
			id := e.submit(tok, map[string]any{"prompt": c.prompt, "profile": c.profile})
			job := e.waitState(tok, id, "succeeded", "failed")
			is.Equal(job["state"], c.state)
			is.Equal(job["lastError"].(map[string]any)["code"], c.code)
			res := e.do("GET", "/v1/bridge/jobs/"+id+"/result", tok, nil)
			is.Equal(res.Status, 200)
			is.Equal(res.json(t)["error"].(map[string]any)["code"], c.code)
		})
	}
}

func TestJobTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("process groups")
	}
	// The agent must start, fork its sleeper and report it within the timeout.
	e := newEnv(t, withBridge("  job-timeout: 3s\n"))
	is := is.New(t)
	tok := e.token("ide", "read,submit,control")
	id := e.submit(tok, map[string]any{"prompt": "#hang #ignore-term", "profile": "claude"})
	job := e.waitState(tok, id, "failed")
	is.Equal(job["lastError"].(map[string]any)["code"], "job_timeout")
	// The fake agent reported the pid of the child it spawned; it must be gone.
	audit := e.do("GET", "/v1/bridge/jobs/"+id+"/audit?includePayloads=true", tok, nil).json(t)
	pid := childPID(audit)
	is.True(pid > 0)
	deadline := time.Now().Add(20 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	is.True(!processAlive(pid))
}

func TestCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("process groups")
	}
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit,control")
	id := e.submit(tok, map[string]any{"prompt": "#hang", "profile": "codex"})
	e.waitState(tok, id, "running")
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		pid = childPID(e.do("GET", "/v1/bridge/jobs/"+id+"/audit?includePayloads=true", tok, nil).json(t))
		time.Sleep(20 * time.Millisecond)
	}
	is.True(pid > 0)
	is.True(processAlive(pid))
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/cancel", tok, "{}").Status, 200)
	deadline = time.Now().Add(20 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	is.True(!processAlive(pid))
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+id, tok, nil).json(t)["state"], "cancelled")
}

// childPID finds the pid the fake agent's #hang reports in a raw line.
func childPID(audit map[string]any) int {
	for _, en := range audit["entries"].([]any) {
		m := en.(map[string]any)
		payload, _ := json.Marshal(m["payload"])
		s := string(payload)
		for _, marker := range []string{`fake_child`, `fake.child`} {
			if strings.Contains(s, marker) {
				var p struct {
					Raw struct {
						PID int `json:"pid"`
					} `json:"raw"`
				}
				_ = json.Unmarshal(payload, &p)
				if p.Raw.PID > 0 {
					return p.Raw.PID
				}
			}
		}
	}
	return 0
}

func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie still answers signal 0; it is dead for our purpose.
	data, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err == nil {
		fields := strings.Fields(string(data))
		if len(fields) > 2 && fields[2] == "Z" {
			return false
		}
	}
	return true
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestRestartKeepsQueuedAndInterruptsRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withBridge("  max-concurrent-jobs: 1\n"))
	is := is.New(t)
	tok := e.token("ide", "read,submit,control")
	running := e.submit(tok, map[string]any{"prompt": "#hang", "profile": "claude"})
	e.waitState(tok, running, "running")
	queued := e.submit(tok, map[string]any{"prompt": "after restart"})
	paused := e.submit(tok, map[string]any{"prompt": "held"})
	e.do("POST", "/v1/bridge/jobs/"+paused+"/pause", tok, "{}")

	e.restart()
	job := e.waitState(tok, running, "interrupted")
	is.Equal(job["lastError"].(map[string]any)["code"], "daemon_restarted")
	e.waitState(tok, queued, "succeeded") // accepted work is not lost
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+paused, tok, nil).json(t)["state"], "paused")
	// Interrupted jobs are retryable.
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+running+"/retry", tok, "{}").Status, 202)
}
