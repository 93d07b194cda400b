package callbacks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/callbacks/verify"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store/broker"
)

// The parsers of untrusted input must never panic; the seeds also run in
// every plain `go test`.

func FuzzOpenCursor(f *testing.F) {
	key := httpx.NewCursors([]byte("fuzz-key-fuzz-key-fuzz-key-fuzz-"))
	good, err := sealCursor(key, "b", []any{int64(5), "x"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "", ".", "a.b", good + "x", strings.Repeat("A", 5000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := openCursor(key, s, "b", 2)
		if err == nil && s != good && len(vals) != 2 {
			t.Fatalf("accepted %q with %d values", s, len(vals))
		}
	})
}

func FuzzParseEvent(f *testing.F) {
	f.Add("push", "", `{"a":1}`)
	f.Add("", "", `{"type":"x","id":"y"}`)
	f.Add("", "", `{"type":{"nested":true}}`)
	f.Add("t", "not-a-uuid", "\xff\xfe")
	f.Fuzz(func(t *testing.T, typ, id, value string) {
		ev, ok := parseEvent(broker.Message{Topic: "t", Headers: map[string]string{"event-type": typ, "event-id": id}, Value: []byte(value)})
		if ok && (!json.Valid(ev.Payload) || checkEventType(ev.Type) != "" || len(ev.ID) != 36) {
			t.Fatalf("accepted an unusable event %+v", ev)
		}
	})
}

func FuzzVerifyPlatform(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	f.Add(platformSignature(AlgHmacSHA256, []secret{secret(testSecret)}, now, "id", []byte("{}")), "{}")
	f.Add("t=,hmac-sha256=", "")
	f.Add("t=99999999999999999999,hmac-sha256=zz", "x")
	f.Fuzz(func(t *testing.T, header, body string) {
		_ = verify.Platform(testSecret, header, "id", []byte(body), time.Minute, now)
	})
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://a.com/x", "http://[::1]:80/", "http://%zz", "https://a.com:99999", "javascript:alert(1)", "https://u@a.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, msg := checkURL(raw)
		if msg == "" && validHost(host) != "" {
			t.Fatalf("accepted %q with host %q", raw, host)
		}
	})
}

func FuzzFilterRequest(f *testing.F) {
	f.Add(`{"filters":[{"field":"domain","operator":"in","values":["a"]}],"sort":[{"field":"domain","direction":"DESC"}],"size":5}`)
	f.Add(`{"filters":[{"field":"createdAt","operator":"gt","value":"2020-01-01T00:00:00Z"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var req FilterRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		c, err := domainResource.compile(req, httpx.NewCursors([]byte("fuzz-key-fuzz-key-fuzz-key-fuzz-")))
		if err == nil {
			c.whereSQL(true)
			c.orderSQL()
		}
	})
}
