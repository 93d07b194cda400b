package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// thousandSteps is a 1,000-step workflow: 500 mocked calls of acme/lookup,
// each followed by a set step.
func thousandSteps() string {
	var b strings.Builder
	b.WriteString("kind: workflow\nid: acme/thousand\nversion: 1\nvars:\n  n: {type: integer, default: 0}\nsteps:\n")
	for i := range 500 {
		fmt.Fprintf(&b, "  - id: call%d\n    action: acme/lookup@1\n    with: {id: x}\n  - id: count%d\n    set:\n      n: =vars.n + 1\n", i, i)
	}
	return b.String()
}

// BenchmarkContinue1000Steps: one continue from a fresh session through a
// 1,000-step workflow (500 mock answers) to succeeded.
func BenchmarkContinue1000Steps(b *testing.B) {
	p, _ := compileWorkflow(b, thousandSteps())
	ms, err := DecodeMocks(json.RawMessage(`{"action:acme/lookup@1":{"output":{"name":"a"}}}`), "/mocks")
	if err != nil {
		b.Fatal(err)
	}
	var cont Command
	_ = json.Unmarshal([]byte(`{"continue":{}}`), &cont)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := &Session{ID: "00000000-0000-4000-8000-00000000aaaa", Mocks: ms, Input: json.RawMessage(`{}`), Start: t0}
		if err := Begin(p, s); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := Apply(p, s, cont, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if s.Status != StatusSucceeded || string(s.State.Vars["n"]) != "500" {
			b.Fatalf("%s %v", s.Status, s.Diagnostics)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
