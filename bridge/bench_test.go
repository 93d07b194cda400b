package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/bridge/bridge/provider"
)

// BenchmarkSubmitJobsHTTP measures durable job submissions over HTTP:
// each 202 means the job, its attempt, first message and audit entry are
// committed (WAL, synchronous=FULL) and its event is in the ring.
func BenchmarkSubmitJobsHTTP(b *testing.B) {
	e := newEnv(b, withBridge("  max-concurrent-jobs: 1\n"))
	tok := e.token("bench", "read,submit,control")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := []byte(`{"prompt":"benchmark job","metadata":{"k":"v"}}`)
	var n atomic.Int64
	b.SetParallelism(32)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", e.url+"/v1/bridge/jobs", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 202 {
				b.Errorf("status %d", res.StatusCode)
				return
			}
			n.Add(1)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkEventFanout1000 connects 1,000 SSE subscribers of one client and
// measures, per event, the time from its publication (after the job's commit;
// the ring's fsync included) until each subscriber has read it.
func BenchmarkEventFanout1000(b *testing.B) {
	e := newEnv(b, withBridge("  max-concurrent-jobs: 1\n"))
	tok := e.token("fan", "read,submit")
	// Occupy the only slot so each submitted job stays queued: the one
	// job.created event per iteration is all the traffic.
	e.waitState(tok, e.submit(tok, map[string]any{"prompt": "#hang", "profile": "claude"}), "running")
	const subs = 1000
	transport := &http.Transport{MaxIdleConnsPerHost: subs, MaxConnsPerHost: 0}
	client := &http.Client{Transport: transport}
	type arrival struct {
		id  string
		at  time.Time
		pub time.Time // when the committed event was handed to the ring
	}
	arrivals := make(chan arrival, subs*64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready sync.WaitGroup
	for i := 0; i < subs; i++ {
		ready.Add(1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/bridge/events", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := client.Do(req)
			if err != nil {
				ready.Done()
				return
			}
			defer res.Body.Close()
			// Keep the client side cheap (it shares the 2 cores with the
			// daemon): find fields by byte search, no JSON decoding.
			br := bufio.NewReaderSize(res.Body, 4096)
			signalled := false
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if !signalled && bytes.HasPrefix(line, []byte(": connected")) {
					ready.Done()
					signalled = true
				}
				if bytes.HasPrefix(line, []byte("data: ")) && bytes.Contains(line, []byte(`"job.created"`)) {
					at := time.Now()
					arrivals <- arrival{field(line, `"jobId":"`), at, parseTime(field(line, `"time":"`))}
				}
			}
		}()
	}
	ready.Wait()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := e.submit(tok, map[string]any{"prompt": "fan out"})
		got := 0
		timeout := time.After(10 * time.Second)
		for got < subs {
			select {
			case a := <-arrivals:
				if a.id == id {
					lat = append(lat, a.at.Sub(a.pub))
					got++
				}
			case <-timeout:
				b.Fatalf("only %d of %d subscribers got the event", got, subs)
			}
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	cancel()
}

// BenchmarkChatVsDirect runs the same fake-agent turn directly through the
// provider and through POST /v1/chat/completions, alternating, and reports
// the medians and the latency the bridge adds.
func BenchmarkChatVsDirect(b *testing.B) {
	e := newEnv(b)
	tok := e.token("chat", "read,submit")
	direct := provider.NewClaude(provider.Config{Path: e.claude})
	body := []byte(`{"model":"bridge/claude","messages":[{"role":"user","content":"#transcript:plain"}]}`)
	client := &http.Client{}
	var viaBridge, viaDirect []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := direct.Run(context.Background(), provider.Request{Prompt: "#transcript:plain"}, nil); err != nil {
			b.Fatal(err)
		}
		viaDirect = append(viaDirect, time.Since(t0))

		t0 = time.Now()
		req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
		viaBridge = append(viaBridge, time.Since(t0))
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	md, mb := med(viaDirect), med(viaBridge)
	b.ReportMetric(float64(md.Microseconds())/1000, "direct-median-ms")
	b.ReportMetric(float64(mb.Microseconds())/1000, "bridge-median-ms")
	b.ReportMetric(float64((mb-md).Microseconds())/1000, "added-ms")
}

// field returns the string value following key in a JSON line.
func field(line []byte, key string) string {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
