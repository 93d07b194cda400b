package callbacks

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/store/broker"
)

// BenchmarkSignedDelivery measures signed deliveries to a local sink with
// every attempt recorded: each op is Dispatch (event and PENDING attempt
// stored), the signed HTTP request, and the SUCCEEDED execution committed.
// The target is at least 2,000 deliveries/s.
func BenchmarkSignedDelivery(b *testing.B) {
	h := newHarness(b, fastYAML, nil)
	sink := newReceiver(b, nil)
	// The sink answers without keeping anything.
	sink.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "bench", "url": sink.URL, "subscribedEventTypes": []string{"bench"},
		"signatureEnabled": true, "secret": testSecret})
	var recorded atomic.Int64
	h.svc.onRecorded = func(o *outcome) {
		if o.state == StateSucceeded {
			recorded.Add(1)
		}
	}
	payload := json.RawMessage(`{"order":{"id":12345,"total":"99.90","items":[{"sku":"A-1","qty":2}]}}`)
	// Many concurrent producers, as many broker consumers or API callers
	// would be: their writes share group commits.
	b.SetParallelism(128)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.svc.Dispatch(b.Context(), cfg.ID, "bench", uuid.NewString(), payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
	deadline := time.Now().Add(time.Minute)
	for recorded.Load() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if recorded.Load() != int64(b.N) {
		b.Fatalf("recorded %d of %d deliveries", recorded.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkBrokerToDelivery measures the whole pipeline: events published
// on a topic are consumed (stored before acknowledgement), delivered signed
// to a local sink and recorded.
func BenchmarkBrokerToDelivery(b *testing.B) {
	h := newHarness(b, fastYAML, nil)
	sink := newReceiver(b, nil)
	sink.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	h.authorize("127.0.0.1")
	h.createConfig(map[string]any{"name": "bench", "url": sink.URL, "subscribedEventTypes": []string{"bench"},
		"signatureEnabled": true, "secret": testSecret})
	h.createSub(map[string]any{"name": "bench", "topicOrQueue": "bench"})
	var recorded atomic.Int64
	h.svc.onRecorded = func(o *outcome) {
		if o.state == StateSucceeded {
			recorded.Add(1)
		}
	}
	value := []byte(`{"order":{"id":12345,"total":"99.90","items":[{"sku":"A-1","qty":2}]}}`)
	msgs := make([]broker.Message, 0, 1000)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		msgs = append(msgs, broker.Message{Topic: "bench", Headers: map[string]string{"event-type": "bench", "event-id": uuid.NewString()}, Value: value})
		if len(msgs) == cap(msgs) || i == b.N-1 {
			if err := h.broker.Publish(b.Context(), msgs...); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for recorded.Load() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if recorded.Load() != int64(b.N) {
		b.Fatalf("recorded %d of %d deliveries", recorded.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
}
