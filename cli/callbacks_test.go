package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"
	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/callbacks"
	cbclient "github.com/agentbridge/bridge/client/callbacks"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
	"github.com/agentbridge/bridge/store/secretbox"
)

// callbacksDaemon serves the callback service like a running daemon: a data
// directory with daemon.json and owner.token, /health/ready and the routes.
type callbacksDaemon struct {
	dir string
	url string
	tok string
	svc *callbacks.Service
}

func startCallbacksDaemon(t *testing.T) *callbacksDaemon {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, daemon.DatabaseFile), callbacks.Migrations(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(filepath.Join(dir, daemon.EventsFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.NewBolt(bdb, broker.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.Open(ctx, dir, secretbox.Options{DisableKeyring: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := daemon.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, daemon.OwnerTokenFile), []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("platform:\n  callbacks:\n    ssrf: {allow-loopback: true}\n    retry: {max-attempts: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.LookupEnv = func(string) (string, bool) { return "", false }
	svc, err := callbacks.New(daemon.Deps{DataDir: dir, DB: db, Broker: b, Config: cfg, IsOwner: func(r *http.Request) bool {
		got, ok := daemon.BearerToken(r)
		return ok && got == tok
	}}, box)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r := httprouter.New()
	r.GET("/health/ready", func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	svc.Routes(r)
	srv := httptest.NewServer(httpx.WithRequestID("X-Request-ID", r))
	st, _ := json.Marshal(daemon.State{PID: os.Getpid(), ServicesURL: srv.URL, BridgeURL: srv.URL, DataDir: dir, StartedAt: time.Now()})
	if err := daemon.WriteFileAtomic(filepath.Join(dir, daemon.DaemonFile), st, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		b.Close()
		bdb.Close()
		db.Close()
	})
	return &callbacksDaemon{dir: dir, url: srv.URL, tok: tok, svc: svc}
}

func (d *callbacksDaemon) api(t *testing.T, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// runCallbacks runs `callbacks args...` against the data directory.
func runCallbacks(ctx context.Context, dir string, args ...string) (stdout, stderr string, err error) {
	var out, errw bytes.Buffer
	a := &app{out: &out, errw: &errw, dataDir: dir}
	cmd := a.callbacksCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(ctx)
	return out.String(), errw.String(), err
}

func TestCallbacksExecutionsRetryReplay(t *testing.T) {
	is := is.New(t)
	d := startCallbacksDaemon(t)
	ctx := context.Background()
	var status atomic.Int32
	status.Store(500)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer recv.Close()

	out, _, err := runCallbacks(ctx, d.dir, "executions")
	is.NoErr(err)
	is.Equal(strings.TrimSpace(out), "no executions")

	d.api(t, "POST", "/api/v1/authorized-domains", `{"domain":"127.0.0.1"}`, nil)
	var cfg callbacks.Configuration
	d.api(t, "POST", "/api/v1/callback-configurations", `{"name":"cli","url":"`+recv.URL+`","subscribedEventTypes":["order.created"]}`, &cfg)
	_, err = d.svc.Dispatch(ctx, cfg.ID, "order.created", uuid.NewString(), json.RawMessage(`{"n":1}`))
	is.NoErr(err)

	var page callbacks.PaginationResponse[callbacks.Execution]
	deadline := time.Now().Add(10 * time.Second)
	for len(page.Content) == 0 || page.Content[0].State != callbacks.StateFailedPermanent {
		if time.Now().After(deadline) {
			t.Fatal("no FAILED_PERMANENT execution")
		}
		out, _, err = runCallbacks(ctx, d.dir, "executions", "--json", "--config", cfg.ID, "--state", "failed_permanent")
		is.NoErr(err)
		is.NoErr(json.Unmarshal([]byte(out), &page))
		time.Sleep(10 * time.Millisecond)
	}
	failed := page.Content[0]
	out, _, err = runCallbacks(ctx, d.dir, "executions", "--event-type", "order.created")
	is.NoErr(err)
	is.True(strings.Contains(out, "FAILED_PERMANENT"))
	is.True(strings.Contains(out, "HTTP_STATUS"))
	is.True(strings.Contains(out, failed.ID))
	out, _, err = runCallbacks(ctx, d.dir, "executions", "--state", "SUCCEEDED")
	is.NoErr(err)
	is.Equal(strings.TrimSpace(out), "no executions")

	status.Store(200)
	out, _, err = runCallbacks(ctx, d.dir, "retry", failed.ID)
	is.NoErr(err)
	is.True(strings.Contains(out, "retrying: new execution"))
	_, _, err = runCallbacks(ctx, d.dir, "retry", uuid.NewString())
	var ae *apiError
	is.True(errors.As(err, &ae))
	is.Equal(ae.Status, 404)

	out, _, err = runCallbacks(ctx, d.dir, "replay", "--since", "1h", "--config", cfg.ID, "--json")
	is.NoErr(err)
	var res callbacks.ReplayResult
	is.NoErr(json.Unmarshal([]byte(out), &res))
	is.Equal(res.Events, 1)
	is.Equal(res.Deliveries, 1)
	out, _, err = runCallbacks(ctx, d.dir, "replay", "--since", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "--limit", "1")
	is.NoErr(err)
	is.True(strings.Contains(out, "replayed 1 events: 1 deliveries scheduled"))

	deadline = time.Now().Add(10 * time.Second)
	for {
		out, _, err = runCallbacks(ctx, d.dir, "executions", "--state", "SUCCEEDED", "--json")
		is.NoErr(err)
		is.NoErr(json.Unmarshal([]byte(out), &page))
		if page.TotalElements == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry and replays not delivered: %d", page.TotalElements)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCallbacksUsageErrors(t *testing.T) {
	d := startCallbacksDaemon(t)
	for _, args := range [][]string{
		{"executions", "--state", "DONE"},
		{"executions", "--limit", "0"},
		{"executions", "--limit", "501"},
		{"replay", "--since", "yesterday"},
		{"replay", "--since", "-2h"},
		{"replay", "--since", "1h", "--until", "soon"},
		{"replay", "--since", "1h", "--limit", "10001"},
		{"retry"},
		{"retry", "a", "b"},
		{"replay"},
	} {
		_, _, err := runCallbacks(context.Background(), d.dir, args...)
		if err == nil {
			t.Errorf("%v: no error", args)
			continue
		}
		var ee *exitError
		if errors.As(err, &ee) && ee.code != ExitUsage {
			t.Errorf("%v: exit code %d", args, ee.code)
		}
	}
}

func TestCallbacksHelpHasExamples(t *testing.T) {
	a := &app{out: &bytes.Buffer{}, errw: &bytes.Buffer{}}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !strings.Contains(c.Example, "bridge callbacks") {
			t.Errorf("%s has no example", c.CommandPath())
		}
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil || !strings.Contains(out.String(), "Examples:") {
			t.Errorf("%s --help: %v\n%s", c.CommandPath(), err, out.String())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.callbacksCmd())
}

func TestCallbacksDaemonNotRunning(t *testing.T) {
	_, _, err := runCallbacks(context.Background(), t.TempDir(), "executions")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitNotRunning {
		t.Fatalf("err = %v", err)
	}
}

func TestParseSince(t *testing.T) {
	is := is.New(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	got, err := parseSince("2h", now)
	is.NoErr(err)
	is.Equal(got, now.Add(-2*time.Hour))
	got, err = parseSince("PT30M", now)
	is.NoErr(err)
	is.Equal(got, now.Add(-30*time.Minute))
	got, err = parseSince("2025-06-01T08:00:00Z", now)
	is.NoErr(err)
	is.Equal(got, time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC))
	for _, bad := range []string{"", "0s", "tomorrow", "2025-06-01"} {
		_, err := parseSince(bad, now)
		is.True(err != nil)
	}
}

// TestExecutionsTableShowsWholeErrors: the ERROR column is not cut, so the
// advice at the end of a message (which setting allows an address) shows.
func TestExecutionsTableShowsWholeErrors(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	a := &app{out: &out}
	msg := "connection to 127.0.0.1:9000 refused: loopback address (allow it with platform.callbacks.ssrf settings)"
	a.printExecutions(cbclient.PaginationResponse[cbclient.Execution]{Content: []cbclient.Execution{{
		ID: "e-1", State: "FAILED_PERMANENT", Attempt: 1, MaxAttempts: 3, ConfigurationName: "my receiver", EventType: "push",
		Error: &cbclient.ExecutionError{Code: "SSRF_BLOCKED", Message: msg}}}})
	is.True(strings.Contains(out.String(), "SSRF_BLOCKED: "+msg))
}
