package platform_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/sim"
)

// BenchmarkDebugSessionCreate: POST P/debug/sessions over loopback HTTP
// (authenticated, audited, references resolved, run started, stored) with
// the flow workflow's artifact and mocks, one client; p50/p99.
func BenchmarkDebugSessionCreate(b *testing.B) {
	lim := sim.DefaultLimits()
	lim.LivePerCreator, lim.LivePerProject, lim.RetainedPerProject = 1<<30, 1<<30, 1<<30
	f := newDebugFixture(b, func(h *harness) { h.simLimits = &lim })
	h := f.h
	body := map[string]any{"artifact": f.flow, "input": json.RawMessage(`{"name":"Ada"}`), "mocks": json.RawMessage(greetMocks)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		r := h.post(pPath(h)+"/debug/sessions", f.op, body)
		lat = append(lat, time.Since(start))
		if r.status != 201 {
			b.Fatalf("%d %s", r.status, r.body)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
