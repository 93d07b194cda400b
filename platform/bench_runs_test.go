package platform_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agentbridge/bridge/platform/platformtest"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/engine"
)

// threeStepWorkflow is the benchmark's workflow: three built-in steps (an
// echo action, a noop action and succeed), shared with the bench/ harness.
const threeStepWorkflow = platformtest.ThreeStepWorkflow

// benchClient posts JSON with the operator's token over kept-alive
// connections.
type benchClient struct {
	h      *harness
	tok    string
	client *http.Client
}

func newBenchClient(h *harness) *benchClient {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	return &benchClient{h: h, tok: h.localToken(), client: &http.Client{Transport: tr}}
}

func (c *benchClient) post(path, key string, body any) (int, []byte, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", c.h.base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+c.tok)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, data, err
}

// countRuns counts the runs of the activation with a terminal status.
func countEnded(h *harness) int {
	var n int
	if err := h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_runs WHERE status IN ('succeeded','failed','cancelled','timed_out')`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// BenchmarkDurableThreeStepRuns starts b.N runs of a 3-step built-in
// workflow through POST E/runs from 16 clients and waits until every one
// has succeeded: completed durable runs per second, and the state
// transitions (accepted events) per second.
func BenchmarkDurableThreeStepRuns(b *testing.B) {
	h := newHarness(b)
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.GreetAction, "b-greet")
	h.mustPublish(op, "actions", platformtest.NothingAction, "b-nothing")
	wf := h.mustPublish(op, "workflows", threeStepWorkflow, "b-three").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "b-act", "").ID
	c := newBenchClient(h)
	path := ePath(h) + "/runs"
	before := countEnded(h)
	var events0 int
	_ = h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_run_events`).Scan(&events0)
	sizes0 := tableBytes(b, h)

	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				st, data, err := c.post(path, fmt.Sprintf("bench-%d-%d", b.N, i), map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}})
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
	el, cpu := time.Since(start), processCPU(b)-cpu0
	b.StopTimer()
	var events int
	_ = h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_run_events`).Scan(&events)
	b.ReportMetric(float64(b.N)/el.Seconds(), "runs/s")
	b.ReportMetric(float64(events-events0)/el.Seconds(), "transitions/s")
	b.ReportMetric(bytesPerRun(b, sizes0, tableBytes(b, h)), "B/run")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkSignalToNextStep measures, per signal, the time from sending
// POST E/runs/{run}/signals to the moment the step after the signal step
// has started (its step_started record is committed), with 8 clients.
func BenchmarkSignalToNextStep(b *testing.B) {
	h := newHarness(b)
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.GreetAction, "s-greet")
	wf := h.mustPublish(op, "workflows", signalThenStep, "s-wf").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "s-act", "").ID
	c := newBenchClient(h)
	runs := make([]string, b.N)
	for i := range runs {
		st, data, err := c.post(ePath(h)+"/runs", fmt.Sprintf("sig-%d-%d", b.N, i), map[string]any{"activation_id": act})
		if err != nil || st != 201 {
			b.Fatalf("start: %d %s %v", st, data, err)
		}
		var r engine.Run
		_ = json.Unmarshal(data, &r)
		runs[i] = r.ID
	}
	for _, id := range runs {
		h.waitRun(op, id, "waiting")
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t0 := time.Now()
				st, data, err := c.post(ePath(h)+"/runs/"+runs[i]+"/signals", "", map[string]any{"name": "go"})
				if err != nil || st != 202 {
					b.Errorf("signal: %d %s %v", st, data, err)
					return
				}
				for !stepStarted(h, runs[i], "greet") {
					time.Sleep(200 * time.Microsecond)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

const signalThenStep = `kind: workflow
id: bench/signal
version: 1
steps:
  - id: hold
    signal: go
  - id: greet
    action: acme/greet@1
    with:
      name: after
  - id: done
    succeed:
      result: =steps.greet.output.name
`

func stepStarted(h *harness, run, node string) bool {
	var n int
	_ = h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_run_logs WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?) AND type = 'step_started' AND node_id = ?`, run, node).Scan(&n)
	return n > 0
}
