package ingest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

const jsonCT = "application/json"

// jsonBody returns a valid JSON document of exactly n bytes.
func jsonBody(n int) []byte {
	b := bytes.Repeat([]byte("a"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

func TestAcceptPublishesEnvelope(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	body := []byte(`{"zen":"Keep it logically awesome."}`)
	resp := h.post("github", body, "Content-Type", "application/json; charset=utf-8",
		"User-Agent", "GitHub-Hookshot/abc", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", "sha256=00",
		"Authorization", "Bearer leaked", "Cookie", "c=1", "X-Forwarded-For", "1.2.3.4")
	is.Equal(resp.Header.Get("X-Webhook-Event-Id") != "", true)
	ack := readAck(t, resp)
	is.Equal(ack.Provider, "github")

	msgs := h.read("github") // published before the ack: no waiting
	is.Equal(len(msgs), 1)
	m := msgs[0]
	is.Equal(m.Key, ack.EventID)
	is.Equal(m.Value, body)
	env, err := ParseEnvelope(m)
	is.NoErr(err)
	is.Equal(env.ID, ack.EventID)
	is.Equal(env.Provider, "github")
	is.Equal(env.ContentType, "application/json; charset=utf-8")
	is.Equal(env.Size, len(body))
	is.True(env.ReceivedAt.Equal(ack.ReceivedAt))
	is.Equal(env.Header.Get("X-GitHub-Delivery"), "d-1")
	is.Equal(env.Header.Get("X-Hub-Signature-256"), "sha256=00")
	for _, k := range []string{"Authorization", "Cookie", "X-Forwarded-For", "User-Agent", "Content-Length"} {
		is.Equal(env.Header.Get(k), "") // never forwarded
	}
	is.Equal(env.Meta.UserAgent, "GitHub-Hookshot/abc")
	is.Equal(env.Meta.SourceIP, "127.0.0.1")
	is.Equal(env.Meta.Method, "POST")
	is.Equal(env.Meta.URI, "/api/v1/webhook/github")
	is.True(env.Meta.RequestID != "")
	is.Equal(m.Headers[hSource], "/api/v1/webhook/github")
	is.Equal(m.Headers[hSpecVersion], "1.0")
	is.Equal(len(h.read("webhooks.dlq")), 0)
}

func TestEnrichmentDisabled(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{yaml: "platform:\n  webhooks:\n    metadata-enrichment:\n      enabled: false\n"})
	readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT, "User-Agent", "ua"))
	m := h.read("github")[0]
	for _, k := range []string{hUserAgent, hSourceIP, hRequestID, hMethod, hURI, hHost} {
		_, ok := m.Headers[k]
		is.True(!ok)
	}
	env, err := ParseEnvelope(m)
	is.NoErr(err)
	is.Equal(env.Meta, Metadata{})
}

// rejected checks a refusal: problem+json, dead letter with the reason, and
// nothing published to any provider topic.
func rejected(t *testing.T, h *harness, resp *http.Response, status int, code, reason string, payloadKept bool) DLQEntry {
	t.Helper()
	eventID := resp.Header.Get("X-Webhook-Event-Id")
	if eventID != "" {
		t.Fatalf("a rejected request got an event id header")
	}
	p := readProblem(t, resp, status)
	if p.Code != code {
		t.Fatalf("code %q, want %q", p.Code, code)
	}
	var dl []DLQEntry
	waitFor(t, "dead letter "+reason, func() bool {
		var err error
		dl, err = h.svc.listDLQ(context.Background(), DLQFilter{}, nil, 500)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(dl, func(e DLQEntry) bool { return e.Reason == reason })
	})
	i := slices.IndexFunc(dl, func(e DLQEntry) bool { return e.Reason == reason })
	e := dl[i]
	if e.Stage != StageIngest || e.Status != status || e.Detail == "" {
		t.Fatalf("dead letter %+v", e)
	}
	if e.Replayable != payloadKept && e.Provider != "" {
		t.Fatalf("replayable %v, want %v (%+v)", e.Replayable, payloadKept, e)
	}
	topics, err := h.broker.Topics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics {
		if tp == "webhooks.dlq" {
			continue
		}
		for _, m := range h.read(tp) {
			if m.Headers[hID] == e.EventID {
				t.Fatalf("rejected event %s reached topic %s", e.EventID, tp)
			}
		}
	}
	return e
}

func TestPayloadSizeBounds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	const limit = 1 << 20

	readAck(t, h.post("github", jsonBody(limit), "Content-Type", jsonCT))
	msgs := h.read("github")
	is.Equal(len(msgs), 1)
	is.Equal(len(msgs[0].Value), limit)

	e := rejected(t, h, h.post("github", jsonBody(limit+1), "Content-Type", jsonCT), 413, "WH-PAYLOAD-TOO-LARGE", "payload_too_large", false)
	is.Equal(e.PayloadSize, limit+1)
	full, err := h.svc.DeadLetter(context.Background(), e.EventID)
	is.NoErr(err)
	is.Equal(full.Headers[hDLQPayload], "omitted")
	is.Equal(len(full.Payload), 0)
}

// Without Content-Length the limit is enforced while reading.
func TestPayloadSizeChunked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	send := func(n int) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/api/v1/webhook/github", io.MultiReader(bytes.NewReader(jsonBody(n))))
		req.ContentLength = -1
		req.Header.Set("Content-Type", jsonCT)
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	readAck(t, send(1<<20))
	rejected(t, h, send(1<<20+1), 413, "WH-PAYLOAD-TOO-LARGE", "payload_too_large", false)
}

func TestConfiguredPayloadLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{env: map[string]string{"PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE": "10"}})
	readAck(t, h.post("github", jsonBody(10), "Content-Type", jsonCT))
	rejected(t, h, h.post("github", jsonBody(11), "Content-Type", jsonCT), 413, "WH-PAYLOAD-TOO-LARGE", "payload_too_large", false)
}

func TestProviderNamePattern(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	for _, name := range []string{"a", "github", "my-provider-2", "0-9", strings.Repeat("a", maxProviderLen)} {
		readAck(t, h.post(name, []byte(`{}`), "Content-Type", jsonCT))
	}
	for _, name := range []string{"GitHub", "a_b", "a.b", "a%20b", "%C3%A9", "dlq!", strings.Repeat("a", maxProviderLen+1)} {
		resp := h.post(name, []byte(`{}`), "Content-Type", jsonCT)
		readProblem(t, resp, http.StatusBadRequest)
	}
	dl, err := h.svc.listDLQ(context.Background(), DLQFilter{}, nil, 500)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "7 dead letters", func() bool {
		dl, _ = h.svc.listDLQ(context.Background(), DLQFilter{}, nil, 500)
		return len(dl) == 7
	})
	for _, e := range dl {
		if e.Reason != "invalid_provider" || e.Replayable {
			t.Errorf("dead letter %+v", e)
		}
	}
	topics, _ := h.broker.Topics(context.Background())
	for _, tp := range topics {
		if tp != "webhooks.dlq" && !slices.Contains([]string{"a", "github", "my-provider-2", "0-9", strings.Repeat("a", maxProviderLen)}, tp) {
			t.Errorf("unexpected topic %q", tp)
		}
	}
}

// With name validation off, names are still refused when they would not
// make a valid topic or would target the dead-letter topic.
func TestProviderNameValidationOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{env: map[string]string{
		"PLATFORM_WEBHOOKS_SECURITY_VALIDATE_PROVIDER_NAME": "false",
		"PLATFORM_WEBHOOKS_TOPIC_PREFIX":                    "webhooks.",
	}})
	readAck(t, h.post("GitHub_App", []byte(`{}`), "Content-Type", jsonCT))
	if n := len(h.read("webhooks.GitHub_App")); n != 1 {
		t.Fatalf("%d messages", n)
	}
	readProblem(t, h.post("dlq", []byte(`{}`), "Content-Type", jsonCT), http.StatusBadRequest)
	readProblem(t, h.post("a%20b", []byte(`{}`), "Content-Type", jsonCT), http.StatusBadRequest)
}

func TestContentTypes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	for _, tc := range []struct{ ct, body string }{
		{"application/json", `{"a":1}`},
		{"application/json; charset=utf-8", `{"a":1}`},
		{"Application/JSON", `[1,2]`},
		{"application/x-www-form-urlencoded", "payload=%7B%22a%22%3A1%7D&x=1"},
		{"application/x-www-form-urlencoded; charset=utf-8", "a=b"},
	} {
		readAck(t, h.post("github", []byte(tc.body), "Content-Type", tc.ct))
	}
	if n := len(h.read("github")); n != 5 {
		t.Fatalf("%d published, want 5", n)
	}
	form := h.read("github")[3]
	if string(form.Value) != "payload=%7B%22a%22%3A1%7D&x=1" || form.Headers[hContentType] != "application/x-www-form-urlencoded" {
		t.Fatalf("form body published as %q (%q)", form.Value, form.Headers[hContentType])
	}
	e := rejected(t, h, h.post("github", []byte(`{"a":1}`), "Content-Type", "text/plain"), 415, "WH-UNSUPPORTED-MEDIA-TYPE", "unsupported_content_type", true)
	full, err := h.svc.DeadLetter(context.Background(), e.EventID)
	if err != nil || string(full.Payload) != `{"a":1}` {
		t.Fatalf("dead letter payload %q, %v", full.Payload, err)
	}
	rejected(t, h, h.post("github", []byte(`{"a":1}`)), 415, "WH-UNSUPPORTED-MEDIA-TYPE", "content_type_required", true)
	readProblem(t, h.post("github", []byte(`{}`), "Content-Type", "application/xml"), 415)
	readProblem(t, h.post("github", []byte(`{}`), "Content-Type", "application/json;;"), 415)
	readProblem(t, h.post("github", []byte(`{}`), "Content-Type", "multipart/form-data; boundary=x"), 415)
}

func TestContentTypeNotRequired(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{env: map[string]string{"PLATFORM_WEBHOOKS_SECURITY_REQUIRE_CONTENT_TYPE": "false"}})
	readAck(t, h.post("github", []byte("anything")))
	readProblem(t, h.post("github", []byte("x"), "Content-Type", "text/plain"), 415)
}

func TestEmptyAndMalformedBodies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	rejected(t, h, h.post("github", nil, "Content-Type", jsonCT), 400, "WH-EMPTY-BODY", "empty_body", true)
	rejected(t, h, h.post("github", []byte(`{"a":`), "Content-Type", jsonCT), 400, "WH-MALFORMED-BODY", "malformed_body", true)
	readProblem(t, h.post("github", []byte("a=%zz"), "Content-Type", "application/x-www-form-urlencoded"), 400)
	readProblem(t, h.post("github", []byte(" "), "Content-Type", jsonCT), 400)
}

func TestRequestValidationOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{env: map[string]string{"PLATFORM_WEBHOOKS_SECURITY_ENABLE_REQUEST_VALIDATION": "false"}})
	readAck(t, h.post("github", nil))
	readAck(t, h.do(http.MethodPut, "/api/v1/webhook/github", []byte("<x/>"), "Content-Type", "application/xml"))
	// Size still applies.
	readProblem(t, h.post("github", jsonBody(1<<20+1), "Content-Type", jsonCT), 413)
}

func TestMethods(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		resp := h.do(m, "/api/v1/webhook/github", []byte(`{}`), "Content-Type", jsonCT)
		if got := resp.Header.Get("Allow"); got != "POST" {
			t.Errorf("%s: Allow %q", m, got)
		}
		p := readProblem(t, resp, http.StatusMethodNotAllowed)
		if p.Code != "WH-METHOD-NOT-ALLOWED" {
			t.Errorf("%s: code %s", m, p.Code)
		}
	}
	resp := h.do(http.MethodHead, "/api/v1/webhook/github", nil)
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("HEAD: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	rejected(t, h, h.do(http.MethodGet, "/api/v1/webhook/github", nil), 405, "WH-METHOD-NOT-ALLOWED", "method_not_allowed", true)

	h2 := newHarness(t, harnessOpt{env: map[string]string{"PLATFORM_WEBHOOKS_SECURITY_ALLOWED_METHODS": "POST, put"}})
	readAck(t, h2.do(http.MethodPut, "/api/v1/webhook/github", []byte(`{}`), "Content-Type", jsonCT))
	resp = h2.do(http.MethodPatch, "/api/v1/webhook/github", []byte(`{}`), "Content-Type", jsonCT)
	if resp.Header.Get("Allow") != "POST, PUT" {
		t.Fatalf("Allow %q", resp.Header.Get("Allow"))
	}
	readProblem(t, resp, 405)
}

func TestIPAllowList(t *testing.T) {
	t.Parallel()
	yaml := `platform:
  webhooks:
    security:
      enable-ip-whitelist: true
    ip-whitelist:
      github: ["127.0.0.1"]
      stripe: ["127.0.0.0/8", "::1"]
      shopify: ["10.0.0.0/8", "192.0.2.1"]
`
	h := newHarness(t, harnessOpt{yaml: yaml})
	readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT))
	readAck(t, h.post("stripe", []byte(`{}`), "Content-Type", jsonCT))
	e := rejected(t, h, h.post("shopify", []byte(`{"x":1}`), "Content-Type", jsonCT), 403, "WH-SOURCE-NOT-ALLOWED", "source_not_allowed", true)
	if !strings.Contains(e.Detail, "127.0.0.1") {
		t.Fatalf("detail %q", e.Detail)
	}
	// A provider without entries accepts nobody.
	readProblem(t, h.post("slack", []byte(`{}`), "Content-Type", jsonCT), 403)
	// X-Forwarded-For from an untrusted peer is ignored.
	readProblem(t, h.post("shopify", []byte(`{}`), "Content-Type", jsonCT, "X-Forwarded-For", "10.1.2.3"), 403)
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	yaml := `platform:
  webhooks:
    rate-limit:
      limit-for-period: 2
      limit-refresh-period: PT10S
      providers:
        stripe:
          limit-for-period: 1
`
	h := newHarness(t, harnessOpt{yaml: yaml})
	readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT))
	readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT))
	resp := h.post("github", []byte(`{}`), "Content-Type", jsonCT)
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 5 {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	if p := readProblem(t, resp, http.StatusTooManyRequests); p.Code != "WH-RATE-LIMITED" {
		t.Fatal(p.Code)
	}
	// Per-provider buckets: stripe has its own (1 per 10 s).
	readAck(t, h.post("stripe", []byte(`{}`), "Content-Type", jsonCT))
	resp = h.post("stripe", []byte(`{}`), "Content-Type", jsonCT)
	if ra := resp.Header.Get("Retry-After"); ra != "10" {
		t.Fatalf("stripe Retry-After %q", ra)
	}
	readProblem(t, resp, 429)
	if n := len(h.read("github")); n != 2 {
		t.Fatalf("%d published", n)
	}
	// Rate-limited requests are not dead-lettered.
	if n := len(h.read("webhooks.dlq")); n != 0 {
		t.Fatalf("%d dead letters", n)
	}
}

func TestHeadersTooLarge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	big := strings.Repeat("x", maxForwardedHeader)
	rejected(t, h, h.post("github", []byte(`{}`), "Content-Type", jsonCT, "X-Big", big), 431, "WH-HEADERS-TOO-LARGE", "headers_too_large", true)
}

func TestTopicNaming(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env   map[string]string
		topic string
	}{
		{nil, "github"},
		{map[string]string{"PLATFORM_WEBHOOKS_TOPIC_PREFIX": "wh.", "PLATFORM_WEBHOOKS_TOPIC_SUFFIX": ".in"}, "wh.github.in"},
		{map[string]string{"PLATFORM_WEBHOOKS_TOPIC_PREFIX": "wh.", "PLATFORM_WEBHOOKS_TOPIC_SUFFIX": "all", "PLATFORM_WEBHOOKS_TOPIC_USE_PROVIDER_AS_TOPIC": "false"}, "wh.all"},
		{map[string]string{"PLATFORM_WEBHOOKS_TOPIC_PREFIX": "wh.", "PLATFORM_WEBHOOKS_TOPIC_CUSTOM": "inbound"}, "inbound"},
	} {
		h := newHarness(t, harnessOpt{env: tc.env})
		readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT))
		topics, _ := h.broker.Topics(context.Background())
		if !slices.Equal(topics, []string{tc.topic}) {
			t.Errorf("%v: topics %v, want %s", tc.env, topics, tc.topic)
		}
	}
}

func TestPublishRetryThenSuccess(t *testing.T) {
	t.Parallel()
	var fb *flakyBroker
	h := newHarness(t, harnessOpt{wrap: func(b brokerT) brokerT {
		fb = &flakyBroker{Broker: b, fails: 2, err: errServerish, match: notDLQ}
		return fb
	}})
	readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT))
	if fb.calls != 3 {
		t.Fatalf("%d publish calls, want 3", fb.calls)
	}
	if n := len(h.read("github")); n != 1 {
		t.Fatalf("%d published", n)
	}
}

func TestPublishFailureDeadLetters(t *testing.T) {
	t.Parallel()
	var fb *flakyBroker
	h := newHarness(t, harnessOpt{wrap: func(b brokerT) brokerT {
		fb = &flakyBroker{Broker: b, fails: 100, err: errServerish, match: notDLQ}
		return fb
	}})
	body := []byte(`{"keep":"me"}`)
	resp := h.post("github", body, "Content-Type", jsonCT)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After on 503")
	}
	p := readProblem(t, resp, http.StatusServiceUnavailable)
	if p.Code != "WH-PUBLISH-FAILED" {
		t.Fatal(p.Code)
	}
	if fb.calls != 3+1 { // max-attempts 3, then the dead letter
		t.Fatalf("%d failing publish calls", fb.calls)
	}
	var dl []DLQEntry
	waitFor(t, "publish dead letter", func() bool {
		dl, _ = h.svc.listDLQ(context.Background(), DLQFilter{}, nil, 10)
		return len(dl) == 1
	})
	e := dl[0]
	if e.Stage != StagePublish || e.Reason != "publish_failed_server_error" || !e.Replayable || e.Topic != "github" {
		t.Fatalf("%+v", e)
	}
	if n := len(h.read("github")); n != 0 {
		t.Fatalf("%d published", n)
	}
	// The broker recovers: replay publishes the event under its id.
	fb.mu.Lock()
	fb.fails = 0
	fb.mu.Unlock()
	out, err := h.svc.Replay(context.Background(), e.EventID)
	if err != nil || out.Replays != 1 {
		t.Fatalf("replay: %+v %v", out, err)
	}
	msgs := h.read("github")
	if len(msgs) != 1 || string(msgs[0].Value) != string(body) || msgs[0].Headers[hID] != e.EventID || msgs[0].Headers[hReplay] != "1" {
		t.Fatalf("replayed %+v", msgs)
	}
	for k := range msgs[0].Headers {
		if strings.HasPrefix(k, "dlq-") {
			t.Fatalf("replayed message carries %s", k)
		}
	}
}

func TestClientErrorNotRetried(t *testing.T) {
	t.Parallel()
	var fb *flakyBroker
	h := newHarness(t, harnessOpt{wrap: func(b brokerT) brokerT {
		fb = &flakyBroker{Broker: b, fails: 100, err: errTooLarge, match: notDLQ}
		return fb
	}})
	readProblem(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT), http.StatusUnprocessableEntity)
	if fb.calls != 2 { // one attempt + the dead letter
		t.Fatalf("%d calls", fb.calls)
	}
}
