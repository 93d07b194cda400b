//go:build !windows

package platform_test

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/trigger"
)

// readClock reads the fake time of a daemon process from file (see
// chaosClockEnv).
func readClock(t testing.TB, file string) time.Time {
	for range 100 {
		raw, err := os.ReadFile(file)
		if err == nil {
			if at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(raw))); err == nil {
				return at
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Errorf("no clock in %s", file)
	return time.Now()
}

// writeClock sets the fake time of a daemon process.
func writeClock(t testing.TB, file string, at time.Time) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(at.Format(time.RFC3339Nano)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleSurvivesSigkill: a daemon process on a fake clock is killed
// with SIGKILL around the moments its schedule fires. Every occurrence
// starts exactly one run across the kills and restarts, and the
// occurrences missed while the daemon was down become one skipped range.
func TestScheduleSurvivesSigkill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns daemon processes")
	}
	is := is.New(t)
	ext := newExtIdP(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	clock := filepath.Join(t.TempDir(), "clock")
	start := clockStart()
	writeClock(t, clock, start)
	d := &chaosDaemon{t: t, dir: dir, port: port, jwks: ext.srv.URL, env: []string{chaosClockEnv + "=" + clock}}
	d.start()
	defer func() { d.kill() }()
	h := d.client(ext)
	c := chaosClient{h: h}
	op := h.localToken()
	act := setupFlow(h)
	u := h.mustCreateSchedule(op, map[string]any{"cron": "* * * * *", "activation_id": act, "input": map[string]any{"name": "k"}})
	minute := start.Truncate(time.Minute)

	occurrences := func() []trigger.Occurrence {
		var page struct {
			Items []trigger.Occurrence `json:"items"`
		}
		h.must(200, c.do(req{method: "GET", path: schedulesPath(h) + "/" + u.ID + "/occurrences", token: op}), &page)
		return page.Items
	}
	waitFor := func(n int) []trigger.Occurrence {
		deadline := time.Now().Add(30 * time.Second) // a restarted daemon on a loaded machine
		for {
			occ := occurrences()
			if len(occ) >= n || time.Now().After(deadline) {
				return occ
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	runs := func() int {
		var page struct {
			Items []struct{ ID string } `json:"items"`
		}
		h.must(200, c.do(req{method: "GET", path: ePath(h) + "/runs?limit=100", token: op}), &page)
		return len(page.Items)
	}

	// Kill at a random point while each of three occurrences fires, and
	// again once it has: each starts one run.
	for i := 1; i <= 3; i++ {
		m := minute.Add(time.Duration(i) * time.Minute)
		writeClock(t, clock, m.Add(2*time.Second))
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		d.kill()
		d.start()
		writeClock(t, clock, m.Add(40*time.Second))
		occ := waitFor(i)
		is.Equal(len(occ), i)
		is.Equal(occ[0].Kind, trigger.OccurrenceStarted)
		is.Equal(occ[0].From, m)
		d.kill()
		d.start()
		time.Sleep(300 * time.Millisecond) // a turn or more of the restarted loop
		is.Equal(len(occurrences()), i)
		is.Equal(runs(), i)
	}

	// Down across three occurrences: one skipped range, then the
	// occurrence of the minute the daemon is back in.
	d.kill()
	back := minute.Add(7 * time.Minute)
	writeClock(t, clock, back.Add(5*time.Second))
	d.start()
	occ := waitFor(5)
	is.Equal(len(occ), 5)
	is.Equal(occ[0].Kind, trigger.OccurrenceStarted)
	is.Equal(occ[0].From, back)
	is.Equal(occ[1].Kind, trigger.OccurrenceSkipped)
	is.Equal(occ[1].From, minute.Add(4*time.Minute))
	is.Equal(occ[1].To, minute.Add(6*time.Minute))
	is.Equal(runs(), 4)
	for _, o := range occ {
		if o.Kind == trigger.OccurrenceStarted {
			h.waitRun(op, *o.RunID, "succeeded")
		}
	}
}
