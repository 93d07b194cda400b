package platform_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/trigger"
)

// waitingWorkflow is what triggers and schedules of the benchmarks start:
// a run that greets and then waits for a signal, so each start commits
// its first steps and a durable waiting run.
const waitingWorkflow = `kind: workflow
id: bench/hook
version: 1
input:
  type: object
  properties:
    name: {type: string}
steps:
  - id: greet
    action: acme/greet@1
    with:
      name: =input.name
  - id: hold
    signal: go
  - id: done
    succeed:
      result: =steps.greet.output.name
`

func benchActivation(h *harness) string {
	op := h.localToken()
	h.mustPublish(op, "actions", platformtest.GreetAction, "bt-greet")
	wf := h.mustPublish(op, "workflows", waitingWorkflow, "bt-wf").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "bt-act", "").ID
}

func countAllRuns(h *harness) int {
	var n int
	if err := h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_runs`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// BenchmarkWebhookTriggerToRunStarted: b.N deliveries to one trigger, each
// signed by the Standard Webhooks library with its own webhook-id, posted
// by 64 keep-alive clients; a delivery counts once the daemon answered 200,
// which it does after the run start has committed (fsync'd).
func BenchmarkWebhookTriggerToRunStarted(b *testing.B) {
	h := newHarness(b)
	op := h.localToken()
	act := benchActivation(h)
	tr := h.mustCreateTrigger(op, map[string]any{"activation_id": act})
	wh, err := standardwebhooks.NewWebhook(tr.Secret)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}}
	body := []byte(`{"name":"ada"}`)
	before := countAllRuns(h)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				id := fmt.Sprintf("bench-%d-%d", b.N, i)
				now := time.Now()
				sig, _ := wh.Sign(id, now, body)
				req, _ := http.NewRequest("POST", h.base+tr.URL, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(trigger.HeaderWebhookID, id)
				req.Header.Set(trigger.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
				req.Header.Set(trigger.HeaderWebhookSignature, sig)
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				data, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Errorf("delivery: %d %s", res.StatusCode, data)
					return
				}
			}
		}()
	}
	wg.Wait()
	el, cpu := time.Since(start), processCPU(b)-cpu0
	b.StopTimer()
	if n := countAllRuns(h) - before; n != b.N {
		b.Fatalf("%d runs for %d deliveries", n, b.N)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "runs-started/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time (user and system) the test process has used.
// Per operation it is the benchmarks' steadier figure on a shared machine:
// other processes slow the rate down but hardly change the CPU each
// operation costs (BENCHMARKS.md, "Run start and transitions").
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSchedulesDueSameMinute: 1,000 schedules ("* * * * *") are due
// at the same minute of the fake clock; the time from the minute's start
// until every one has started its run (occurrence recorded).
func BenchmarkSchedulesDueSameMinute(b *testing.B) {
	const schedules = 1000
	clk := &fakeClock{t: clockStart()}
	h := newHarness(b, withClock(clk))
	op := h.localToken()
	act := benchActivation(h)
	for i := range schedules {
		h.must(201, h.saveSchedule(op, map[string]any{"cron": "* * * * *", "activation_id": act, "input": map[string]any{"name": strconv.Itoa(i)}}, ""), nil)
	}
	minute := clk.Now().Truncate(time.Minute)
	b.ResetTimer()
	for i := range b.N {
		due := minute.Add(time.Duration(i+1) * time.Minute)
		var done int
		start := time.Now()
		clk.Set(due)
		for done < schedules {
			if time.Since(start) > time.Minute {
				b.Fatalf("%d of %d schedules fired", done, schedules)
			}
			time.Sleep(5 * time.Millisecond)
			if err := h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_schedule_occurrences WHERE from_at = ? AND kind = 'started'`,
				due.UnixMilli()).Scan(&done); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-to-fire-1000")
	}
}
