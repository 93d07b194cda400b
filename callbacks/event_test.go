package callbacks

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/agentbridge/bridge/store/broker"
)

func TestParseEvent(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	id := uuid.NewString()
	msg := func(h map[string]string, v string) broker.Message {
		return broker.Message{Topic: "github", Offset: 7, Headers: h, Value: []byte(v)}
	}
	// Headers win over the envelope.
	ev, ok := parseEvent(msg(map[string]string{"event-type": "push", "event-id": id}, `{"type":"other","id":"x"}`))
	is.True(ok)
	is.Equal(ev.Type, "push")
	is.Equal(ev.ID, id)
	is.Equal(string(ev.Payload), `{"type":"other","id":"x"}`)

	for _, env := range []string{`{"event_type":"a.b","id":"` + id + `"}`, `{"eventType":"a.b","event_id":"` + id + `"}`, `{"type":"a.b","eventId":"` + id + `"}`} {
		ev, ok := parseEvent(msg(nil, env))
		is.True(ok)
		is.Equal(ev.Type, "a.b")
		is.Equal(ev.ID, id)
	}
	// A non-UUID id maps to a stable UUIDv5; no id maps to topic+offset.
	a, _ := parseEvent(msg(nil, `{"type":"t","id":"delivery-42"}`))
	b, _ := parseEvent(msg(nil, `{"type":"t","id":"delivery-42"}`))
	is.Equal(a.ID, b.ID)
	_, err := uuid.Parse(a.ID)
	is.NoErr(err)
	c, _ := parseEvent(msg(nil, `{"type":"t"}`))
	d, _ := parseEvent(broker.Message{Topic: "github", Offset: 8, Value: []byte(`{"type":"t"}`)})
	is.True(c.ID != d.ID)
	is.True(c.ID != a.ID)
	// Uppercase UUIDs are canonicalized.
	up, _ := parseEvent(msg(map[string]string{"event-type": "t", "event-id": "A0B1C2D3-E4F5-4A6B-8C7D-8E9FA0B1C2D3"}, `{}`))
	is.Equal(up.ID, "a0b1c2d3-e4f5-4a6b-8c7d-8e9fa0b1c2d3")
	// Not JSON: delivered as a JSON string.
	ev, ok = parseEvent(msg(map[string]string{"event-type": "form"}, "a=1&b=2"))
	is.True(ok)
	is.Equal(string(ev.Payload), `"a=1\u0026b=2"`)
	// Unusable types are skipped.
	for _, m := range []broker.Message{
		msg(nil, `{"data":1}`), msg(nil, `[1,2]`), msg(nil, `not json`), msg(map[string]string{"event-type": "has space"}, `{}`),
		msg(map[string]string{"event-type": "wild*"}, `{}`), msg(nil, `{"type":5}`),
	} {
		_, ok := parseEvent(m)
		is.True(!ok)
	}
}

func TestMatchType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, typ string
		want         bool
	}{
		{"push", "push", true}, {"push", "push2", false}, {"pull_request*", "pull_request.opened", true},
		{"*", "anything", true}, {"orders.*", "orders.created", true}, {"orders.*", "orders", false},
	} {
		if got := matchType(c.pattern, c.typ); got != c.want {
			t.Errorf("%s ~ %s = %v", c.pattern, c.typ, got)
		}
	}
}

func TestDomainAuthorizes(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	d := AuthorizedDomain{Domain: "example.com"}
	is.True(d.authorizes("example.com"))
	is.True(!d.authorizes("api.example.com"))
	is.True(!d.authorizes("badexample.com"))
	d.IncludeSubdomains = true
	is.True(d.authorizes("a.b.example.com"))
	is.True(!d.authorizes("badexample.com"))
	is.Equal(normalizeHost("[::FFFF:127.0.0.1]"), "127.0.0.1")
	is.Equal(normalizeHost("Example.COM."), "example.com")
}

// TestIngestedWebhookEnvelope: webhooks published by ingestion (CloudEvents
// binary mode) take the provider's event type and ingestion's event id;
// dead letters are skipped; compressed values are decoded.
func TestIngestedWebhookEnvelope(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	id := uuid.NewString()
	base := map[string]string{"ce_id": id, "ce_type": "dev.agentbridge.webhook.received", "ce_provider": "github",
		"content-type": "application/json"}
	with := func(kv ...string) map[string]string {
		h := map[string]string{}
		for k, v := range base {
			h[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	ev, ok := parseEvent(broker.Message{Topic: "github", Headers: with("http-x-github-event", "push"), Value: []byte(`{"ref":"main"}`)})
	is.True(ok)
	is.Equal(ev.Type, "push")
	is.Equal(ev.ID, id)
	// Stripe-like: the type is in the payload.
	ev, _ = parseEvent(broker.Message{Topic: "stripe", Headers: with(), Value: []byte(`{"id":"evt_1","type":"charge.succeeded"}`)})
	is.Equal(ev.Type, "charge.succeeded")
	is.Equal(ev.ID, id) // ce_id wins over the payload's id
	// Nothing provider-specific: ingestion's own type.
	ev, _ = parseEvent(broker.Message{Topic: "x", Headers: with(), Value: []byte(`{"a":1}`)})
	is.Equal(ev.Type, "dev.agentbridge.webhook.received")
	// Other CloudEvents publishers: ce_type.
	ev, _ = parseEvent(broker.Message{Topic: "runs", Headers: map[string]string{"ce_type": "run.completed", "ce_id": id}, Value: []byte(`{"type":"ignored"}`)})
	is.Equal(ev.Type, "run.completed")
	// Dead letters are not events.
	_, ok = parseEvent(broker.Message{Topic: "webhooks.dlq", Headers: with("http-x-github-event", "push", "dlq-id", "x"), Value: []byte(`{}`)})
	is.True(!ok)
	// Compressed values.
	for _, enc := range []string{"gzip", "zstd", "lz4"} {
		ev, ok := parseEvent(broker.Message{Topic: "github", Headers: with("http-x-github-event", "push", "content-encoding", enc), Value: compress(t, enc, []byte(`{"z":true}`))})
		is.True(ok)
		is.Equal(string(ev.Payload), `{"z":true}`)
	}
	_, ok = parseEvent(broker.Message{Topic: "github", Headers: with("http-x-github-event", "push", "content-encoding", "gzip"), Value: []byte("not gzip")})
	is.True(!ok)
	_, ok = parseEvent(broker.Message{Topic: "github", Headers: with("http-x-github-event", "push", "content-encoding", "br"), Value: []byte("{}")})
	is.True(!ok)
	// A compression bomb is refused, not expanded.
	bomb := compress(t, "gzip", make([]byte, maxDecodedPayload+1))
	_, ok = parseEvent(broker.Message{Topic: "github", Headers: with("http-x-github-event", "push", "content-encoding", "gzip"), Value: bomb})
	is.True(!ok)
}

func compress(t *testing.T, enc string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zstd":
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	case "lz4":
		w = lz4.NewWriter(&buf)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
