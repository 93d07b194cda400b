package callbacks

import (
	"testing"
	"time"
)

func testBreaker(window, minCalls int, rate float64, wait time.Duration) *breaker {
	return newBreaker(breakerSettings{window: window, minCalls: minCalls, rate: rate, wait: wait,
		trialCalls: max(1, min(minCalls, 10)), slow: 100 * time.Millisecond})
}

func TestBreakerOpensAtMinimumCalls(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	b := testBreaker(10, 4, 50, time.Minute)
	now := time.Unix(0, 0)
	for i := 0; i < 3; i++ {
		ok, _ := b.allow(now)
		is.True(ok)
		tripped, _ := b.record(now, verdictFailure, time.Millisecond)
		is.True(!tripped) // fewer than minimum-number-of-calls
	}
	ok, _ := b.allow(now)
	is.True(ok)
	tripped, trips := b.record(now, verdictFailure, time.Millisecond)
	is.True(tripped)
	is.Equal(trips, 1)
	ok, until := b.allow(now.Add(59 * time.Second))
	is.True(!ok)
	is.Equal(until, now.Add(time.Minute))
}

func TestBreakerRateBelowThresholdStaysClosed(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	b := testBreaker(10, 10, 50, time.Minute)
	now := time.Unix(0, 0)
	// 4 failures in 10 = 40% < 50%.
	for i := 0; i < 10; i++ {
		v := verdictSuccess
		if i%5 < 2 {
			v = verdictFailure
		}
		tripped, _ := b.record(now, v, time.Millisecond)
		is.True(!tripped)
	}
	// One more failure slides the oldest (a failure) out: still 40%.
	tripped, _ := b.record(now, verdictFailure, time.Millisecond)
	is.True(!tripped)
	// Ignored outcomes (4xx, policy refusals) do not count at all.
	for i := 0; i < 50; i++ {
		b.record(now, verdictIgnore, time.Millisecond)
	}
	st, _ := b.snapshot()
	is.Equal(st, "CLOSED")
	// Another failure replaces the second oldest failure: 4 of 10 still.
	tripped, _ = b.record(now, verdictFailure, time.Millisecond)
	is.True(!tripped)
	// The next one replaces a success: 5 of 10, exactly the threshold, opens.
	tripped, _ = b.record(now, verdictFailure, time.Millisecond)
	is.True(tripped)
}

func TestBreakerSlowCallsCountAsFailures(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	b := testBreaker(4, 4, 50, time.Minute)
	now := time.Unix(0, 0)
	b.record(now, verdictSuccess, time.Millisecond)
	b.record(now, verdictSuccess, time.Millisecond)
	b.record(now, verdictSuccess, 150*time.Millisecond) // slower than 100ms
	tripped, _ := b.record(now, verdictSuccess, 150*time.Millisecond)
	is.True(tripped)
}

func TestBreakerHalfOpen(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	b := testBreaker(4, 2, 50, time.Second)
	now := time.Unix(0, 0)
	b.record(now, verdictFailure, 0)
	tripped, _ := b.record(now, verdictFailure, 0)
	is.True(tripped)
	later := now.Add(time.Second)
	// Half-open: two trial permits, then wait for their outcomes.
	ok1, _ := b.allow(later)
	ok2, _ := b.allow(later)
	ok3, until := b.allow(later)
	is.True(ok1 && ok2)
	is.True(!ok3)
	is.True(until.IsZero())
	// An ignored trial gives its permit back.
	b.record(later, verdictIgnore, 0)
	ok4, _ := b.allow(later)
	is.True(ok4)
	// One failure of two trials = 50%: opens again, second trip in a row.
	b.record(later, verdictSuccess, 0)
	tripped, trips := b.record(later, verdictFailure, 0)
	is.True(tripped)
	is.Equal(trips, 2)
	// Next half-open: both succeed, closed, trips reset.
	again := later.Add(time.Second)
	b.allow(again)
	b.allow(again)
	b.record(again, verdictSuccess, 0)
	tripped, trips = b.record(again, verdictSuccess, 0)
	is.True(!tripped)
	is.Equal(trips, 0)
	st, _ := b.snapshot()
	is.Equal(st, "CLOSED")
	// Outcomes of calls started before an opening are ignored while open.
	b.record(again, verdictFailure, 0)
	b.record(again, verdictFailure, 0) // opens (2 of 2)
	tripped, _ = b.record(again, verdictFailure, 0)
	is.True(!tripped)
}

func TestBreakerSettingsFromConfiguration(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	s := DefaultSettings()
	bs := breakerSettingsFor(&s, nil)
	is.Equal(bs.window, 100)
	is.Equal(bs.minCalls, 10)
	is.Equal(bs.rate, 50.0)
	is.Equal(bs.wait, time.Minute)
	is.Equal(bs.slow, 10*time.Second)
	is.Equal(bs.trialCalls, 10)
	ft := 80
	is.Equal(breakerSettingsFor(&s, &Configuration{FailureThreshold: &ft}).rate, 80.0)
	s.CircuitBreaker.SlidingWindowSize = 5 // minimum above the window: the window decides
	is.Equal(breakerSettingsFor(&s, nil).minCalls, 5)
}

// TestBreakerLatchesAtDisableTrip: the trip that disables the configuration
// lets no trial call through, however long disabling takes, until reset
// (TestBreakerTripsDisable sent a third call when the write was slower than
// the open wait).
func TestBreakerLatchesAtDisableTrip(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	b := newBreaker(breakerSettings{window: 2, minCalls: 1, rate: 50, wait: 10 * time.Millisecond, trialCalls: 1, disableTrip: 2})
	now := time.Unix(0, 0)
	ok, _ := b.allow(now)
	is.True(ok)
	tripped, trips := b.record(now, verdictFailure, time.Millisecond)
	is.True(tripped && trips == 1)
	now = now.Add(20 * time.Millisecond)
	ok, _ = b.allow(now) // the trial
	is.True(ok)
	tripped, trips = b.record(now, verdictFailure, time.Millisecond)
	is.True(tripped && trips == 2)
	ok, until := b.allow(now.Add(time.Hour))
	is.True(!ok)
	is.True(until.IsZero()) // held until something kicks the lane
	b.reset()
	ok, _ = b.allow(now.Add(time.Hour))
	is.True(ok)
}
