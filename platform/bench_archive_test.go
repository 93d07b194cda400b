package platform_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runTables are the tables that hold a run once its idempotency record
// and access decisions have expired (docs/retention.md).
var runTables = []string{"platform_runs", "platform_run_events", "platform_run_logs", "platform_run_archives"}

// BenchmarkArchiveThreeStepRuns completes b.N runs of the 3-step workflow,
// then lets the automatic policy (platform.runs.archive-after) archive
// them all: the bytes the run tables hold per run live and archived, and
// how fast the policy archives.
func BenchmarkArchiveThreeStepRuns(b *testing.B) {
	clock := &fakeClock{t: clockStart()}
	h := newHarness(b, withClock(clock))
	op := h.localToken()
	act := h.setupThreeStep(op)
	c := newBenchClient(h)
	path := ePath(h) + "/runs"
	before := countEnded(h)
	sizes0 := tableBytes(b, h)
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				st, data, err := c.post(path, fmt.Sprintf("arc-%d-%d", b.N, i), map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}})
				if err != nil || st != 201 {
					b.Errorf("start: %d %s %v", st, data, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for countEnded(h)-before < b.N {
		time.Sleep(2 * time.Millisecond)
	}
	sizes1 := tableBytes(b, h)
	clock.Set(clock.Now().Add(7*24*time.Hour + 2*time.Minute))
	t0 := time.Now()
	for {
		var n int
		if err := h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_run_archives`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n >= b.N {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(t0)
	b.StopTimer()
	sizes2 := tableBytes(b, h)
	per := func(s map[string]int64) float64 {
		var n int64
		for _, t := range runTables {
			n += s[t] - sizes0[t]
		}
		return float64(n) / float64(b.N)
	}
	for _, t := range runTables {
		b.Logf("%-24s live %6.0f B/run  archived %6.0f B/run", t, float64(sizes1[t]-sizes0[t])/float64(b.N), float64(sizes2[t]-sizes0[t])/float64(b.N))
	}
	b.ReportMetric(per(sizes1), "live-B/run")
	b.ReportMetric(per(sizes2), "archived-B/run")
	b.ReportMetric(float64(b.N)/el.Seconds(), "archived/s")
}
