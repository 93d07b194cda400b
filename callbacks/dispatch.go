package callbacks

import (
	"container/heap"
	"context"
	"database/sql"
	"encoding/json"
	"sync"
	"time"
)

// job is one attempt still to be made, in memory. Its row in
// callback_executions (PENDING or HELD_CIRCUIT_OPEN) is what survives a restart.
type job struct {
	execID, deliveryID   string
	configID, configName string
	subscriptionID       string
	eventSeq             int64 // callback_events.seq
	eventID, eventType   string
	trigger, retryOf     string
	attempt, maxAttempts int
	due                  time.Time
	payload              json.RawMessage // nil: read from callback_events when due
	held                 bool            // stored as HELD_CIRCUIT_OPEN
}

// outcome is what happened to a job; the recorder writes it.
type outcome struct {
	job         *job
	state       string
	heldUntil   time.Time // StateHeld
	started     time.Time // zero when no request was sent
	finished    time.Time
	req         *ExecutionRequest
	resp        *ExecutionResponse
	err         *ExecutionError
	maxAttempts int
	next        *job   // the attempt FAILED_RETRYING schedules
	disable     string // disable the configuration with this reason (410)
}

// dispatcher runs deliveries: a scheduler releases jobs when due into one
// lane per configuration; a lane runs up to thread-pool-size attempts at a
// time behind the configuration's circuit breaker; a recorder writes the
// outcomes in batches. Lanes share nothing, so a slow or failing endpoint
// only ever occupies its own lane.
type dispatcher struct {
	s      *Service
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	queue jobHeap
	lanes map[string]*lane
	wake  chan struct{}

	// gate orders shutdown: attempts start, and outcomes are submitted,
	// only under its read lock while the matching flag is false.
	gate          sync.RWMutex
	stopping      bool
	resultsClosed bool
	results       chan *outcome
	attempts      sync.WaitGroup // running attempts
	aux           sync.WaitGroup // follow-up work (disabling a configuration)
	loops         sync.WaitGroup // scheduler and recorder
}

func newDispatcher(s *Service) *dispatcher {
	return &dispatcher{
		s:       s,
		lanes:   map[string]*lane{},
		wake:    make(chan struct{}, 1),
		results: make(chan *outcome, 4096),
	}
}

func (d *dispatcher) start(ctx context.Context) {
	d.ctx, d.cancel = context.WithCancel(ctx)
	d.loops.Add(2)
	go d.scheduleLoop()
	go d.recordLoop()
}

// stop aborts running attempts (their rows stay PENDING and are retried after
// a restart), records the outcomes already known and waits for every loop.
func (d *dispatcher) stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.gate.Lock()
	d.stopping = true
	d.gate.Unlock()
	d.attempts.Wait()
	d.aux.Wait()
	d.gate.Lock()
	if !d.resultsClosed {
		d.resultsClosed = true
		close(d.results)
	}
	d.gate.Unlock()
	d.loops.Wait()
	d.mu.Lock()
	for _, l := range d.lanes {
		l.stopTimer()
	}
	d.mu.Unlock()
}

// submit hands outcomes to the recorder; after shutdown they are dropped and
// their rows, still open, are picked up at the next start.
func (d *dispatcher) submit(outs ...*outcome) {
	if len(outs) == 0 {
		return
	}
	d.gate.RLock()
	defer d.gate.RUnlock()
	if d.resultsClosed {
		return
	}
	for _, o := range outs {
		d.results <- o
	}
}

// goAux runs follow-up work that shutdown waits for.
func (d *dispatcher) goAux(fn func()) {
	d.gate.RLock()
	defer d.gate.RUnlock()
	if d.stopping {
		return
	}
	d.aux.Add(1)
	go func() {
		defer d.aux.Done()
		fn()
	}()
}

// schedule queues jobs in the heap and wakes the scheduler, which hands due
// ones to their lanes. It never blocks (the recorder calls it).
func (d *dispatcher) schedule(jobs ...*job) {
	if len(jobs) == 0 {
		return
	}
	d.mu.Lock()
	for _, j := range jobs {
		heap.Push(&d.queue, j)
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) scheduleLoop() {
	defer d.loops.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		d.mu.Lock()
		due := map[*lane][]*job{}
		for d.queue.Len() > 0 && !d.queue[0].due.After(now) {
			j := heap.Pop(&d.queue).(*job)
			l := d.laneLocked(j.configID)
			due[l] = append(due[l], j)
		}
		wait := time.Hour
		if d.queue.Len() > 0 {
			wait = d.queue[0].due.Sub(now)
		}
		d.mu.Unlock()
		for l, js := range due {
			l.push(js...)
		}
		timer.Reset(wait)
		select {
		case <-d.ctx.Done():
			return
		case <-d.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
	}
}

// laneLocked returns the lane of a configuration, creating it (d.mu held).
func (d *dispatcher) laneLocked(configID string) *lane {
	l, ok := d.lanes[configID]
	if !ok {
		c := d.s.reg.config(configID)
		l = &lane{d: d, configID: configID, br: newBreaker(breakerSettingsFor(&d.s.settings, c)), cfg: c}
		d.lanes[configID] = l
	}
	return l
}

// configChanged applies a changed (or deleted) configuration to its lane:
// new breaker settings, a breaker reset on re-activation, and waiting jobs
// re-examined now (an inactive configuration's jobs are cancelled at once,
// including those whose retry was not due yet).
func (d *dispatcher) configChanged(id string) {
	c := d.s.reg.config(id)
	d.mu.Lock()
	l := d.laneLocked(id)
	if c == nil || c.Status != StatusActive {
		// Pull the configuration's later retries forward so they are cancelled now.
		var rest jobHeap
		var pulled []*job
		for _, j := range d.queue {
			if j.configID == id {
				pulled = append(pulled, j)
			} else {
				rest = append(rest, j)
			}
		}
		if len(pulled) > 0 {
			d.queue = rest
			heap.Init(&d.queue)
		}
		if c == nil {
			delete(d.lanes, id) // a later job for it gets a fresh lane, which cancels it
		}
		d.mu.Unlock()
		l.update(c)
		l.push(pulled...)
		return
	}
	d.mu.Unlock()
	l.update(c)
}

// kickAll re-examines every lane's waiting jobs (the allow-list changed).
func (d *dispatcher) kickAll() {
	d.mu.Lock()
	lanes := make([]*lane, 0, len(d.lanes))
	for _, l := range d.lanes {
		lanes = append(lanes, l)
	}
	d.mu.Unlock()
	for _, l := range lanes {
		l.kick()
	}
}

// recordLoop writes outcomes in batches: one transaction per batch keeps
// every attempt recorded without making deliveries wait on each fsync.
func (d *dispatcher) recordLoop() {
	defer d.loops.Done()
	const maxBatch = 1024
	batch := make([]*outcome, 0, maxBatch)
	for o := range d.results {
		batch = append(batch[:0], o)
	fill:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-d.results:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		d.record(batch)
	}
}

func (d *dispatcher) record(batch []*outcome) {
	s := d.s
	var err error
	// A short retry rides out a busy database; if it still fails the rows
	// stay open and are attempted again after a restart (at least once).
	for try := 0; try < 3; try++ {
		err = s.db.Write(context.Background(), func(tx *sql.Tx) error {
			return writeOutcomes(tx, batch, s.nowMs())
		})
		if err == nil {
			break
		}
		time.Sleep(time.Duration(try+1) * 50 * time.Millisecond)
	}
	if err != nil {
		s.log.Error("callbacks: recording execution outcomes", "count", len(batch), "err", err)
		return
	}
	var next []*job
	for _, o := range batch {
		if o.next != nil {
			next = append(next, o.next)
		}
		if o.disable != "" {
			id, reason := o.job.configID, o.disable
			d.goAux(func() { s.disable(id, reason) })
		}
		if s.onRecorded != nil {
			s.onRecorded(o)
		}
	}
	d.schedule(next...)
}

// jobHeap orders jobs by due time.
type jobHeap []*job

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].execID < h[j].execID
	}
	return h[i].due.Before(h[j].due)
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(*job)) }
func (h *jobHeap) Pop() any {
	old := *h
	n := len(old)
	j := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return j
}
