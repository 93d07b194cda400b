// Command bench measures Agent Bridge against embedded peers on this
// machine, alternating them in one run (issue 21's table): durable 3-step
// runs per second against DBOS Transact Go and River, both on SQLite, and
// webhook ingestion against a bare net/http server. Every system fsyncs
// each commit (SQLite synchronous=FULL, bbolt without NoSync) except the
// row that says DBOS's default (NORMAL).
//
//	cd bench && go run -mod=mod . -duration 10s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

type runSystem interface {
	name() string
	start(ctx context.Context, id int64) error
	completed() (int64, error)
	close() error
}

func errorsJoin(errs ...error) error { return errors.Join(errs...) }

func main() {
	duration := flag.Duration("duration", 10*time.Second, "length of each measurement window")
	rounds := flag.Int("rounds", 2, "alternations of every system")
	clients := flag.Int("clients", 16, "concurrent run starters")
	conns := flag.Int("conns", 64, "webhook connections (wrk -c)")
	flag.Parse()
	if err := run(*duration, *rounds, *clients, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(d time.Duration, rounds, clients, conns int) error {
	dir, err := os.MkdirTemp("", "bridge-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sub := func(name string) string {
		p := dir + "/" + name
		_ = os.MkdirAll(p, 0o700)
		return p
	}
	o, err := startOurs(sub("ours"))
	if err != nil {
		return fmt.Errorf("ours: %w", err)
	}
	defer o.close()
	dFull, err := startDBOS(sub("dbos-full"), true)
	if err != nil {
		return err
	}
	defer dFull.close()
	dNormal, err := startDBOS(sub("dbos-normal"), false)
	if err != nil {
		return err
	}
	defer dNormal.close()
	rv, err := startRiver(sub("river"))
	if err != nil {
		return err
	}
	defer rv.close()
	bareURL, stopBare, err := bareServer()
	if err != nil {
		return err
	}
	defer stopBare()
	oursURL := o.services + "/api/v1/webhook/bench"

	host, _ := os.Hostname()
	fmt.Printf("machine: %s, %d CPUs, %s/%s, %s; load average at start: %s\n", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadavg())
	fmt.Printf("each window %s, %d rounds, systems alternated; runs: %d starters; webhooks: %d connections, 1 KiB JSON\n\n", d, rounds, clients, conns)

	runs := map[string][]float64{}
	hooks := map[string][]loadResult{}
	bytes0, _ := o.bytesInUse()
	ended0, _ := o.ended()
	for r := 0; r < rounds; r++ {
		for _, s := range []runSystem{oursRuns{o}, dFull, rv, dNormal} {
			rate, err := measureRuns(s, d, clients)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name(), err)
			}
			fmt.Printf("round %d  %-46s %8.0f runs/s\n", r+1, s.name(), rate)
			runs[s.name()] = append(runs[s.name()], rate)
		}
		for _, w := range []struct{ name, url string }{{"ours: webhook ingest, 202 after durable publish", oursURL}, {"bare net/http 202", bareURL}} {
			res := load(w.url, conns, d)
			fmt.Printf("round %d  %-46s %8.0f req/s  p50 %5.1f ms  p99 %5.1f ms  errors %d\n", r+1, w.name, res.perSec,
				ms(res.p50), ms(res.p99), res.errors)
			hooks[w.name] = append(hooks[w.name], res)
		}
	}
	bytes1, _ := o.bytesInUse()
	ended1, _ := o.ended()

	ourRate := median(runs[oursRuns{o}.name()])
	fmt.Printf("\n| measure | ours | peer, same run | ratio |\n|---|---|---|---|\n")
	fmt.Printf("| durable 3-step runs/s, end to end over HTTP (FULL) | %.0f | DBOS Transact Go on SQLite (FULL) %.0f | %.2f× |\n", ourRate, median(runs[dFull.name()]), ourRate/median(runs[dFull.name()]))
	fmt.Printf("| same | %.0f | River on SQLite (FULL) %.0f | %.2f× |\n", ourRate, median(runs[rv.name()]), ourRate/median(runs[rv.name()]))
	fmt.Printf("| same, against DBOS at its default synchronous=NORMAL (ours FULL) | %.0f | %.0f | %.2f× |\n", ourRate, median(runs[dNormal.name()]), ourRate/median(runs[dNormal.name()]))
	oh, bh := hooks["ours: webhook ingest, 202 after durable publish"], hooks["bare net/http 202"]
	oRate, bRate := medianBy(oh, func(r loadResult) float64 { return r.perSec }), medianBy(bh, func(r loadResult) float64 { return r.perSec })
	oP99 := medianBy(oh, func(r loadResult) float64 { return ms(r.p99) })
	fmt.Printf("| webhook ingest req/s, 202 after durable publish (%d conns, 1 KiB) | %.0f, p99 %.1f ms | bare Go net/http 202: %.0f | %.2f× |\n", conns, oRate, oP99, bRate, oRate/bRate)
	if n := ended1 - ended0; n > 0 {
		fmt.Printf("| bridge.db bytes per completed 3-step run (pages in use; webhooks add none) | %.0f B | | |\n", float64(bytes1-bytes0)/float64(n))
	}
	fmt.Printf("| Chat Completions added latency | not run here: go test -run '^$' -bench ChatVsDirect ./bridge/ (needs the fake agent) | | |\n")
	fmt.Printf("\nload average at end: %s\n", loadavg())
	return nil
}

// oursRuns adapts ours to runSystem (its completions are counted in bridge.db).
type oursRuns struct{ *ours }

func (o oursRuns) completed() (int64, error) { return o.ended() }

// measureRuns starts runs from clients goroutines for d (keeping at most
// 512 in flight) and reports the runs completed within the window; it then
// lets the rest finish before the next system's turn.
func measureRuns(s runSystem, d time.Duration, clients int) (float64, error) {
	base, err := s.completed()
	if err != nil {
		return 0, err
	}
	var started atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	t0 := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				done, _ := s.completed()
				if started.Load()-(done-base) > 512 {
					time.Sleep(time.Millisecond)
					continue
				}
				if err := s.start(context.Background(), started.Add(1)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					cancel()
					return
				}
			}
		}()
	}
	<-ctx.Done()
	el := time.Since(t0)
	end, err := s.completed()
	if err != nil {
		return 0, err
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok && e != nil {
		return 0, e
	}
	// Drain: wait for in-flight runs so they do not run in the next window.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, _ := s.completed(); n-base >= started.Load() {
			break
		}
	}
	return float64(end-base) / el.Seconds(), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func medianBy(rs []loadResult, f func(loadResult) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return median(v)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := string(b)
	if len(f) > 14 {
		f = f[:14]
	}
	return f
}
