package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
)

// BenchmarkIngestHTTP measures the whole ingestion path over loopback HTTP:
// 1 KiB JSON, validation, enrichment, durable publication to the bbolt
// broker (fsync, group-committed) and the 202. Run with e.g.
//
//	go test ./ingest -run '^$' -bench IngestHTTP -benchtime 20000x -cpu 2
//
// It reports p50/p99 latency next to ns/op (ns/op is per request across
// all parallel clients, so requests/s = 1e9 / ns/op), and the broker's
// commits per request: below 1 when group commit makes concurrent
// publications share an fsync.
func BenchmarkIngestHTTP(b *testing.B) {
	dir := b.TempDir()
	db := openDB(b, filepath.Join(dir, "bridge.db"))
	bdb, br := openBroker(b, filepath.Join(dir, "events.bolt"))
	defer func() { br.Close(); bdb.Close(); db.Close() }()
	svc, err := New(daemon.Deps{DataDir: dir, DB: db, Broker: br, Config: mustParse(b, "", nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	router := httprouter.New()
	svc.Routes(router)
	srv := httptest.NewServer(httpx.WithRequestID("X-Request-ID", router))
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()

	body := jsonBody(1024)
	url := srv.URL + "/api/v1/webhook/github"
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(32) // 32 x GOMAXPROCS concurrent clients
	b.SetBytes(int64(len(body)))
	commits := br.Commits()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		for pb.Next() {
			start := time.Now()
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			local = append(local, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, local...)
		mu.Unlock()
	})
	b.StopTimer()
	commits = br.Commits() - commits
	if len(lat) > 0 {
		b.ReportMetric(float64(commits)/float64(len(lat)), "commits/req")
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	if n, _ := br.Latest(context.Background(), "github"); n < int64(len(lat)) {
		b.Fatal(fmt.Sprintf("%d published, %d acknowledged", n, len(lat)))
	}
}
