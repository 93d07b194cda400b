package bridge

import (
	"sync"
)

// liveRegistry tracks a client's open streams and waiters so that revoking
// the client can end them at once.
type liveRegistry struct {
	mu   sync.Mutex
	next int
	byID map[string]map[int]liveEntry
}

type liveEntry struct {
	p    Principal
	stop func()
}

func newLiveRegistry() *liveRegistry { return &liveRegistry{byID: map[string]map[int]liveEntry{}} }

// add registers stop under p's client and returns the function that unregisters it.
func (l *liveRegistry) add(p Principal, stop func()) func() {
	client := p.Client
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	id := l.next
	if l.byID[client] == nil {
		l.byID[client] = map[int]liveEntry{}
	}
	l.byID[client][id] = liveEntry{p: p, stop: stop}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.byID[client], id)
		if len(l.byID[client]) == 0 {
			delete(l.byID, client)
		}
	}
}

// revoke stops everything open for client and returns how many there were.
func (l *liveRegistry) revoke(client string) int {
	l.mu.Lock()
	stops := l.byID[client]
	delete(l.byID, client)
	l.mu.Unlock()
	for _, e := range stops {
		e.stop()
	}
	return len(stops)
}

// sweep stops every entry whose principal valid reports as no longer valid.
func (l *liveRegistry) sweep(valid func(Principal) bool) {
	l.mu.Lock()
	var entries []liveEntry
	for _, m := range l.byID {
		for _, e := range m {
			entries = append(entries, e)
		}
	}
	l.mu.Unlock()
	checked := map[[32]byte]bool{}
	for _, e := range entries {
		ok, seen := checked[e.p.hash]
		if !seen {
			ok = valid(e.p)
			checked[e.p.hash] = ok
		}
		if !ok {
			e.stop()
		}
	}
}

// waiterRegistry connects synchronous Chat Completions waiters to the jobs
// they wait for: assistant text as it arrives, and the final job.
type waiterRegistry struct {
	mu   sync.Mutex
	jobs map[string]*jobWait
}

// jobWait is the shared, growing output of one job's turn. Producers only
// append and signal, so a slow waiter never blocks the job.
type jobWait struct {
	mu      sync.Mutex
	text    []string
	done    bool
	final   Job
	signal  chan struct{}
	waiters int
}

func newWaiterRegistry() *waiterRegistry { return &waiterRegistry{jobs: map[string]*jobWait{}} }

// join adds a waiter for jobID; leave returns true when it was the last one.
func (w *waiterRegistry) join(jobID string) (jw *jobWait, leave func() (last bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	jw = w.jobs[jobID]
	if jw == nil {
		jw = &jobWait{signal: make(chan struct{})}
		w.jobs[jobID] = jw
	}
	jw.waiters++
	var once sync.Once
	return jw, func() bool {
		last := false
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			jw.waiters--
			if jw.waiters == 0 {
				delete(w.jobs, jobID)
				last = true
			}
		})
		return last
	}
}

func (w *waiterRegistry) get(jobID string) *jobWait {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.jobs[jobID]
}

func (w *waiterRegistry) delta(jobID, text string) {
	if jw := w.get(jobID); jw != nil && text != "" {
		jw.mu.Lock()
		jw.text = append(jw.text, text)
		jw.wake()
		jw.mu.Unlock()
	}
}

// finish delivers the job's state after a turn; terminal states end waits.
func (w *waiterRegistry) finish(j Job) {
	if jw := w.get(j.ID); jw != nil && (j.State.Terminal() || j.State == StatePaused) {
		jw.mu.Lock()
		jw.done, jw.final = true, j
		jw.wake()
		jw.mu.Unlock()
	}
}

// ended reports whether the job was delivered in a terminal state.
func (jw *jobWait) ended() bool {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	return jw.done && jw.final.State.Terminal()
}

func (jw *jobWait) wake() {
	close(jw.signal)
	jw.signal = make(chan struct{})
}

// since returns text chunks after index i, whether the job is done, the final
// job, and a channel closed on the next change.
func (jw *jobWait) since(i int) ([]string, bool, Job, <-chan struct{}) {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	var chunks []string
	if i < len(jw.text) {
		chunks = append(chunks, jw.text[i:]...)
	}
	return chunks, jw.done, jw.final, jw.signal
}
