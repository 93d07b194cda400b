package platform_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/source"
)

// benchSource is a Slack source starting bench/hook with the message text
// as its name, and a WhatsApp source doing the same for messages.
func benchSources(h *harness) (slack, whatsapp source.Source) {
	op := h.localToken()
	act := benchActivation(h)
	sc := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "config": map[string]string{"account_id": "T1"},
		"secrets": map[string]string{"signing_secret": slackSecret}})
	slack = h.mustSource(op, h.sourceBody(op, sc, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))
	wc := h.mustConnection(op, map[string]any{"name": "wa", "provider": "whatsapp", "config": map[string]string{"account_id": "P1"},
		"secrets": map[string]string{"app_secret": "meta-app-secret", "verify_token": "verify-me-please"}})
	whatsapp = h.mustSource(op, h.sourceBody(op, wc, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.from}`}))
	return slack, whatsapp
}

// postAll sends n requests made by mk from 64 keep-alive clients and
// fails on any answer but 200.
func postAll(b *testing.B, n int, mk func(i int64) *http.Request) time.Duration {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				res, err := client.Do(mk(i))
				if err != nil {
					b.Error(err)
					return
				}
				data, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Errorf("ingress: %d %s", res.StatusCode, data)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func slackRequest(h *harness, src source.Source, id, text string) *http.Request {
	body := slackMessage(id, "T1", text)
	req, _ := http.NewRequest("POST", h.base+src.IngressURL, bytes.NewReader([]byte(body)))
	for k, v := range slackSigned(slackSecret, body, time.Now()) {
		req.Header.Set(k, v)
	}
	return req
}

// BenchmarkProviderIngressBatch1: b.N Slack deliveries of one event each,
// signed as Slack signs them, from 64 keep-alive clients; an event counts
// once the daemon acknowledged it (200 after the admission commit). The
// dispatcher starts the runs meanwhile, sharing the store's writer.
func BenchmarkProviderIngressBatch1(b *testing.B) {
	h := newHarness(b)
	slack, _ := benchSources(h)
	b.ResetTimer()
	el := postAll(b, b.N, func(i int64) *http.Request {
		return slackRequest(h, slack, fmt.Sprintf("Ev%d-%d", b.N, i), "ada")
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "events-acked/s")
}

// BenchmarkProviderIngressBatch100: b.N WhatsApp deliveries of 100
// messages each (the batch bound), signed with the app secret.
func BenchmarkProviderIngressBatch100(b *testing.B) {
	h := newHarness(b)
	_, wa := benchSources(h)
	b.ResetTimer()
	el := postAll(b, b.N, func(i int64) *http.Request {
		body := waMessages(100, "messages")
		body = strings.ReplaceAll(body, "wamid.M", fmt.Sprintf("wamid.%d-%d-", b.N, i))
		req, _ := http.NewRequest("POST", h.base+wa.IngressURL, bytes.NewReader([]byte(body)))
		for k, v := range metaSigned("meta-app-secret", body) {
			req.Header.Set(k, v)
		}
		return req
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N*100)/el.Seconds(), "events-acked/s")
}

// BenchmarkProviderIngressToRunStarted: b.N Slack events sent one at a
// time, 10 ms apart (a steady stream, not a saturation test); for each,
// the time from sending the request to the run's creation (the run row's
// created_at, milliseconds), reported as p50 and p99.
func BenchmarkProviderIngressToRunStarted(b *testing.B) {
	h := newHarness(b)
	slack, _ := benchSources(h)
	client := &http.Client{}
	sent := map[string]time.Time{}
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("Lat%d-%d", b.N, i)
		req := slackRequest(h, slack, id, "ada")
		sent[id] = time.Now()
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("ingress: %d", res.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var lat []time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for {
		lat = lat[:0]
		rows, err := h.d.DB.Reader().Query(`SELECT r.event_id, run.created_at FROM platform_provider_receipts r
			JOIN platform_runs run ON run.id = r.run_id WHERE r.event_id LIKE ?`, fmt.Sprintf("Lat%d-%%", b.N))
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id string
			var created int64
			if err := rows.Scan(&id, &created); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.UnixMilli(created).Sub(sent[id]))
		}
		rows.Close()
		if len(lat) == b.N || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	if len(lat) != b.N {
		b.Fatalf("%d runs for %d events", len(lat), b.N)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}
