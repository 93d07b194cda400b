package callbacks

import (
	"sync"
	"time"
)

// Breaker states.
const (
	breakerClosed = iota
	breakerOpen
	breakerHalfOpen
)

// verdict is what one attempt tells the breaker about its endpoint.
type verdict int

const (
	verdictIgnore  verdict = iota // says nothing about the endpoint's health (4xx, SSRF refusal, ...)
	verdictSuccess                // a timely 2xx
	verdictFailure                // 5xx, 408, 429, timeout, connection error, or a call slower than the threshold
)

// breakerSettings are one configuration's breaker parameters.
type breakerSettings struct {
	window      int           // sliding-window-size: outcomes kept
	minCalls    int           // minimum-number-of-calls before the rate counts
	rate        float64       // failure-rate-threshold in percent
	wait        time.Duration // wait-duration-in-open-state
	trialCalls  int           // calls let through when half-open
	slow        time.Duration // slow-call-duration-threshold
	disableTrip int           // consecutive trips that disable the configuration (0: never)
}

func breakerSettingsFor(s *Settings, c *Configuration) breakerSettings {
	cb := s.CircuitBreaker
	b := breakerSettings{
		window:      cb.SlidingWindowSize,
		minCalls:    min(cb.MinimumNumberOfCalls, cb.SlidingWindowSize),
		rate:        cb.FailureRateThreshold,
		wait:        ms(cb.WaitDurationInOpenStateMs),
		slow:        ms(cb.SlowCallDurationThresholdMs),
		disableTrip: cb.DisableAfterTrips,
	}
	if c != nil {
		b.rate = c.failureRate(s)
	}
	b.trialCalls = max(1, min(b.minCalls, 10))
	return b
}

// breaker is a count-based circuit breaker in the manner of resilience4j:
// CLOSED records outcomes in a sliding window; once it holds minCalls
// outcomes and the failure rate reaches the threshold it OPENs. OPEN refuses
// calls until wait has passed, then HALF_OPEN lets trialCalls through: if
// their failure rate is below the threshold it CLOSEs, otherwise it OPENs
// again. trips counts consecutive openings without a close in between.
type breaker struct {
	mu        sync.Mutex
	cfg       breakerSettings
	state     int
	ring      []bool // true = failure
	pos, n    int
	failures  int
	openUntil time.Time
	issued    int // trial permits handed out while half-open
	done      int // trial outcomes received
	failed    int // failed trials
	trips     int
	// latched: the trip that reached disableTrip keeps the breaker open, with
	// no trial calls, until reset (the configuration re-enabled, or its
	// disabling failed): disabling is written asynchronously and may take
	// longer than wait.
	latched bool
}

func newBreaker(cfg breakerSettings) *breaker {
	return &breaker{cfg: cfg, ring: make([]bool, cfg.window)}
}

// reconfigure applies changed settings; the window restarts when its size changes.
func (b *breaker) reconfigure(cfg breakerSettings) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cfg.window != b.cfg.window {
		b.ring, b.pos, b.n, b.failures = make([]bool, cfg.window), 0, 0, 0
	}
	b.cfg = cfg
}

// reset closes the breaker and forgets its history (a re-enabled configuration).
func (b *breaker) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.trips, b.latched = breakerClosed, 0, false
	b.clearWindow()
}

func (b *breaker) clearWindow() {
	clear(b.ring)
	b.pos, b.n, b.failures = 0, 0, 0
}

// allow asks for a permit at now. When refused, until is when to ask again;
// a zero until means "when a trial call finishes".
func (b *breaker) allow(now time.Time) (ok bool, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerOpen {
		if b.latched {
			return false, time.Time{}
		}
		if now.Before(b.openUntil) {
			return false, b.openUntil
		}
		b.state, b.issued, b.done, b.failed = breakerHalfOpen, 0, 0, 0
	}
	if b.state == breakerHalfOpen {
		if b.issued >= b.cfg.trialCalls {
			return false, time.Time{}
		}
		b.issued++
	}
	return true, time.Time{}
}

// record reports the outcome of a permitted call that took d. It returns
// whether the breaker opened because of it and the consecutive trip count.
func (b *breaker) record(now time.Time, v verdict, d time.Duration) (tripped bool, trips int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v == verdictSuccess && b.cfg.slow > 0 && d > b.cfg.slow {
		v = verdictFailure
	}
	switch b.state {
	case breakerClosed:
		if v == verdictIgnore {
			return false, b.trips
		}
		if b.n == len(b.ring) {
			if b.ring[b.pos] {
				b.failures--
			}
		} else {
			b.n++
		}
		fail := v == verdictFailure
		b.ring[b.pos] = fail
		if fail {
			b.failures++
		}
		b.pos = (b.pos + 1) % len(b.ring)
		if b.n >= b.cfg.minCalls && float64(b.failures)*100 >= b.cfg.rate*float64(b.n) {
			b.trip(now)
			return true, b.trips
		}
	case breakerHalfOpen:
		if v == verdictIgnore {
			b.issued-- // give the permit back: this call proved nothing
			return false, b.trips
		}
		b.done++
		if v == verdictFailure {
			b.failed++
		}
		if b.done >= b.cfg.trialCalls {
			if float64(b.failed)*100 >= b.cfg.rate*float64(b.done) {
				b.trip(now)
				return true, b.trips
			}
			b.state, b.trips = breakerClosed, 0
			b.clearWindow()
		}
	}
	// Outcomes of calls started before the breaker opened are ignored.
	return false, b.trips
}

func (b *breaker) trip(now time.Time) {
	b.state, b.openUntil = breakerOpen, now.Add(b.cfg.wait)
	b.trips++
	b.latched = b.cfg.disableTrip > 0 && b.trips >= b.cfg.disableTrip
	b.clearWindow()
}

// snapshot returns the state name and open-until time, for logs and tests.
func (b *breaker) snapshot() (string, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return [...]string{"CLOSED", "OPEN", "HALF_OPEN"}[b.state], b.openUntil
}
