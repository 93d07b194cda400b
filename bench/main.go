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
	"runtime/pprof"
	"slices"
	"strings"
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
	if dir := os.Getenv(childEnv); dir != "" {
		if err := childMain(dir); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.DurationVar(&o.d, "duration", 10*time.Second, "length of each measurement window")
	flag.IntVar(&o.rounds, "rounds", 2, "alternations of every system")
	flag.IntVar(&o.clients, "clients", 16, "concurrent run starters")
	flag.IntVar(&o.conns, "conns", 64, "webhook connections (wrk -c)")
	flag.StringVar(&o.systems, "systems", "ours,dbos-full,river,dbos-normal,webhooks",
		"what to alternate, comma separated: ours, ours-scan (the first harness's completion count), dbos-full, river, dbos-normal, webhooks")
	flag.IntVar(&o.grow, "grow", 0, "also measure a data directory grown to this many completed runs and stored webhooks against a fresh one (e.g. 1000000)")
	flag.BoolVar(&o.chat, "chat", true, "run the Chat Completions benchmark (go test -bench ChatVsDirect ../bridge/)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of ours' first run window to this file")
	flag.StringVar(&o.growprofile, "growprofile", "", "with -grow: CPU profiles of the fresh and the grown daemon's runs windows, PREFIX-fresh.N.cpu and PREFIX-grown.N.cpu")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	d                       time.Duration
	rounds, clients, conns  int
	systems                 string
	grow                    int
	chat                    bool
	cpuprofile, growprofile string
}

func run(o options) error {
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
	want := map[string]bool{}
	for _, s := range strings.Split(o.systems, ",") {
		want[strings.TrimSpace(s)] = true
	}
	var systems []runSystem
	var us *ours
	if want["ours"] || want["ours-scan"] || want["webhooks"] {
		if us, err = startOurs(sub("ours")); err != nil {
			return fmt.Errorf("ours: %w", err)
		}
		defer us.close()
		if want["ours"] {
			systems = append(systems, oursRuns{us})
		}
		if want["ours-scan"] {
			systems = append(systems, oursScan{us})
		}
	}
	if want["dbos-full"] {
		s, err := startDBOS(sub("dbos-full"), true)
		if err != nil {
			return err
		}
		defer s.close()
		systems = append(systems, s)
	}
	if want["river"] {
		s, err := startRiver(sub("river"))
		if err != nil {
			return err
		}
		defer s.close()
		systems = append(systems, s)
	}
	if want["dbos-normal"] {
		s, err := startDBOS(sub("dbos-normal"), false)
		if err != nil {
			return err
		}
		defer s.close()
		systems = append(systems, s)
	}
	type hookTarget struct{ name, url string }
	var hookTargets []hookTarget
	if want["webhooks"] {
		bareURL, stopBare, err := bareServer()
		if err != nil {
			return err
		}
		defer stopBare()
		hookTargets = []hookTarget{{oursIngest, us.services + "/api/v1/webhook/bench"}, {bareIngest, bareURL}}
	}

	host, _ := os.Hostname()
	fmt.Printf("machine: %s, %d CPUs, %s/%s, %s; load average at start: %s\n", host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadavg())
	fmt.Printf("each window %s, %d rounds, systems alternated; runs: %d starters; webhooks: %d connections, 1 KiB JSON\n\n", o.d, o.rounds, o.clients, o.conns)

	runs := map[string][]float64{}
	hooks := map[string][]loadResult{}
	var bytes0, ended0, bolt0 int64
	if us != nil {
		bytes0, _ = us.bytesInUse()
		ended0, _ = us.endedScan()
		bolt0 = us.boltInUse()
	}
	var accepted int64
	profiled := false
	for r := 0; r < o.rounds; r++ {
		for _, s := range systems {
			stop := func() {}
			if _, ok := s.(oursRuns); ok && o.cpuprofile != "" && !profiled {
				if stop, err = startProfile(o.cpuprofile); err != nil {
					return err
				}
				profiled = true
			}
			rate, err := measureRuns(s, o.d, o.clients)
			stop()
			if err != nil {
				// A peer refusing work (River's SQLITE_BUSY under heavy
				// load) loses its window, not the whole run.
				fmt.Printf("round %d  %-46s error: %v\n", r+1, s.name(), err)
				continue
			}
			fmt.Printf("round %d  %-46s %8.0f runs/s\n", r+1, s.name(), rate)
			runs[s.name()] = append(runs[s.name()], rate)
		}
		for _, w := range hookTargets {
			res := load(w.url, o.conns, o.d)
			fmt.Printf("round %d  %-46s %8.0f req/s  p50 %5.1f ms  p99 %5.1f ms  errors %d\n", r+1, w.name, res.perSec,
				ms(res.p50), ms(res.p99), res.errors)
			hooks[w.name] = append(hooks[w.name], res)
			if w.name == oursIngest {
				accepted += int64(res.reqs)
			}
		}
	}
	var grown []growRow
	if o.grow > 0 {
		if grown, err = measureGrowth(sub("fresh"), sub("grown"), o); err != nil {
			return fmt.Errorf("grow: %w", err)
		}
	}
	var chat string
	if o.chat {
		chat = chatLatency()
	}

	fmt.Printf("\n| measure | ours | peer or limit, same run | ratio |\n|---|---|---|---|\n")
	ourRate := median(runs[oursLabel])
	for _, peer := range []struct{ name, row string }{
		{dbosFullLabel, "durable 3-step runs/s, end to end over HTTP (FULL) | %.0f | DBOS Transact Go on SQLite (FULL) %.0f"},
		{riverLabel, "same | %.0f | River on SQLite (FULL) %.0f"},
		{dbosNormalLabel, "same, against DBOS at its default synchronous=NORMAL (ours FULL) | %.0f | %.0f"},
		{oursScanLabel, "ours, completions counted with count(*) before each start (the first harness) | %.0f | %.0f"},
	} {
		if p := median(runs[peer.name]); p > 0 && ourRate > 0 {
			fmt.Printf("| "+peer.row+" | %.2f× |\n", ourRate, p, ourRate/p)
		}
	}
	if oh, bh := hooks[oursIngest], hooks[bareIngest]; len(oh) > 0 {
		oRate, bRate := medianBy(oh, func(r loadResult) float64 { return r.perSec }), medianBy(bh, func(r loadResult) float64 { return r.perSec })
		oP99 := medianBy(oh, func(r loadResult) float64 { return ms(r.p99) })
		fmt.Printf("| webhook ingest req/s, 202 after durable publish (%d conns, 1 KiB) | %.0f, p99 %.1f ms | bare Go net/http 202: %.0f | %.2f× |\n", o.conns, oRate, oP99, bRate, oRate/bRate)
	}
	if chat != "" {
		fmt.Printf("| Chat Completions added latency (go test -bench ChatVsDirect ./bridge/) | %s | target < 2 ms | |\n", chat)
	}
	if us != nil {
		bytes1, _ := us.bytesInUse()
		ended1, _ := us.endedScan()
		if n := ended1 - ended0; n > 0 {
			fmt.Printf("| bridge.db bytes per completed 3-step run (pages in use; webhooks add none) | %.0f B | target ≤ 3 KB | |\n", float64(bytes1-bytes0)/float64(n))
		}
		if accepted > 0 {
			fmt.Printf("| events.bolt file growth per webhook | %.0f B | retention: events.broker-max-* (docs/retention.md) | |\n", float64(us.boltInUse()-bolt0)/float64(accepted))
		}
	}
	for _, g := range grown {
		fmt.Printf("| %s | %s | %s | %.2f× |\n", g.measure, g.grown, g.fresh, g.ratio)
	}
	fmt.Printf("\nload average at end: %s\n", loadavg())
	return nil
}

// Row labels.
const (
	oursIngest      = "ours: webhook ingest, 202 after durable publish"
	bareIngest      = "bare net/http 202"
	oursLabel       = "ours (HTTP, FULL)"
	oursScanLabel   = "ours, count(*) per start"
	dbosFullLabel   = "DBOS Transact Go, SQLite FULL"
	dbosNormalLabel = "DBOS Transact Go, SQLite NORMAL (its default)"
	riverLabel      = "River, riversqlite FULL"
)

// oursRuns adapts ours to runSystem (its completions are counted in bridge.db).
type oursRuns struct{ *ours }

func (o oursRuns) completed() (int64, error) { return o.ended() }

// oursScan is ours with the first harness's completion count: a count(*)
// of every ended run, before every start.
type oursScan struct{ *ours }

func (o oursScan) name() string              { return oursScanLabel }
func (o oursScan) completed() (int64, error) { return o.endedScan() }
func (o oursScan) close() error              { return nil }

// startProfile starts a CPU profile into path; the function it answers
// stops it.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

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
