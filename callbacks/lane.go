package callbacks

import (
	"sync"
	"time"
)

// lane runs one configuration's deliveries: at most thread-pool-size at a
// time, only while its circuit breaker permits. Jobs the breaker refuses are
// held (HELD_CIRCUIT_OPEN), not failed, and released when it half-opens.
type lane struct {
	d        *dispatcher
	configID string
	br       *breaker

	mu       sync.Mutex
	cfg      *Configuration // last configuration seen, nil when deleted
	ready    []*job         // due, waiting for a worker
	held     []*job         // refused by the breaker
	inflight int
	timer    *time.Timer // wakes the lane when the breaker may half-open
}

// update applies a configuration change to the lane.
func (l *lane) update(c *Configuration) {
	l.mu.Lock()
	wasActive := l.cfg != nil && l.cfg.Status == StatusActive
	l.cfg = c
	l.mu.Unlock()
	l.br.reconfigure(breakerSettingsFor(&l.d.s.settings, c))
	if c != nil && c.Status == StatusActive && !wasActive {
		l.br.reset() // re-enabled: start with a clean history
	}
	l.kick()
}

func (l *lane) push(js ...*job) {
	if len(js) == 0 {
		return
	}
	l.mu.Lock()
	l.ready = append(l.ready, js...)
	l.mu.Unlock()
	l.pump()
}

// kick re-examines held jobs (breaker wait over, configuration changed).
func (l *lane) kick() {
	l.mu.Lock()
	if len(l.held) > 0 {
		l.ready = append(l.held, l.ready...)
		l.held = nil
	}
	l.mu.Unlock()
	l.pump()
}

// pump starts as many ready jobs as the pool and the breaker allow, cancels
// them when the configuration can no longer be delivered to, and holds them
// when the breaker is open.
func (l *lane) pump() {
	d := l.d
	d.gate.RLock()
	if d.stopping {
		d.gate.RUnlock()
		return
	}
	var cancels, holds []*outcome
	var starts []*job
	cfg, why := d.s.reg.deliverable(l.configID)
	now := time.Now()
	l.mu.Lock()
	for len(l.ready) > 0 {
		if cfg == nil {
			cancels = append(cancels, cancelled(l.pop(), why, d.s.nowMs()))
			continue
		}
		if l.inflight >= d.s.settings.Dispatcher.ThreadPoolSize {
			break
		}
		ok, until := l.br.allow(now)
		if !ok {
			for _, j := range l.ready {
				if !until.IsZero() && !j.due.Equal(until) {
					// Recorded once per opening: the row says until when it waits.
					j.held, j.due = true, until
					j.payload = nil // read back when released
					holds = append(holds, &outcome{job: j, state: StateHeld, heldUntil: until})
				}
			}
			l.held = append(l.held, l.ready...)
			l.ready = nil
			if !until.IsZero() {
				l.armLocked(until)
			}
			break
		}
		l.inflight++
		starts = append(starts, l.pop())
	}
	d.attempts.Add(len(starts))
	l.mu.Unlock()
	d.gate.RUnlock()

	d.submit(cancels...)
	d.submit(holds...)
	for _, j := range starts {
		go l.run(j, cfg)
	}
}

func (l *lane) pop() *job {
	j := l.ready[0]
	l.ready[0] = nil
	l.ready = l.ready[1:]
	if len(l.ready) == 0 {
		l.ready = nil // let the backing array go
	}
	return j
}

func (l *lane) armLocked(until time.Time) {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timer = time.AfterFunc(time.Until(until)+time.Millisecond, l.kick)
}

func (l *lane) stopTimer() {
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
}

// run makes one attempt and reports it to the breaker and the recorder.
// The lane's slot is released before the outcome is written, so the
// database's commit latency never limits the delivery rate.
func (l *lane) run(j *job, c *Configuration) {
	defer l.d.attempts.Done()
	o, v, took := l.d.s.attempt(l.d.ctx, j, c)
	tripped, trips := l.br.record(time.Now(), v, took)
	l.mu.Lock()
	l.inflight--
	if len(l.held) > 0 {
		// A trial finished (or the breaker reopened): let pump decide again.
		l.ready = append(l.held, l.ready...)
		l.held = nil
	}
	l.mu.Unlock()
	if tripped {
		_, until := l.br.snapshot()
		l.d.s.log.Warn("callbacks: circuit breaker opened", "configuration", l.configID, "trips", trips, "until", until)
		limit := l.d.s.settings.CircuitBreaker.DisableAfterTrips
		if limit > 0 && trips >= limit {
			id := l.configID
			l.d.goAux(func() {
				if !l.d.s.disable(id, "the circuit breaker opened "+itoa(trips)+" times in a row") {
					// Still ACTIVE: let the breaker try again rather than hold forever.
					l.br.reset()
					l.kick()
				}
			})
		}
	}
	if o != nil {
		l.d.submit(o)
	}
	l.pump()
}

// cancelled is the outcome of a job that will not be attempted.
func cancelled(j *job, why *ExecutionError, now time.Time) *outcome {
	return &outcome{job: j, state: StateCancelled, finished: now, err: why, maxAttempts: j.maxAttempts}
}
