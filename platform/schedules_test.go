package platform_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/trigger"
)

// fakeClock is the platform's injected clock in schedule tests: the
// scheduler fires against it, so no test waits for a real minute.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// withClock drives the daemon with c.
func withClock(c *fakeClock) harnessOption { return func(h *harness) { h.now = c.Now } }

// clockStart is a fake time a little ahead of the real one (external
// tokens carry real times), 10 seconds into a minute.
func clockStart() time.Time { return time.Now().UTC().Truncate(time.Minute).Add(time.Minute + 10*time.Second) }

// scheduleHarness starts a daemon on a fake clock with the flow workflow
// activated, and answers the activation id.
func scheduleHarness(t *testing.T) (*harness, *fakeClock, string) {
	clk := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clk))
	return h, clk, setupFlow(h)
}

func schedulesPath(h *harness) string { return ePath(h) + "/schedules" }

// saveSchedule posts a schedule request (ifMatch "" sends none).
func (h *harness) saveSchedule(tok string, body any, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "POST", path: schedulesPath(h), token: tok, body: body, hdr: hdr})
}

func (h *harness) mustCreateSchedule(tok string, body any) trigger.Upcoming {
	h.t.Helper()
	var u trigger.Upcoming
	h.must(201, h.saveSchedule(tok, body, ""), &u)
	return u
}

// scheduleAction posts disable, enable or delete with If-Match.
func (h *harness) scheduleAction(tok, id, action, ifMatch string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if ifMatch != "" {
		hdr["If-Match"] = ifMatch
	}
	return h.do(req{method: "POST", path: schedulesPath(h) + "/" + id + "/" + action, token: tok, hdr: hdr})
}

func (h *harness) getSchedule(tok, id string) trigger.Schedule {
	h.t.Helper()
	var s trigger.Schedule
	h.must(200, h.get(schedulesPath(h)+"/"+id, tok), &s)
	return s
}

func (h *harness) occurrences(tok, id string) []trigger.Occurrence {
	h.t.Helper()
	var page struct {
		Items []trigger.Occurrence `json:"items"`
	}
	h.must(200, h.get(schedulesPath(h)+"/"+id+"/occurrences", tok), &page)
	return page.Items
}

// waitOccurrences polls until the schedule has n occurrences (5 s at most).
func (h *harness) waitOccurrences(tok, id string, n int) []trigger.Occurrence {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		occ := h.occurrences(tok, id)
		if len(occ) >= n {
			return occ
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("schedule %s has %d occurrences, want %d: %+v", id, len(occ), n, occ)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStatus polls until the schedule has status (5 s at most).
func (h *harness) waitScheduleStatus(tok, id, status string) trigger.Schedule {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := h.getSchedule(tok, id)
		if s.Status == status {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("schedule %s is %s, want %s: %+v", id, s.Status, status, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle lets the scheduler loop turn a few times (it polls every 200 ms).
func settle() { time.Sleep(3 * engine.PollInterval / 2) }

func countRuns(h *harness, tok string) int {
	h.t.Helper()
	var page struct {
		Items []engine.Run `json:"items"`
	}
	h.must(200, h.get(ePath(h)+"/runs?limit=100", tok), &page)
	return len(page.Items)
}

func TestScheduleFiresOncePerOccurrenceAndSkipsMissedOnes(t *testing.T) {
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	op := h.localToken()
	start := clk.Now()
	minute := start.Truncate(time.Minute)

	res := h.saveSchedule(op, map[string]any{"cron": "*  *  * * *", "activation_id": act, "input": map[string]any{"name": "cron"}}, "")
	var u trigger.Upcoming
	h.must(201, res, &u)
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.Equal(res.header.Get("Location"), "/api/v1"+strings.TrimPrefix(schedulesPath(h), "/api/v1")+"/"+u.ID)
	is.Equal(u.Revision, int64(1))
	is.Equal(u.Status, trigger.StatusEnabled)
	is.Equal(u.Cron, "* * * * *") // canonical
	is.Equal(u.Timezone, "UTC")
	is.Equal(u.MissedPolicy, "skip")
	is.Equal(*u.NextDueAt, minute.Add(time.Minute)) // a fresh future cursor
	is.Equal(len(u.Upcoming), 5)
	is.Equal(u.Upcoming[4], minute.Add(5*time.Minute))
	is.Equal(u.PrincipalID, h.principalOf(op))
	is.Equal(u.BlockedReason, nil)

	settle()
	is.Equal(len(h.occurrences(op, u.ID)), 0) // nothing is due in the minute of the save

	// The next minute: one run, started as the execution principal.
	m1 := minute.Add(time.Minute)
	clk.Set(m1.Add(2 * time.Second))
	occ := h.waitOccurrences(op, u.ID, 1)
	is.Equal(occ[0].Kind, trigger.OccurrenceStarted)
	is.Equal(occ[0].From, m1)
	is.Equal(occ[0].To, m1)
	is.Equal(occ[0].Revision, int64(1))
	is.True(occ[0].RunID != nil)
	run := h.waitRun(op, *occ[0].RunID, "succeeded")
	is.Equal(run.CreatedBy, u.PrincipalID)
	is.Equal(string(run.State.Input), `{"name":"cron"}`)
	is.Equal(*h.getSchedule(op, u.ID).NextDueAt, m1.Add(time.Minute))

	// Later in the same minute: still one.
	clk.Set(m1.Add(50 * time.Second))
	settle()
	is.Equal(len(h.occurrences(op, u.ID)), 1)
	is.Equal(countRuns(h, op), 1)

	// Three minutes later: the two missed occurrences are one skipped
	// range, only the current one starts.
	m4 := m1.Add(3 * time.Minute)
	clk.Set(m4.Add(30 * time.Second))
	occ = h.waitOccurrences(op, u.ID, 3)
	is.Equal(len(occ), 3) // newest first
	is.Equal(occ[0].Kind, trigger.OccurrenceStarted)
	is.Equal(occ[0].From, m4)
	is.Equal(occ[1].Kind, trigger.OccurrenceSkipped)
	is.Equal(occ[1].From, m1.Add(time.Minute))
	is.Equal(occ[1].To, m1.Add(2*time.Minute))
	is.Equal(occ[1].RunID, nil)
	is.Equal(countRuns(h, op), 2)
}

// principalOf answers the principal id of a token's caller.
func (h *harness) principalOf(tok string) string {
	h.t.Helper()
	var id struct {
		PrincipalID string `json:"principal_id"`
	}
	h.must(200, h.get("/api/v1/identity", tok), &id)
	return id.PrincipalID
}

var _ = http.StatusOK
