package ingest

import (
	"net/http"
	"time"

	"github.com/agentbridge/bridge/httpx"
)

// writeAck answers 202 with ack, byte for byte what httpx.WriteJSON writes,
// without encoding/json's reflection when no field needs escaping: the
// answer is sent once per webhook and was 2 % of the acknowledgement's CPU
// (BENCHMARKS.md, "One fsync per acknowledgement").
func writeAck(w http.ResponseWriter, ack Ack) {
	if !plainJSONString(ack.Status) || !plainJSONString(ack.EventID) || !plainJSONString(ack.Provider) ||
		ack.ReceivedAt.Location() != time.UTC || ack.ReceivedAt.Year() < 0 || ack.ReceivedAt.Year() > 9999 {
		httpx.WriteJSON(w, http.StatusAccepted, ack)
		return
	}
	b := make([]byte, 0, 160)
	b = append(b, `{"status":"`...)
	b = append(b, ack.Status...)
	b = append(b, `","event_id":"`...)
	b = append(b, ack.EventID...)
	b = append(b, `","provider":"`...)
	b = append(b, ack.Provider...)
	b = append(b, `","received_at":"`...)
	b = ack.ReceivedAt.AppendFormat(b, time.RFC3339Nano) // as time.Time's MarshalJSON
	b = append(b, "\"}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(b)
}

// plainJSONString reports whether s is printable ASCII that JSON writes
// as it is (no quote, backslash or control character).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
