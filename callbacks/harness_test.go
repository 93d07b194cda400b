package callbacks

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
	"github.com/agentbridge/bridge/store/secretbox"
)

const testToken = "test-owner-token"

// fastYAML is the test configuration: loopback allowed explicitly (the
// receivers are httptest servers on 127.0.0.1) and tiny retry delays.
const fastYAML = `
platform:
  callbacks:
    ssrf:
      allow-loopback: true
    retry:
      initial-delay-ms: 5
      max-delay-ms: 20
`

// harness runs a Service on a temporary data directory with the real
// SQLite store, bbolt broker and secret box, behind an httptest server.
type harness struct {
	t      testing.TB
	dir    string
	yaml   string
	env    map[string]string
	db     *store.DB
	bdb    *bolt.DB
	broker *broker.Bolt
	box    *secretbox.Box
	svc    *Service
	srv    *httptest.Server

	mu       sync.Mutex
	recorded []*outcome

	// extraMigs and mount add another subsystem on the same stores and
	// router (the ingestion service in the done-when test); mount returns
	// its closer.
	logger    *slog.Logger // nil: discard
	extraMigs []store.Migration
	mount     func(h *harness, r *httprouter.Router) func()
	unmount   func()
}

func newHarness(t testing.TB, yaml string, env map[string]string) *harness {
	t.Helper()
	return startHarness(&harness{t: t, dir: t.TempDir(), yaml: yaml, env: env})
}

func startHarness(h *harness) *harness {
	t := h.t
	t.Helper()
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *harness) open() {
	t := h.t
	t.Helper()
	ctx := context.Background()
	var err error
	h.bdb, err = bolt.Open(filepath.Join(h.dir, "events.bolt"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h.broker, err = broker.NewBolt(h.bdb, broker.BoltOptions{
		DeliveryOptions: broker.DeliveryOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.db, err = store.Open(ctx, filepath.Join(h.dir, "bridge.db"), append(Migrations(), h.extraMigs...), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.box, err = secretbox.Open(ctx, h.dir, secretbox.Options{DisableKeyring: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse("test.yaml", []byte(h.yaml))
	if err != nil {
		t.Fatal(err)
	}
	f.LookupEnv = func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }
	h.svc, err = New(daemon.Deps{
		DataDir: h.dir, DB: h.db, Broker: h.broker, Config: f, Logger: h.logger,
		IsOwner: func(r *http.Request) bool {
			tok, ok := daemon.BearerToken(r)
			return ok && tok == testToken
		},
	}, h.box)
	if err != nil {
		t.Fatal(err)
	}
	h.svc.onRecorded = func(o *outcome) {
		h.mu.Lock()
		h.recorded = append(h.recorded, o)
		h.mu.Unlock()
	}
	router := httprouter.New()
	h.svc.Routes(router)
	if h.mount != nil {
		h.unmount = h.mount(h, router)
	}
	h.srv = httptest.NewServer(httpx.WithRequestID("X-Request-ID", router))
	if err := h.svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) close() {
	if h.svc == nil {
		return
	}
	h.srv.Close()
	if h.unmount != nil {
		h.unmount()
	}
	if err := h.svc.Close(); err != nil {
		h.t.Errorf("close service: %v", err)
	}
	h.broker.Close()
	h.bdb.Close()
	h.db.Close()
	h.svc = nil
}

// restart closes everything and opens the same data directory again.
func (h *harness) restart() {
	h.close()
	h.open()
}

// call sends a JSON request with the owner token and decodes the answer.
func (h *harness) call(method, path string, body any, out any) (int, http.Header, []byte) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, resp.Header, data
}

// must calls and fails the test unless the status is want.
func (h *harness) must(want int, method, path string, body any, out any) []byte {
	h.t.Helper()
	status, _, data := h.call(method, path, body, out)
	if status != want {
		h.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	return data
}

func (h *harness) authorize(domain string) AuthorizedDomain {
	var d AuthorizedDomain
	h.must(201, "POST", pathDomains, map[string]any{"domain": domain}, &d)
	return d
}

func (h *harness) createConfig(in map[string]any) Configuration {
	h.t.Helper()
	var c Configuration
	h.must(201, "POST", pathConfigs, in, &c)
	return c
}

func (h *harness) createSub(in map[string]any) EventSubscription {
	h.t.Helper()
	var s EventSubscription
	h.must(201, "POST", pathSubscriptions, in, &s)
	return s
}

// publish puts an event on a topic the way ingestion does.
func (h *harness) publish(topic, eventType, eventID string, payload string) {
	h.t.Helper()
	hdr := map[string]string{"event-type": eventType}
	if eventID != "" {
		hdr["event-id"] = eventID
	}
	if err := h.broker.Publish(context.Background(), broker.Message{Topic: topic, Headers: hdr, Value: []byte(payload)}); err != nil {
		h.t.Fatal(err)
	}
}

// executions returns every execution matching filters, oldest first.
func (h *harness) executions(filters ...FieldFilter) []Execution {
	h.t.Helper()
	size := 500
	var page PaginationResponse[Execution]
	h.must(200, "POST", pathExecutions+"/filter", FilterRequest{
		Filters: filters, Size: &size, Sort: []SortOrder{{Field: "createdAt"}, {Field: "attempt"}},
	}, &page)
	return page.Content
}

func eqFilter(field string, v any) FieldFilter {
	data, _ := json.Marshal(v)
	return FieldFilter{Field: field, Operator: "eq", Value: data}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// receiver is a local endpoint that records deliveries and answers with
// what respond says.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []delivery
	respond func(n int, r *http.Request) (int, http.Header, string)
}

type delivery struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newReceiver(t testing.TB, respond func(n int, r *http.Request) (int, http.Header, string)) *receiver {
	rc := &receiver{respond: respond}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{at: time.Now(), header: r.Header.Clone(), body: body})
		n := len(rc.got)
		rc.mu.Unlock()
		status, hdr, text := 200, http.Header(nil), "ok"
		if rc.respond != nil {
			status, hdr, text = rc.respond(n, r)
		}
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func newIs(t *testing.T) *is.I { return is.New(t) }
