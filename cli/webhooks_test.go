package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"
	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/ingest"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

// webhookDaemon serves the ingest service like a running daemon would: a
// data directory with daemon.json and owner.token, /health/ready, and the
// ingest routes over a real store and broker.
type webhookDaemon struct {
	dir string
	url string
}

func startWebhookDaemon(t *testing.T) *webhookDaemon {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(dir, daemon.DatabaseFile), ingest.Migrations(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(filepath.Join(dir, daemon.EventsFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.NewBolt(bdb, broker.BoltOptions{MaxMessageBytes: 1<<20 + ingest.MaxEnvelopeOverhead})
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
	cfg, err := config.Parse("config.yaml", []byte("platform:\n  webhooks:\n    processors:\n      github:\n        secret: s3cret\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.LookupEnv = func(string) (string, bool) { return "", false }
	svc, err := ingest.New(daemon.Deps{DataDir: dir, DB: db, Broker: b, Config: cfg, IsOwner: func(r *http.Request) bool {
		got, ok := daemon.BearerToken(r)
		return ok && got == tok
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
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
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		svc.Close()
		b.Close()
		bdb.Close()
		db.Close()
	})
	return &webhookDaemon{dir: dir, url: srv.URL}
}

func (d *webhookDaemon) post(t *testing.T, provider, body string, kv ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.url+"/api/v1/webhook/"+provider, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// runWebhooks runs `webhooks args...` against the data directory.
func runWebhooks(ctx context.Context, dir string, args ...string) (stdout, stderr string, err error) {
	var out, errw syncBuffer
	a := &app{out: &out, errw: &errw, dataDir: dir}
	cmd := a.webhooksCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(ctx)
	return out.String(), errw.String(), err
}

// syncBuffer is a buffer safe for concurrent writers and readers; onWrite,
// when set, sees the whole text after each write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	onWrite func(text string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.onWrite != nil {
		s.onWrite(s.b.String())
	}
	return n, err
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestWebhooksDLQListAndReplay(t *testing.T) {
	is := is.New(t)
	d := startWebhookDaemon(t)
	is.Equal(d.post(t, "github", ""), 400)     // empty body
	is.Equal(d.post(t, "Bad_Name", "{}"), 400) // invalid provider
	is.Equal(d.post(t, "stripe", "{}", "Content-Type", "text/plain"), 415)

	var items []deadLetter
	deadline := time.Now().Add(10 * time.Second)
	for len(items) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("dead letters not listed: %v", items)
		}
		out, _, err := runWebhooks(context.Background(), d.dir, "dlq", "list", "--json")
		is.NoErr(err)
		items = nil
		is.NoErr(json.Unmarshal([]byte(out), &items))
		time.Sleep(10 * time.Millisecond)
	}
	out, _, err := runWebhooks(context.Background(), d.dir, "dlq", "list")
	is.NoErr(err)
	is.True(strings.Contains(out, "EVENT ID"))
	is.True(strings.Contains(out, "empty_body"))
	is.True(strings.Contains(out, "unsupported_content_type"))
	out, _, err = runWebhooks(context.Background(), d.dir, "dlq", "list", "--limit", "1", "--json")
	is.NoErr(err)
	var one []deadLetter
	is.NoErr(json.Unmarshal([]byte(out), &one))
	is.Equal(len(one), 1)

	var stripe deadLetter
	for _, e := range items {
		if e.Provider == "stripe" {
			stripe = e
		}
	}
	out, _, err = runWebhooks(context.Background(), d.dir, "dlq", "replay", stripe.EventID)
	is.NoErr(err)
	is.True(strings.Contains(out, "replayed "+stripe.EventID))
	// --all replays the remaining replayable one (github); the invalid
	// provider cannot be replayed and is skipped.
	out, _, err = runWebhooks(context.Background(), d.dir, "dlq", "replay", "--all")
	is.NoErr(err)
	is.True(strings.Contains(out, "1 replayed, 0 failed"))
	_, _, err = runWebhooks(context.Background(), d.dir, "dlq", "replay", "no-such-event")
	is.True(err != nil && strings.Contains(err.Error(), "404"))

	for _, args := range [][]string{{"dlq", "replay"}, {"dlq", "replay", "x", "--all"}, {"dlq", "replay", "x", "--provider", "p"}, {"dlq", "list", "--limit", "0"}} {
		_, _, err := runWebhooks(context.Background(), d.dir, args...)
		var ee *exitError
		if err == nil || !errorsAs(err, &ee) || ee.code != ExitUsage {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestWebhooksTail(t *testing.T) {
	is := is.New(t)
	d := startWebhookDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct{ err error }
	done := make(chan result, 1)
	var out syncBuffer
	go func() {
		a := &app{out: &out, errw: &syncBuffer{}, dataDir: d.dir}
		cmd := a.webhooksCmd()
		cmd.SetArgs([]string{"tail", "--provider", "github"})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		done <- result{err: cmd.ExecuteContext(ctx)}
	}()
	body := `{"hello":"world"}`
	m := hmac.New(sha256.New, []byte("s3cret"))
	m.Write([]byte(body))
	sig := "sha256=" + hex.EncodeToString(m.Sum(nil))
	deadline := time.Now().Add(10 * time.Second)
	// Post until tail shows an event accepted and one verified: tail shows
	// only what happens after it connects, which may be between the two.
	for !strings.Contains(out.String(), "verified") || !strings.Contains(out.String(), "accepted") {
		if time.Now().After(deadline) {
			t.Fatalf("tail showed: %q", out.String())
		}
		is.Equal(d.post(t, "github", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "cli-"+time.Now().String()), 202)
		is.Equal(d.post(t, "stripe", body), 202) // filtered out
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	r := <-done
	is.NoErr(r.err) // Ctrl-C is a normal end
	text := out.String()
	is.True(strings.Contains(text, "accepted"))
	is.True(strings.Contains(text, "delivery=cli-"))
	is.True(!strings.Contains(text, "stripe"))
}

func TestWebhooksNotRunning(t *testing.T) {
	_, _, err := runWebhooks(context.Background(), t.TempDir(), "dlq", "list")
	var ee *exitError
	if !errorsAs(err, &ee) || ee.code != ExitNotRunning {
		t.Fatalf("%v", err)
	}
}

func TestWebhooksHelpHasExamples(t *testing.T) {
	a := &app{}
	stack := []*cobraCommand{a.webhooksCmd()}
	for len(stack) > 0 {
		c := stack[0]
		stack = stack[1:]
		if !strings.Contains(c.Example, "bridge webhooks") {
			t.Errorf("%s: no Example", c.CommandPath())
		}
		stack = append(stack, c.Commands()...)
	}
}

func TestReadSSE(t *testing.T) {
	is := is.New(t)
	var got []string
	err := readSSE(strings.NewReader(": hi\n\nevent: activity\ndata: {\"a\":1}\n\ndata: x\ndata: y\n\nevent: lagged\n"), func(e, d string) error {
		got = append(got, e+"="+d)
		return nil
	})
	is.NoErr(err)
	is.Equal(got, []string{`activity={"a":1}`, "message=x\ny"})
}

type cobraCommand = cobra.Command

func errorsAs(err error, target any) bool { return errors.As(err, target) }
