package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// growRow is one cost-growth row of the table.
type growRow struct {
	measure, grown, fresh string
	ratio                 float64
}

// measureGrowth grows one data directory to o.grow completed runs and
// stored webhooks, starts it and a fresh one each in a child process, and
// alternates them: runs/s and ingest req/s grown against fresh, and each
// child's anonymous RSS after its windows (issue 21: within 10 %, under
// 100 MB).
func measureGrowth(freshDir, grownDir string, o options) ([]growRow, error) {
	say := func(s string) { fmt.Printf("grow: %s\n", s) }
	say(fmt.Sprintf("growing a data directory to %d completed runs and %d webhooks", o.grow, o.grow))
	if err := grow(grownDir, o.grow, say); err != nil {
		return nil, err
	}
	say(fmt.Sprintf("bridge.db %d MB, events.bolt %d MB", fileSize(grownDir, "bridge.db")>>20, fileSize(grownDir, "events.bolt")>>20))
	profile := func(name string) string {
		if o.growprofile == "" {
			return ""
		}
		return o.growprofile + "-" + name
	}
	fresh, err := startOursChild(freshDir, "ours, fresh data directory", profile("fresh"))
	if err != nil {
		return nil, err
	}
	defer fresh.close()
	grown, err := startOursChild(grownDir, fmt.Sprintf("ours, %d runs and webhooks stored", o.grow), profile("grown"))
	if err != nil {
		return nil, err
	}
	defer grown.close()
	runs := map[*ours][]float64{}
	hooks := map[*ours][]loadResult{}
	rss := map[*ours]int64{}
	for r := 0; r < o.rounds; r++ {
		for _, s := range []*ours{fresh, grown} {
			if o.growprofile != "" {
				s.child.signal(syscall.SIGUSR1)
			}
			rate, err := measureRuns(oursRuns{s}, o.d, o.clients)
			if o.growprofile != "" {
				s.child.signal(syscall.SIGUSR2)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.label, err)
			}
			fmt.Printf("round %d  %-46s %8.0f runs/s\n", r+1, s.label, rate)
			runs[s] = append(runs[s], rate)
			res := load(s.services+"/api/v1/webhook/bench", o.conns, o.d)
			fmt.Printf("round %d  %-46s %8.0f req/s  p50 %5.1f ms  p99 %5.1f ms  errors %d\n", r+1, s.label+": ingest", res.perSec,
				ms(res.p50), ms(res.p99), res.errors)
			hooks[s] = append(hooks[s], res)
			rss[s] = max(rss[s], s.child.rssAnon())
		}
	}
	rate := func(s *ours) float64 { return median(runs[s]) }
	ingest := func(s *ours) float64 { return medianBy(hooks[s], func(r loadResult) float64 { return r.perSec }) }
	return []growRow{
		{fmt.Sprintf("runs/s with %d completed runs stored (target within 10%% of fresh)", o.grow), fmt.Sprintf("%.0f", rate(grown)), fmt.Sprintf("fresh %.0f", rate(fresh)), rate(grown) / rate(fresh)},
		{fmt.Sprintf("ingest req/s with %d webhooks stored (target within 10%% of fresh)", o.grow), fmt.Sprintf("%.0f", ingest(grown)), fmt.Sprintf("fresh %.0f", ingest(fresh)), ingest(grown) / ingest(fresh)},
		{"daemon RSS (anonymous), peak after its windows (target < 100 MB)", fmt.Sprintf("%.0f MB", float64(rss[grown])/(1<<20)), fmt.Sprintf("fresh %.0f MB", float64(rss[fresh])/(1<<20)), float64(rss[grown]) / float64(rss[fresh])},
	}, nil
}

// chatLatency runs the bridge's BenchmarkChatVsDirect (it needs the fake
// agent, which the bridge package's tests build) and answers its added
// latency, or why it could not.
func chatLatency() string {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "ChatVsDirect", "-benchtime", "200x", "./bridge/")
	cmd.Dir = ".."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "chat benchmark: %v\n%s", err, out.String())
		return "not measured: go test -bench ChatVsDirect ./bridge/ failed"
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "BenchmarkChatVsDirect") {
			continue
		}
		var added, direct, via string
		for i := 1; i+1 < len(f); i++ {
			switch f[i+1] {
			case "added-ms":
				added = f[i]
			case "direct-median-ms":
				direct = f[i]
			case "bridge-median-ms":
				via = f[i]
			}
		}
		return fmt.Sprintf("%s ms (median: direct %s ms, through the bridge %s ms)", added, direct, via)
	}
	return "not measured: no result line"
}
