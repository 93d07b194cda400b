package platform_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/platformtest"
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
func clockStart() time.Time {
	return time.Now().UTC().Truncate(time.Minute).Add(time.Minute + 10*time.Second)
}

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

// waitOccurrences polls until the schedule has n occurrences (30 s at most:
// a generous bound costs nothing when the test passes, and a loaded CI
// machine running -race can stall the scheduler for seconds).
func (h *harness) waitOccurrences(tok, id string, n int) []trigger.Occurrence {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
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

// waitStatus polls until the schedule has status (30 s at most, as above).
func (h *harness) waitScheduleStatus(tok, id, status string) trigger.Schedule {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
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
	t.Parallel()
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	op := h.localToken()
	start := clk.Now()
	minute := start.Truncate(time.Minute)

	res := h.saveSchedule(op, map[string]any{"cron": "*  *  * * *", "activation_id": act, "input": map[string]any{"name": "cron", "apiKey": "sk-1"}}, "")
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
	is.Equal(string(u.Input), `{"apiKey":"[redacted]","name":"cron"}`) // secret values are never shown
	is.Equal(string(h.getSchedule(op, u.ID).Input), `{"apiKey":"[redacted]","name":"cron"}`)
	var stored string // sealed at rest, like a run's secret values
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT input FROM platform_schedules WHERE id = ?`, u.ID).Scan(&stored))
	is.True(strings.HasPrefix(stored, "sealed:"))
	is.True(!strings.Contains(stored, "sk-1") && !strings.Contains(stored, "cron"))

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
	is.Equal(string(run.State.Input), `{"apiKey":"[redacted]","name":"cron"}`)
	var out struct {
		Greeting string `json:"greeting"`
	}
	is.NoErr(json.Unmarshal(run.State.Output, &out))
	is.Equal(out.Greeting, "hello cron")
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

// TestScheduleSaveRules: every PF-SCHEDULE-REVISION condition of the
// Errors table, the If-Match syntax, and the body rules with both sides of
// their bounds.
func TestScheduleSaveRules(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _, act := scheduleHarness(t)
	op := h.localToken()
	body := func(kv ...any) map[string]any {
		b := map[string]any{"cron": "0 9 * * 1-5", "activation_id": act, "input": map[string]any{"name": "x"}}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
			} else {
				b[kv[i].(string)] = kv[i+1]
			}
		}
		return b
	}
	u := h.mustCreateSchedule(op, body("timezone", "UTC", "missed_policy", "skip"))

	// Replace: id + current revision saves revision 2 (200, ETag "2").
	res := h.saveSchedule(op, body("id", u.ID, "cron", "30 8 * * *"), `"1"`)
	var v2 trigger.Upcoming
	h.must(200, res, &v2)
	is.Equal(res.header.Get("ETag"), `"2"`)
	is.Equal(v2.ID, u.ID)
	is.Equal(v2.Revision, int64(2))
	is.Equal(v2.Cron, "30 8 * * *")
	is.Equal(v2.CreatedAt, u.CreatedAt)

	// PF-SCHEDULE-REVISION: stale revision (with the current one as ETag),
	// existing id without revision, new id with one, no id with one.
	res = h.saveSchedule(op, body("id", u.ID), "1")
	h.problem(409, "PF-SCHEDULE-REVISION", res)
	is.Equal(res.header.Get("ETag"), `"2"`)
	h.problem(409, "PF-SCHEDULE-REVISION", h.saveSchedule(op, body("id", u.ID), ""))
	fresh := "0190a0b0-0000-7000-8000-0000000000aa"
	h.problem(409, "PF-SCHEDULE-REVISION", h.saveSchedule(op, body("id", fresh), `"1"`))
	h.problem(409, "PF-SCHEDULE-REVISION", h.saveSchedule(op, body(), `"1"`))
	// A new id without a revision creates a schedule with that id.
	var withID trigger.Upcoming
	h.must(201, h.saveSchedule(op, body("id", fresh), ""), &withID)
	is.Equal(withID.ID, fresh)

	// An optional Idempotency-Key replays the created schedule.
	keyed := func(b map[string]any) resp {
		return h.do(req{method: "POST", path: schedulesPath(h), token: op, body: b, hdr: map[string]string{"Idempotency-Key": "sched-1"}})
	}
	var k1, k2 trigger.Upcoming
	h.must(201, keyed(body()), &k1)
	res = keyed(body())
	h.must(201, res, &k2)
	is.Equal(k2.ID, k1.ID)
	is.Equal(res.header.Get("Idempotent-Replayed"), "true")
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", keyed(body("cron", "1 9 * * *")))

	// If-Match syntax: 422 PF-ETAG.
	for _, bad := range []string{"0", "W/\"2\"", "*", "-2", "02", `"1", "2"`} {
		h.problem(422, "PF-ETAG", h.saveSchedule(op, body("id", u.ID), bad))
	}

	// Deleted: a tombstone cannot change.
	res = h.scheduleAction(op, u.ID, "delete", `"2"`)
	var del trigger.Schedule
	h.must(200, res, &del)
	is.Equal(del.Status, trigger.StatusDeleted)
	is.Equal(del.Revision, int64(3))
	is.Equal(del.NextDueAt, nil)
	h.problem(409, "PF-SCHEDULE-REVISION", h.saveSchedule(op, body("id", u.ID), `"3"`))
	for _, a := range []string{"disable", "enable", "delete"} {
		h.problem(409, "PF-SCHEDULE-REVISION", h.scheduleAction(op, u.ID, a, `"3"`))
	}
	is.Equal(h.getSchedule(op, u.ID).Status, trigger.StatusDeleted) // still readable

	// The calendar grammar: 422 PF-VALIDATION naming the field.
	cronProblem := func(expr, diag, field string) {
		t.Helper()
		p := h.problem(422, "PF-VALIDATION", h.saveSchedule(op, body("cron", expr), ""))
		is.Equal(len(p.Diagnostics), 1)
		is.Equal(p.Diagnostics[0].Path, "/cron")
		is.Equal(p.Diagnostics[0].Code, diag)
		is.True(strings.Contains(p.Diagnostics[0].Message, field))
	}
	cronProblem("0 9 * JAN *", "cron_name", "month")
	cronProblem("@hourly", "cron_macro", "macros")
	cronProblem("0 0 9 * * *", "cron_field_count", "seconds")
	cronProblem("0 9 ? * *", "cron_question_mark", "day_of_month")
	cronProblem("0 9 L * *", "cron_last", "day_of_month")
	cronProblem("0 9 1W * *", "cron_weekday", "day_of_month")
	cronProblem("0 9 * * 1#1", "cron_hash", "day_of_week")
	cronProblem("H 9 * * *", "cron_random", "minute")
	cronProblem("TZ=Europe/Paris 0 9 * * *", "cron_time_zone", "UTC")
	cronProblem("0 0 31 2 *", "cron_never", "never")
	cronProblem("0 9 1 * 1", "cron_both_days", "day_of_week")
	cronProblem("100 9 * * *", "cron_number", "two digits")
	cronProblem("30-10 9 * * *", "cron_wrapping_range", "wraps")
	cronProblem("*/0 9 * * *", "cron_step", "step")
	// Bounds: 256 characters and 32 list terms pass, one more does not.
	pad := func(n int) string { return strings.Repeat(" ", n-len("0 9 * * *")) + "0 9 * * *" }
	h.must(201, h.saveSchedule(op, body("cron", pad(256)), ""), nil)
	cronProblem(pad(257), "cron_too_long", "256")
	list := func(n int) string {
		terms := make([]string, n)
		for i := range terms {
			terms[i] = strconv.Itoa(i % 60)
		}
		return strings.Join(terms, ",") + " 9 * * *"
	}
	h.must(201, h.saveSchedule(op, body("cron", list(32)), ""), nil)
	cronProblem(list(33), "cron_list_too_long", "32")

	// The other fields.
	invalid := func(b map[string]any, path string) {
		t.Helper()
		p := h.problem(422, "PF-VALIDATION", h.saveSchedule(op, b, ""))
		if path != "" {
			is.Equal(p.Diagnostics[0].Path, path)
		}
	}
	invalid(body("timezone", "Europe/Paris"), "/timezone")
	invalid(body("missed_policy", "catch_up"), "/missed_policy")
	invalid(body("cron", nil), "/cron")
	invalid(body("activation_id", nil), "/activation_id")
	invalid(body("activation_id", "not-a-uuid"), "/activation_id")
	invalid(body("activation_id", "0190a0b0-0000-7000-8000-0000000000bb"), "/activation_id") // no such activation
	invalid(body("id", "x"), "/id")
	invalid(body("input", []int{1}), "/input")
	invalid(body("input", map[string]any{}), "") // the workflow requires name
	invalid(body("extra", 1), "/extra")
	big := strings.Repeat("x", trigger.MaxInputBytes)
	invalid(body("input", map[string]any{"name": big}), "/input")
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.saveSchedule(op, body("input", map[string]any{"name": big + strings.Repeat("x", 64<<10)}), ""))

	// Not found: unknown, malformed, or another environment's schedule.
	h.problem(404, "PF-NOT-FOUND", h.get(schedulesPath(h)+"/0190a0b0-0000-7000-8000-0000000000cc", op))
	h.problem(404, "PF-NOT-FOUND", h.get(schedulesPath(h)+"/nope", op))
	other := h.environment(h.ws.ProjectID, "other")
	h.problem(404, "PF-NOT-FOUND", h.get(h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)+"/schedules/"+withID.ID, op))
	h.problem(404, "PF-NOT-FOUND", h.scheduleAction(op, "0190a0b0-0000-7000-8000-0000000000cc", "disable", "1"))
}

// TestScheduleRange: a calendar whose next occurrence would fall after the
// year 9999 is refused at save (422 PF-SCHEDULE-RANGE) and blocks an
// enabled schedule at the scan that fires its last occurrence.
func TestScheduleRange(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	// The built-in provider signs an hour's tokens on the fake clock.
	tokenAt := func(at time.Time) string {
		clk.Set(at)
		h.opTok = ""
		return h.localToken()
	}
	op := tokenAt(time.Date(9999, 6, 1, 12, 0, 0, 0, time.UTC))
	body := map[string]any{"cron": "0 0 1 1 *", "activation_id": act, "input": map[string]any{"name": "y"}}
	p := h.problem(422, "PF-SCHEDULE-RANGE", h.saveSchedule(op, body, ""))
	is.Equal(p.Diagnostics[0].Path, "/cron")

	// Saved just before its last representable occurrence, it fires once,
	// then is blocked: the next one would be in the year 10000.
	op = tokenAt(time.Date(9998, 12, 31, 23, 30, 0, 0, time.UTC))
	u := h.mustCreateSchedule(op, body)
	is.Equal(len(u.Upcoming), 1)
	last := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	clk.Set(last.Add(5 * time.Second))
	s := h.waitScheduleStatus(op, u.ID, trigger.StatusBlocked)
	is.Equal(*s.BlockedReason, trigger.BlockedNoOccurrence)
	is.Equal(s.NextDueAt, nil)
	is.Equal(s.Revision, int64(1))
	occ := h.occurrences(op, u.ID)
	is.Equal(len(occ), 1)
	is.Equal(occ[0].Kind, trigger.OccurrenceStarted)
	is.Equal(occ[0].From, last)
	// Enabling cannot rebind it: there is still no future occurrence.
	p = h.problem(422, "PF-SCHEDULE-RANGE", h.scheduleAction(op, u.ID, "enable", "1"))
	is.Equal(p.Diagnostics[0].Code, "no_future_occurrence")
}

// TestScheduleStates: disable, enable (fresh cursor, no replay), blocked
// for a retired activation and for an owner who lost run.start, and the
// rebind by a new save or enable.
func TestScheduleStates(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	op := h.localToken()
	minute := clk.Now().Truncate(time.Minute)
	u := h.mustCreateSchedule(op, map[string]any{"cron": "* * * * *", "activation_id": act, "input": map[string]any{"name": "s"}})

	res := h.scheduleAction(op, u.ID, "disable", `"1"`)
	var s trigger.Schedule
	h.must(200, res, &s)
	is.Equal(res.header.Get("ETag"), `"2"`)
	is.Equal(s.Status, trigger.StatusDisabled)
	is.Equal(s.NextDueAt, nil)
	h.problem(409, "PF-CONFLICT", h.scheduleAction(op, u.ID, "disable", `"2"`))
	h.problem(409, "PF-SCHEDULE-REVISION", h.scheduleAction(op, u.ID, "enable", `"1"`))
	h.problem(422, "PF-ETAG", h.scheduleAction(op, u.ID, "enable", ""))

	// Disabled: no firing; a save keeps it disabled.
	clk.Set(minute.Add(3*time.Minute + 5*time.Second))
	settle()
	is.Equal(len(h.occurrences(op, u.ID)), 0)
	var saved trigger.Upcoming
	h.must(200, h.saveSchedule(op, map[string]any{"id": u.ID, "cron": "* * * * *", "activation_id": act, "input": map[string]any{"name": "s2"}}, `"2"`), &saved)
	is.Equal(saved.Status, trigger.StatusDisabled)
	is.Equal(saved.NextDueAt, nil)

	// Enable: a fresh future cursor; the missed minutes are not replayed.
	h.must(200, h.scheduleAction(op, u.ID, "enable", `"3"`), &s)
	is.Equal(s.Status, trigger.StatusEnabled)
	is.Equal(s.Revision, int64(4))
	is.Equal(*s.NextDueAt, minute.Add(4*time.Minute))
	h.problem(409, "PF-CONFLICT", h.scheduleAction(op, u.ID, "enable", `"4"`))
	settle()
	is.Equal(len(h.occurrences(op, u.ID)), 0)
	clk.Set(minute.Add(4*time.Minute + time.Second))
	occ := h.waitOccurrences(op, u.ID, 1)
	is.Equal(occ[0].Revision, int64(4))
	is.Equal(string(h.waitRun(op, *occ[0].RunID, "succeeded").State.Input), `{"name":"s2"}`)

	// The activation is retired: the next scan blocks the schedule.
	h.must(200, h.do(req{method: "POST", path: ePath(h) + "/activations/" + act + "/retire", token: op,
		hdr: map[string]string{"If-Match": "1", "Idempotency-Key": "retire-1"}}), nil)
	clk.Set(minute.Add(5*time.Minute + time.Second))
	s = h.waitScheduleStatus(op, u.ID, trigger.StatusBlocked)
	is.Equal(*s.BlockedReason, trigger.BlockedActivation)
	is.Equal(s.Revision, int64(4))
	is.Equal(len(h.occurrences(op, u.ID)), 1)
	// Enabling cannot rebind a retired activation; a save with another
	// activation does.
	h.problem(409, "PF-CONFLICT", h.scheduleAction(op, u.ID, "enable", `"4"`))
	wf := h.mustPublish(op, "workflows", strings.Replace(platformtest.FlowWorkflow, "version: 1", "version: 2", 1), "flow-v2").ID
	act2 := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "flow-activation-2", "").ID
	h.must(200, h.saveSchedule(op, map[string]any{"id": u.ID, "cron": "* * * * *", "activation_id": act2, "input": map[string]any{"name": "s3"}}, `"4"`), &saved)
	is.Equal(saved.Status, trigger.StatusEnabled)
	is.Equal(saved.BlockedReason, nil)

	// The owner loses run.start: blocked; another person's enable rebinds
	// it to them.
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
	dana, danaTok := h.user("dana", "deployer", scope)
	opGrant := h.grant(dana, scope, "operator")
	var mine trigger.Upcoming
	h.must(201, h.saveSchedule(danaTok, map[string]any{"cron": "* * * * *", "activation_id": act2, "input": map[string]any{"name": "d"}}, ""), &mine)
	is.Equal(mine.PrincipalID, dana)
	h.must(200, h.do(req{method: "DELETE", path: "/admin/grants/" + opGrant, token: op}), nil)
	clk.Set(minute.Add(6*time.Minute + time.Second))
	s = h.waitScheduleStatus(op, mine.ID, trigger.StatusBlocked)
	is.Equal(*s.BlockedReason, trigger.BlockedGrant)
	is.Equal(len(h.occurrences(op, mine.ID)), 0)
	h.problem(403, "PF-FORBIDDEN", h.scheduleAction(danaTok, mine.ID, "enable", `"1"`)) // enable needs run.start
	h.must(200, h.scheduleAction(op, mine.ID, "enable", `"1"`), &s)
	is.Equal(s.PrincipalID, h.principalOf(op))
	is.Equal(s.Status, trigger.StatusEnabled)
	clk.Set(minute.Add(7*time.Minute + time.Second))
	occ = h.waitOccurrences(op, mine.ID, 1)
	is.Equal(h.waitRun(op, *occ[0].RunID, "succeeded").CreatedBy, h.principalOf(op))
}

// TestScheduleAccessAndLists: the capabilities of the Environment-level
// table, the scope-wide rule for listing, pages and the occurrence limit.
func TestScheduleAccessAndLists(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	op := h.localToken()
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
	_, deployer := h.user("dep", "deployer", scope)
	_, operator := h.user("opr", "operator", scope)
	_, viewer := h.user("vic", "viewer", scope)
	_, nobody := h.user("nob", "", scope)
	body := map[string]any{"cron": "* * * * *", "activation_id": act, "input": map[string]any{"name": "a"}}
	h.problem(403, "PF-FORBIDDEN", h.saveSchedule(deployer, body, "")) // no run.start
	h.problem(403, "PF-FORBIDDEN", h.saveSchedule(operator, body, "")) // no trigger.manage
	h.problem(403, "PF-FORBIDDEN", h.saveSchedule(viewer, body, ""))
	h.problem(401, "PF-UNAUTHENTICATED", h.saveSchedule("", body, ""))
	ids := []string{}
	for range 3 {
		ids = append(ids, h.mustCreateSchedule(op, body).ID)
	}
	h.must(200, h.scheduleAction(op, ids[1], "delete", "1"), nil)
	h.problem(403, "PF-FORBIDDEN", h.scheduleAction(operator, ids[0], "disable", "1"))
	h.problem(403, "PF-FORBIDDEN", h.scheduleAction(viewer, ids[0], "delete", "1"))
	h.problem(403, "PF-FORBIDDEN", h.get(schedulesPath(h), nobody))
	h.problem(403, "PF-FORBIDDEN", h.get(schedulesPath(h)+"/"+ids[0], nobody))
	h.problem(403, "PF-FORBIDDEN", h.get(schedulesPath(h)+"/"+ids[0]+"/occurrences", nobody))

	// Pages in id order, the deleted schedule included; limit 1..100.
	type page struct {
		Items      []trigger.Schedule `json:"items"`
		NextCursor *string            `json:"next_cursor"`
	}
	var got []string
	cursor := ""
	for {
		var p page
		path := schedulesPath(h) + "?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		h.must(200, h.get(path, viewer), &p)
		for _, s := range p.Items {
			got = append(got, s.ID)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	is.Equal(got, ids)
	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "cursor=forged", "status=x"} {
		h.problem(422, "PF-VALIDATION", h.get(schedulesPath(h)+"?"+bad, viewer))
	}
	h.must(200, h.get(schedulesPath(h)+"?limit=100", viewer), nil)
	h.must(200, h.get(schedulesPath(h)+"?limit=1", viewer), nil)
	var runs struct {
		NextCursor *string `json:"next_cursor"`
	}
	h.must(200, h.get(ePath(h)+"/activations?limit=1", op), &runs)

	// Occurrences: default 100, limit 1..100, newest first, cursor bound
	// to the schedule.
	start := clk.Now().Truncate(time.Minute)
	for i := 1; i <= 3; i++ {
		clk.Set(start.Add(time.Duration(i) * time.Minute))
		h.waitOccurrences(op, ids[0], i)
	}
	var occ struct {
		Items      []trigger.Occurrence `json:"items"`
		NextCursor *string              `json:"next_cursor"`
	}
	h.must(200, h.get(schedulesPath(h)+"/"+ids[0]+"/occurrences?limit=2", viewer), &occ)
	is.Equal(len(occ.Items), 2)
	is.True(occ.Items[0].From.After(occ.Items[1].From))
	is.True(occ.NextCursor != nil)
	next := *occ.NextCursor
	h.must(200, h.get(schedulesPath(h)+"/"+ids[0]+"/occurrences?cursor="+next, viewer), &occ)
	is.Equal(len(occ.Items), 1)
	is.Equal(occ.NextCursor, nil)
	h.problem(422, "PF-VALIDATION", h.get(schedulesPath(h)+"/"+ids[2]+"/occurrences?cursor="+next, viewer))
	h.problem(422, "PF-VALIDATION", h.get(schedulesPath(h)+"?cursor="+next, viewer))
	for _, bad := range []string{"limit=0", "limit=101"} {
		h.problem(422, "PF-VALIDATION", h.get(schedulesPath(h)+"/"+ids[0]+"/occurrences?"+bad, viewer))
	}
	h.must(200, h.get(schedulesPath(h)+"/"+ids[0]+"/occurrences?limit=100", viewer), &occ)
	is.Equal(len(occ.Items), 3)
	h.must(200, h.get(schedulesPath(h)+"/"+ids[1]+"/occurrences", viewer), &occ) // a tombstone's history is readable
	is.Equal(len(occ.Items), 0)
	_ = http.StatusOK
}
