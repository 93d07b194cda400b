package platform_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// BenchmarkIdentityHTTP measures authenticated GET /api/v1/identity over
// real loopback HTTP with keep-alive connections and parallel clients:
// token verification (RS256, warm key cache), principal and grants (warm
// access cache), the rendered identity, the audit record and the
// platform headers. Reports requests per second.
func BenchmarkIdentityHTTP(b *testing.B) {
	h := newHarness(b)
	tok := h.localToken()
	url := h.base + "/api/v1/identity"
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func() error {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	if err := get(); err != nil { // warm the key and access caches
		b.Fatal(err)
	}
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := get(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	if err := h.svc.FlushAudit(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAuthenticateAuthorize measures the per-request access path of
// the platform without the network: bearer parsing, token verification
// with a warm key cache, principal and grants from the warm access cache,
// one capability decision at an environment scope, and both audit records.
// Reports the median.
func BenchmarkAuthenticateAuthorize(b *testing.B) {
	h := newHarness(b)
	tok := h.localToken()
	r := httprouter.New()
	h.svc.API().Handle(r, api.Route{Method: "GET", Path: "/tenants/{tenant}/projects/{project}/environments/{environment}/bench",
		Capability: auth.CapRunCancel, Handler: func(c *api.Call) error { return c.Raw(200, []byte("{}")) }})
	path := h.envPath(h.ws.TenantID, h.ws.ProjectID, h.ws.EnvironmentID) + "/bench"
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	serve := func() {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	serve()
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		serve()
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "median-ns")
	if err := h.svc.FlushAudit(context.Background()); err != nil {
		b.Fatal(err)
	}
}
