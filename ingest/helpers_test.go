package ingest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
	"github.com/agentbridge/bridge/store/secretbox"
)

const (
	testOwnerToken = "owner-token-for-tests"
	testSecret     = "It's a Secret to Everybody"
)

// harness runs the service over a real SQLite store and Bolt broker in a
// temporary directory, behind an httptest server.
type harness struct {
	t      *testing.T
	dir    string
	db     *store.DB
	bdb    *bolt.DB
	broker broker.Broker
	svc    *Service
	srv    *httptest.Server
}

type harnessOpt struct {
	yaml    string
	env     map[string]string
	wrap    func(broker.Broker) broker.Broker // e.g. inject publish failures
	noStart bool
	logger  *slog.Logger
}

// testBroker opens a Bolt broker whose messages can hold a full payload.
func openBroker(t testing.TB, path string) (*bolt.DB, *broker.Bolt) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.NewBolt(bdb, broker.BoltOptions{
		MaxMessageBytes: 1<<20 + MaxEnvelopeOverhead,
		DeliveryOptions: broker.DeliveryOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
		CommitInterval:  10 * time.Millisecond,
		// As the daemon publishes (daemon.JournalFile).
		JournalPath: filepath.Join(filepath.Dir(path), "events.journal"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return bdb, b
}

func openDB(t testing.TB, path string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), path, Migrations(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func newHarness(t *testing.T, o harnessOpt) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir()}
	h.db = openDB(t, filepath.Join(h.dir, "bridge.db"))
	var b *broker.Bolt
	h.bdb, b = openBroker(t, filepath.Join(h.dir, "events.bolt"))
	h.broker = b
	if o.wrap != nil {
		h.broker = o.wrap(b)
	}
	f, err := config.Parse("test.yaml", []byte(o.yaml))
	if err != nil {
		t.Fatal(err)
	}
	setEnv(f, o.env)
	box, err := secretbox.Open(context.Background(), h.dir, secretbox.Options{DisableKeyring: true})
	if err != nil {
		t.Fatal(err)
	}
	h.svc, err = New(daemon.Deps{
		DataDir: h.dir, DB: h.db, Broker: h.broker, Config: f, Box: box, Logger: o.logger,
		IsOwner: func(r *http.Request) bool {
			tok, ok := daemon.BearerToken(r)
			return ok && tok == testOwnerToken
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.svc.pub.sleep = func(context.Context, time.Duration) error { return nil }
	ctx, cancel := context.WithCancel(context.Background())
	if !o.noStart {
		if err := h.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	router := httprouter.New()
	router.HandleMethodNotAllowed = false
	h.svc.Routes(router)
	h.srv = httptest.NewServer(httpx.WithRequestID("X-Request-ID", router))
	t.Cleanup(func() {
		h.srv.Close()
		cancel()
		if err := h.svc.Close(); err != nil {
			t.Error(err)
		}
		b.Close()
		h.bdb.Close()
		h.db.Close()
	})
	return h
}

// post sends body to the webhook endpoint with headers (key, value pairs).
func (h *harness) post(provider string, body []byte, kv ...string) *http.Response {
	return h.do(http.MethodPost, "/api/v1/webhook/"+provider, body, kv...)
}

func (h *harness) do(method, path string, body []byte, kv ...string) *http.Response {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// owner calls a management route with the owner token and decodes JSON.
func (h *harness) owner(method, path string, out any) int {
	h.t.Helper()
	resp := h.do(method, path, nil, "Authorization", "Bearer "+testOwnerToken)
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			h.t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

type problem struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// readProblem checks resp is a problem+json with status and returns it.
func readProblem(t *testing.T, resp *http.Response, status int) problem {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != status {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Status != status || p.Code == "" || p.Message == "" || p.RequestID == "" {
		t.Fatalf("incomplete problem %+v", p)
	}
	return p
}

func readAck(t *testing.T, resp *http.Response) Ack {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, want 202: %s", resp.StatusCode, b)
	}
	var a Ack
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.Status != "accepted" || a.EventID == "" {
		t.Fatalf("bad ack %+v", a)
	}
	return a
}

// read returns every message of topic.
func (h *harness) read(topic string) []broker.Message {
	h.t.Helper()
	r, ok := h.broker.(broker.Reader)
	if !ok {
		r = h.broker.(interface{ Unwrap() broker.Broker }).Unwrap().(broker.Reader)
	}
	msgs, err := r.Read(context.Background(), topic, 0, 10000)
	if err != nil {
		h.t.Fatal(err)
	}
	return msgs
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dlqEntry waits for eventID's dead letter to be indexed.
func (h *harness) dlqEntry(eventID string) DLQEntry {
	h.t.Helper()
	var e DLQEntry
	waitFor(h.t, "dead letter "+eventID, func() bool {
		var err error
		e, err = h.svc.DeadLetter(context.Background(), eventID)
		return err == nil
	})
	return e
}

// record waits for eventID's processing record.
func (h *harness) record(eventID string) Record {
	h.t.Helper()
	var rec Record
	waitFor(h.t, "record of "+eventID, func() bool {
		var ok bool
		var err error
		rec, ok, err = h.svc.Record(context.Background(), eventID)
		if err != nil {
			h.t.Fatal(err)
		}
		return ok
	})
	return rec
}

func githubSig(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// flakyBroker fails the first n Publish calls to topics matching match.
type flakyBroker struct {
	broker.Broker
	mu    sync.Mutex
	fails int
	err   error
	match func(topic string) bool
	calls int
	sizes []int // messages per Publish call
}

func (f *flakyBroker) Unwrap() broker.Broker { return f.Broker }

func (f *flakyBroker) Publish(ctx context.Context, msgs ...broker.Message) error {
	f.mu.Lock()
	f.calls++
	f.sizes = append(f.sizes, len(msgs))
	hit := f.fails > 0 && len(msgs) > 0 && (f.match == nil || f.match(msgs[0].Topic))
	if hit {
		f.fails--
	}
	err := f.err
	f.mu.Unlock()
	if hit {
		return err
	}
	return f.Broker.Publish(ctx, msgs...)
}

func notDLQ(topic string) bool { return !strings.HasSuffix(topic, ".dlq") }

type brokerT = broker.Broker

var (
	errServerish = errors.New("disk on fire")
	errTooLarge  = fmt.Errorf("publish: %w", broker.ErrMessageTooLarge)
)

type sqlTx = sql.Tx

func brokerMessage(topic string, h map[string]string, v []byte) broker.Message {
	return broker.Message{Topic: topic, Headers: h, Value: v}
}

func mustParse(t testing.TB, yaml string, env map[string]string) *config.File {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	setEnv(f, env)
	return f
}

// setEnv makes env the whole environment f sees.
func setEnv(f *config.File, env map[string]string) {
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f.Environ = func() []string {
		out := make([]string, 0, len(env))
		for k, v := range env {
			out = append(out, k+"="+v)
		}
		return out
	}
}

// depsFor returns deps over a fresh store and broker, closed at cleanup.
func depsFor(t testing.TB, f *config.File) daemon.Deps {
	dir := t.TempDir()
	db := openDB(t, filepath.Join(dir, "bridge.db"))
	bdb, b := openBroker(t, filepath.Join(dir, "events.bolt"))
	t.Cleanup(func() { b.Close(); bdb.Close(); db.Close() })
	return daemon.Deps{DataDir: dir, DB: db, Broker: b, Config: f}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
