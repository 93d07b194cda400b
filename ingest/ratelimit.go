package ingest

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxLimiters bounds the per-provider limiter map: provider names come from
// the URL, so beyond this many the rest share one overflow bucket.
const maxLimiters = 4096

// overflowKey is the shared bucket of invalid and overflowing provider names;
// it cannot collide with a real provider because '~' fails the name pattern
// and cannot start a configured provider key in practice.
const overflowKey = "~overflow"

// rateLimiter is a token bucket per provider.
type rateLimiter struct {
	enabled  bool
	def      RateLimitLimit
	override map[string]RateLimitLimit
	now      func() time.Time

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

func newRateLimiter(c RateLimitConfig, now func() time.Time) *rateLimiter {
	return &rateLimiter{
		enabled:  c.Enabled,
		def:      RateLimitLimit{LimitForPeriod: c.LimitForPeriod, LimitRefreshPeriod: c.LimitRefreshPeriod},
		override: c.Providers,
		now:      now,
		limiters: make(map[string]*rate.Limiter),
	}
}

func (l *rateLimiter) limiter(key string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lim := l.limiters[key]; lim != nil {
		return lim
	}
	if _, configured := l.override[key]; len(l.limiters) >= maxLimiters && !configured {
		key = overflowKey
		if lim := l.limiters[key]; lim != nil {
			return lim
		}
	}
	c, ok := l.override[key]
	if !ok {
		c = l.def
	}
	every := c.LimitRefreshPeriod.D() / time.Duration(c.LimitForPeriod)
	lim := rate.NewLimiter(rate.Every(every), c.LimitForPeriod)
	l.limiters[key] = lim
	return lim
}

// allow takes a token for key; when none is left it returns false and how
// long until one is (the Retry-After).
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	if !l.enabled {
		return true, 0
	}
	now := l.now()
	res := l.limiter(key).ReserveN(now, 1)
	if !res.OK() {
		return false, time.Second
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// retryAfterSeconds rounds a wait up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
