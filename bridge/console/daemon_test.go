package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge/console"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/wire"
)

// daemonEnv is the real daemon on loopback ports with a temporary data
// directory.
type daemonEnv struct {
	t                *testing.T
	dir              string
	d                *daemon.Daemon
	bridge, services string
	owner            string
}

func startDaemon(t *testing.T, dir, yaml string) *daemonEnv {
	t.Helper()
	file, err := config.Parse("config.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	file.LookupEnv = func(string) (string, bool) { return "", false }
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	d, err := daemon.Start(context.Background(), wire.OptionsWith(daemon.Options{DataDir: dir, Config: cfg, File: file, DisableKeyring: true}, wire.BridgeOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown() })
	owner, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return &daemonEnv{t: t, dir: dir, d: d, bridge: d.State().BridgeURL, services: d.State().ServicesURL, owner: owner}
}

type res struct {
	status int
	body   map[string]any
}

func call(t *testing.T, hc *http.Client, method, url, bearer, body string, hdr map[string]string) res {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := res{status: resp.StatusCode}
	_ = json.Unmarshal(data, &r.body)
	return r
}

func (e *daemonEnv) signIn(hc *http.Client) string {
	e.t.Helper()
	code := call(e.t, http.DefaultClient, "POST", e.bridge+"/console/api/codes", e.owner, "", nil)
	if code.status != 201 {
		e.t.Fatalf("code: %v", code)
	}
	r := call(e.t, hc, "POST", e.bridge+"/console/api/session", "", `{"code":"`+code.body["code"].(string)+`"}`, nil)
	if r.status != 200 {
		e.t.Fatalf("sign in: %v", r)
	}
	return r.body["csrf"].(string)
}

func jar() *http.Client {
	j, _ := cookiejar.New(nil)
	return &http.Client{Jar: j, Timeout: 30 * time.Second}
}

// TestConsoleOnTheDaemon: the console is served on the bridge listener; a
// session reaches the bridge, the callbacks/ingest APIs (owner token) and the
// platform (the local operator's sign-in); client tokens are refused; and
// revoking the owner or restarting the daemon ends the session.
func TestConsoleOnTheDaemon(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	e := startDaemon(t, dir, "bridge:\n  profiles:\n    default: {provider: echo}\n")
	hc := jar()
	page := call(t, hc, "GET", e.bridge+"/console/", "", "", nil)
	is.Equal(page.status, 200)

	// A client token neither gets a code nor signs in.
	tok := call(t, http.DefaultClient, "POST", e.bridge+"/v1/bridge/admin/tokens", e.owner, `{"id":"ide","profiles":["default"],"scopes":["read","submit","control"]}`, nil)
	is.Equal(tok.status, 201)
	client := tok.body["token"].(string)
	is.Equal(call(t, http.DefaultClient, "POST", e.bridge+"/console/api/codes", client, "", nil).status, 403)
	is.Equal(call(t, hc, "POST", e.bridge+"/console/api/session", "", `{"token":"`+client+`"}`, nil).status, 401)
	is.Equal(call(t, hc, "GET", e.bridge+"/console/api/bridge/status", "", "", nil).status, 401)

	csrf := e.signIn(hc)
	st := call(t, hc, "GET", e.bridge+"/console/api/bridge/status", "", "", nil)
	is.Equal(st.status, 200)
	is.Equal(st.body["client"], "owner")
	is.Equal(call(t, hc, "GET", e.bridge+"/console/api/services/api/v1/webhook-dlq", "", "", nil).status, 200)
	is.Equal(call(t, hc, "GET", e.bridge+"/console/api/services/api/v1/callback-configurations", "", "", nil).status, 200)
	id := call(t, hc, "GET", e.bridge+"/console/api/services/api/v1/identity", "", "", nil)
	is.Equal(id.status, 200) // the platform, as the local operator
	is.Equal(id.body["name"], "Local operator")

	// A job through the gateway needs the CSRF token.
	is.Equal(call(t, hc, "POST", e.bridge+"/console/api/bridge/jobs", "", `{"prompt":"hi"}`, nil).status, 403)
	job := call(t, hc, "POST", e.bridge+"/console/api/bridge/jobs", "", `{"prompt":"hi"}`, map[string]string{console.CSRFHeader: csrf})
	is.Equal(job.status, 202)
	is.Equal(job.body["client"], "owner")

	// An event stream through the gateway lives as long as the session.
	sreq, _ := http.NewRequest("GET", e.bridge+"/console/api/bridge/events", nil)
	stream, err := hc.Do(sreq)
	is.NoErr(err)
	defer stream.Body.Close()
	is.Equal(stream.StatusCode, 200)
	closed := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, stream.Body); closed <- err }()

	// bridge revoke --id owner signs the browser out.
	rv := call(t, http.DefaultClient, "DELETE", e.bridge+"/v1/bridge/admin/clients/owner", e.owner, "", nil)
	is.Equal(rv.status, 200)
	is.Equal(rv.body["endedSessions"], float64(1))
	is.Equal(call(t, hc, "GET", e.bridge+"/console/api/bridge/status", "", "", nil).status, 401)

	// A restart ends sessions too: they live in memory only.
	// The cookie's name carries the port, so the old session id is sent
	// under the new listener's name to show the new daemon does not know it.
	e.signIn(hc)
	u, _ := url.Parse(e.bridge + "/console/")
	cookies := hc.Jar.Cookies(u)
	is.Equal(len(cookies), 1)
	is.NoErr(e.d.Shutdown())
	e2 := startDaemon(t, dir, "bridge:\n  profiles:\n    default: {provider: echo}\n")
	u2, _ := url.Parse(e2.bridge)
	r := call(t, http.DefaultClient, "GET", e2.bridge+"/console/api/session", "", "", map[string]string{"Cookie": "bridge_console_" + u2.Port() + "=" + cookies[0].Value})
	is.Equal(r.status, 401)
}
