package ingest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx"
)

// writeAck writes exactly what httpx.WriteJSON writes, on both sides of
// every rule of its fast path.
func TestWriteAckMatchesWriteJSON(t *testing.T) {
	is := is.New(t)
	times := []time.Time{
		time.Date(2026, 11, 27, 11, 40, 0, 123456789, time.UTC),
		time.Date(2026, 11, 27, 11, 40, 0, 0, time.UTC),
		time.Date(2026, 11, 27, 11, 40, 0, 120000000, time.FixedZone("x", 3600)),
		time.Date(2026, 11, 27, 11, 40, 0, 0, time.FixedZone("y", 86400)), // JSON refuses the offset
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),                      // JSON refuses it: the same refusal
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	providers := []string{"github", "a.b_c-d", "", "quo\"te", "back\\slash", "tab\there", "caf\u00e9", "<html>&", "\u2028", "bad\xffutf8", "~"}
	for _, at := range times {
		for _, p := range providers {
			ack := Ack{Status: "accepted", EventID: "01928c3e-5f7a-7b3c-9d2e-4f5a6b7c8d9e", Provider: p, ReceivedAt: at}
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			httpx.WriteJSON(want, 202, ack)
			writeAck(got, ack)
			is.Equal(got.Code, want.Code)
			is.Equal(got.Header(), want.Header())
			is.Equal(got.Body.String(), want.Body.String()) // provider p, time at
		}
	}
}
