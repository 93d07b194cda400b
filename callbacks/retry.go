package callbacks

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is the delay after failed attempt number n (1-based): with
// d = min(maxDelay, initial × multiplier^(n-1)), a uniform draw from
// [d, min(1.5·d, maxDelay)]. The jitter only ever lengthens the wait, so
// that endpoints recovering from an outage are not hit by every retry at the
// same instant, while no retry comes before its backoff (the first one never
// before retry.initial-delay-ms or the configuration's retryDelayMs) nor
// after maxDelay (callbacks/README.md, "Retries"). rnd draws from [0, 1).
func backoff(n int, initial, maxDelay time.Duration, multiplier float64, rnd func() float64) time.Duration {
	d := float64(initial) * math.Pow(multiplier, float64(max(n-1, 0)))
	if d > float64(maxDelay) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(maxDelay)
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	return min(time.Duration(d+rnd()*d/2), maxDelay)
}

// retryAfter parses a Retry-After header (seconds or an HTTP date) relative
// to now; ok is false when it is absent or unusable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(365*24*time.Hour/time.Second) {
			secs = int64(365 * 24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// nextDelay combines backoff and Retry-After: the receiver's wish is
// honoured when it asks for longer than the backoff, but never beyond
// max-delay, so a hostile or broken header cannot park a delivery forever.
func nextDelay(b time.Duration, ra time.Duration, hasRA bool, maxDelay time.Duration) time.Duration {
	if hasRA && ra > b {
		b = ra
	}
	return min(b, maxDelay)
}

// transientStatus reports the HTTP statuses worth retrying.
func transientStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return true
	case code >= 500 && code <= 599:
		return true
	}
	return false
}
