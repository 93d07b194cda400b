package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/wire"
)

// env is a daemon started by `bridge serve`'s code path, with profiles that
// point at the fake agent.
type env struct {
	t      testing.TB
	dir    string
	d      *daemon.Daemon
	url    string
	owner  string
	claude string
	codex  string
	yaml   string
}

type envOpt func(*envConfig)

type envConfig struct {
	extra    string // extra lines for the bridge section
	capacity int
}

func withBridge(lines string) envOpt { return func(c *envConfig) { c.extra += lines } }
func withCapacity(n int) envOpt      { return func(c *envConfig) { c.capacity = n } }

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), opts...)
}

// newEnvIn starts a daemon on an existing data directory.
func newEnvIn(t testing.TB, dir string, opts ...envOpt) *env {
	t.Helper()
	e := &env{t: t, dir: dir}
	// The agents' links live in the data directory: a crash child, which is
	// SIGKILLed, would leave a temporary directory of its own behind.
	binDir, err := os.MkdirTemp(dir, "agents-")
	if err != nil {
		t.Fatal(err)
	}
	e.claude, e.codex = providertest.BuildFakeAgent(t, binDir)
	var c envConfig
	for _, o := range opts {
		o(&c)
	}
	defaults := ""
	for _, line := range []string{"  inactivity-timeout: 5s\n", "  heartbeat: 200ms\n"} {
		key, _, _ := strings.Cut(line, ":")
		if !strings.Contains(c.extra, key+":") {
			defaults += line
		}
	}
	e.yaml = fmt.Sprintf(`bridge:
%s%s  profiles:
    default: {provider: echo}
    claude: {provider: claude, command: %q}
    codex: {provider: codex, command: %q}
`, defaults, c.extra, e.claude, e.codex)
	e.capacity(c.capacity)
	e.start()
	return e
}

func (e *env) capacity(n int) {
	if n > 0 {
		e.yaml += fmt.Sprintf("events:\n  capacity: %d\n", n)
	}
}

func (e *env) start() {
	e.t.Helper()
	file, err := config.Parse("config.yaml", []byte(e.yaml))
	if err != nil {
		e.t.Fatal(err)
	}
	file.LookupEnv = func(string) (string, bool) { return "", false }
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	if err := file.Decode("events", &cfg.Events); err != nil {
		e.t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), wire.Options(daemon.Options{DataDir: e.dir, Config: cfg, File: file, Build: daemon.BuildInfo{Version: "test"}, DisableKeyring: true}))
	if err != nil {
		e.t.Fatal(err)
	}
	e.d = d
	e.url = d.State().BridgeURL
	e.owner, err = daemon.ReadOwnerToken(filepath.Join(e.dir, daemon.OwnerTokenFile))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { d.Shutdown() })
}

// restart stops the daemon cleanly and starts a new one on the same directory.
func (e *env) restart() {
	e.t.Helper()
	if err := e.d.Shutdown(); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r resp) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return m
}

// code returns error.code of a bridge error body.
func (r resp) code() string {
	var m struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &m)
	return m.Error.Code
}

func (e *env) do(method, path, token string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1] // Go sends req.Host, not Header["Host"]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	r, err := send(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// send does req and reads the whole answer; it may run in any goroutine.
func send(req *http.Request) (resp, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return resp{Status: res.StatusCode, Header: res.Header, Body: data}, nil
}

// token mints a client token through the owner API.
func (e *env) token(id string, scopes string, profiles ...string) string {
	e.t.Helper()
	if len(profiles) == 0 {
		profiles = []string{"*"}
	}
	r := e.do("POST", "/v1/bridge/admin/tokens", e.owner, map[string]any{"id": id, "scopes": strings.Split(scopes, ","), "profiles": profiles})
	if r.Status != 201 {
		e.t.Fatalf("mint token: %d %s", r.Status, r.Body)
	}
	return r.json(e.t)["token"].(string)
}

// submit creates a job and returns its id.
func (e *env) submit(tok string, body map[string]any) string {
	e.t.Helper()
	r := e.do("POST", "/v1/bridge/jobs", tok, body)
	if r.Status != 202 {
		e.t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	return r.json(e.t)["id"].(string)
}

// waitState polls a job until it reaches state.
func (e *env) waitState(tok, id string, states ...string) map[string]any {
	e.t.Helper()
	// Generous: TestSlowConsumerBlocksNobody waits here for the last of 250
	// jobs, 7 s alone under -race, more beside the package's parallel tests.
	deadline := time.Now().Add(60 * time.Second)
	var last map[string]any
	for time.Now().Before(deadline) {
		r := e.do("GET", "/v1/bridge/jobs/"+id, tok, nil)
		last = r.json(e.t)
		for _, s := range states {
			if last["state"] == s {
				return last
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("job %s did not reach %v; last %v", id, states, last)
	return nil
}

// sse is a connected event stream.
type sse struct {
	res    *http.Response
	events chan sseEvent
}

type sseEvent struct {
	ID, Event, Data string
}

func (e *env) stream(tok string, hdr ...string) (*sse, resp) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+"/v1/bridge/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return nil, resp{Status: res.StatusCode, Body: data}
	}
	s := &sse{res: res, events: make(chan sseEvent, 4096)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.Data != "" {
					s.events <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				cur.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.Data = line[6:]
			}
		}
	}()
	e.t.Cleanup(func() { res.Body.Close() })
	return s, resp{Status: 200}
}

// next waits for an event matching pred.
func (s *sse) next(t testing.TB, timeout time.Duration, pred func(sseEvent) bool) sseEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("stream closed")
			}
			if pred(ev) {
				return ev
			}
		case <-deadline:
			t.Fatal("timed out waiting for event")
		}
	}
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
