package callbacks

import (
	"net/http"
	"testing"
	"time"
)

// TestBackoff: jitter only lengthens the wait: after attempt n the delay is
// drawn from [d, min(1.5·d, max-delay)], never below d (issue 20, item 14).
func TestBackoff(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	lo, mid, hi := func() float64 { return 0 }, func() float64 { return 0.5 }, func() float64 { return 0.999999 }
	sec := time.Second
	is.Equal(backoff(1, sec, time.Minute, 2, lo), sec) // never before the initial delay
	is.Equal(backoff(1, sec, time.Minute, 2, mid), 1250*time.Millisecond)
	is.True(backoff(1, sec, time.Minute, 2, hi) < 1500*time.Millisecond)
	is.True(backoff(1, sec, time.Minute, 2, hi) > 1499*time.Millisecond)
	is.Equal(backoff(3, sec, time.Minute, 2, lo), 4*sec)
	is.Equal(backoff(3, sec, time.Minute, 2, mid), 5*sec)
	is.True(backoff(6, sec, time.Minute, 2, hi) > 47*sec)       // 32 s + up to 16 s
	is.Equal(backoff(6, sec, 40*sec, 2, hi), 40*sec)            // jitter stops at max-delay
	is.Equal(backoff(10, sec, time.Minute, 2, lo), time.Minute) // capped at max-delay
	is.Equal(backoff(10, sec, time.Minute, 2, hi), time.Minute)
	is.Equal(backoff(2, sec, time.Minute, 1, lo), sec)             // multiplier 1: constant
	is.Equal(backoff(5000, sec, time.Minute, 10, lo), time.Minute) // no overflow
	for range 1000 {
		d := backoff(1, sec, time.Minute, 2, nil)
		is.True(d >= sec && d <= 1500*time.Millisecond)
	}
}

// TestRetryCountsAndDelay: maxRetries counts the retries after the first
// attempt and retry.max-attempts counts attempts in all; the first retry is
// scheduled no sooner than retryDelayMs (issue 20, item 14).
func TestRetryCountsAndDelay(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_RETRY_MAX_ATTEMPTS": "2", "CALLBACK_RETRY_MAX_DELAY": "1000"})
	h.svc.rnd = func() float64 { return 0.5 } // before any event: the dispatcher reads it later
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) { return 503, nil, "" })
	h.authorize("127.0.0.1")
	none := h.createConfig(map[string]any{"name": "none", "url": rc.URL, "subscribedEventTypes": []string{"a"}, "maxRetries": 0})
	two := h.createConfig(map[string]any{"name": "two", "url": rc.URL, "subscribedEventTypes": []string{"b"}, "maxRetries": 2, "retryDelayMs": 40})
	def := h.createConfig(map[string]any{"name": "default", "url": rc.URL, "subscribedEventTypes": []string{"c"}})
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	h.publish("t", "a", "", `{}`)
	h.publish("t", "b", "", `{}`)
	h.publish("t", "c", "", `{}`)
	for _, c := range []struct {
		cfg      Configuration
		attempts int
	}{{none, 1}, {two, 3}, {def, 2}} {
		var ex []Execution
		waitFor(t, 10*time.Second, c.cfg.Name+" given up", func() bool {
			ex = h.executions(eqFilter("configurationId", c.cfg.ID))
			return len(ex) > 0 && ex[len(ex)-1].State == StateFailedPermanent
		})
		is.Equal(len(ex), c.attempts)
		for i, e := range ex {
			is.Equal(e.Attempt, i+1)
			is.Equal(e.MaxAttempts, c.attempts)
		}
		if c.cfg.ID == two.ID {
			// d = 40 ms, then 80 ms; the draw 0.5 adds a quarter of d.
			is.Equal(ex[0].NextAttemptAt.Sub(*ex[0].FinishedAt), 50*time.Millisecond)
			is.Equal(ex[1].NextAttemptAt.Sub(*ex[1].FinishedAt), 100*time.Millisecond)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	d, ok := retryAfter(h("7"), now)
	is.True(ok)
	is.Equal(d, 7*time.Second)
	d, ok = retryAfter(h(now.Add(90*time.Second).Format(http.TimeFormat)), now)
	is.True(ok)
	is.Equal(d, 90*time.Second)
	d, ok = retryAfter(h(now.Add(-time.Hour).Format(http.TimeFormat)), now)
	is.True(ok)
	is.Equal(d, time.Duration(0))
	for _, bad := range []string{"", "-1", "soon", "1.5"} {
		_, ok := retryAfter(h(bad), now)
		is.True(!ok)
	}
	_, ok = retryAfter(http.Header{}, now)
	is.True(!ok)
	d, _ = retryAfter(h("99999999999999"), now)
	is.Equal(d, 365*24*time.Hour) // bounded
	// Honoured when longer than the backoff, never beyond max-delay.
	is.Equal(nextDelay(time.Second, 5*time.Second, true, time.Minute), 5*time.Second)
	is.Equal(nextDelay(time.Second, 500*time.Millisecond, true, time.Minute), time.Second)
	is.Equal(nextDelay(time.Second, time.Hour, true, time.Minute), time.Minute)
	is.Equal(nextDelay(time.Second, time.Hour, false, time.Minute), time.Second)
}

func TestTransientStatuses(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]bool{408: true, 425: true, 429: true, 500: true, 502: true, 503: true, 599: true,
		400: false, 401: false, 404: false, 409: false, 410: false, 422: false, 301: false} {
		if transientStatus(code) != want {
			t.Errorf("%d: %v", code, !want)
		}
	}
}

// TestRetryAfterHonoured: a 429 with Retry-After delays the next attempt
// beyond the backoff, within max-delay.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_RETRY_MAX_DELAY": "1500"})
	rc := newReceiver(t, func(n int, _ *http.Request) (int, http.Header, string) {
		if n == 1 {
			return 429, http.Header{"Retry-After": {"1"}}, ""
		}
		return 200, nil, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	h.publish("t", "x", "", `{}`)
	waitFor(t, 15*time.Second, "the retry", func() bool { return rc.count() == 2 })
	got := rc.deliveries()
	gap := got[1].at.Sub(got[0].at)
	is.True(gap >= 950*time.Millisecond) // backoff alone would be ≤ 5ms
	ex := h.executions(eqFilter("configurationId", cfg.ID))
	is.Equal(ex[0].State, StateFailedRetrying)
	is.Equal(ex[0].Response.Status, 429)
}

// TestTimeoutsAreRetried: CALLBACK_DEFAULT_TIMEOUT bounds an attempt, and a
// configuration's timeoutMs overrides it.
func TestTimeoutsAreRetried(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_DEFAULT_TIMEOUT": "50", "CALLBACK_RETRY_MAX_ATTEMPTS": "2"})
	rc := newReceiver(t, func(n int, r *http.Request) (int, http.Header, string) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
		}
		return 200, nil, ""
	})
	h.authorize("127.0.0.1")
	short := h.createConfig(map[string]any{"name": "short", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	long := h.createConfig(map[string]any{"name": "long", "url": rc.URL, "subscribedEventTypes": []string{"y"}, "timeoutMs": 10000}) // far above the 300 ms answer, even on a loaded machine
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	h.publish("t", "x", "", `{}`)
	h.publish("t", "y", "", `{}`)
	waitFor(t, 15*time.Second, "short timed out twice", func() bool {
		ex := h.executions(eqFilter("configurationId", short.ID))
		return len(ex) == 2 && ex[1].State == StateFailedPermanent
	})
	for _, e := range h.executions(eqFilter("configurationId", short.ID)) {
		is.Equal(e.Error.Code, ErrCodeTimeout)
		is.True(e.Response == nil)
	}
	waitFor(t, 15*time.Second, "long succeeded", func() bool {
		ex := h.executions(eqFilter("configurationId", long.ID))
		return len(ex) == 1 && ex[0].State == StateSucceeded
	})
}
