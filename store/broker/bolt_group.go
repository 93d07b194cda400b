package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// group is a consumer group's in-memory delivery state, shared by all of its
// subscriptions in this process (bbolt's file lock guarantees there is no
// other process).
type group struct {
	name string

	mu      sync.Mutex
	cursors map[string]*cursor
	stored  map[string]int64 // committed offsets found in bbolt when the group was loaded
	subs    int              // active subscriptions
	changed chan struct{}    // closed and replaced when a waiting worker may find work
	rr      int              // round-robin start over topics, for fairness
}

// cursor tracks one group's progress through one topic.
//
// Every offset in [committed, next) is in exactly one of inflight (handler
// running), retry (failed or released, waiting to be leased again) or acked
// (acknowledged out of order). Offsets below committed are all acknowledged.
type cursor struct {
	topic     *topicState
	committed int64
	stored    int64 // last committed offset written to bbolt, -1 if none
	next      int64 // next offset never delivered to this group
	inflight  map[int64]int
	retry     map[int64]retryState
	acked     map[int64]struct{}
}

type retryState struct {
	due     time.Time
	attempt int // deliveries so far
}

// lease is one message handed to one worker.
type lease struct {
	c       *cursor
	off     int64
	attempt int
}

func newGroup(name string, stored map[string]int64) *group {
	return &group{name: name, cursors: make(map[string]*cursor), stored: stored, changed: make(chan struct{})}
}

// loadGroup reads a group's committed offsets from bbolt.
func loadGroup(tx *bolt.Tx, name string) (map[string]int64, error) {
	stored := make(map[string]int64)
	root := tx.Bucket(groupsBucket)
	if root == nil {
		return stored, nil
	}
	gb := root.Bucket([]byte(name))
	if gb == nil {
		return stored, nil
	}
	err := gb.ForEach(func(k, v []byte) error {
		off, ok := decodeOffset(v)
		if !ok {
			return fmt.Errorf("%w: group %q topic %q: offset of %d bytes", ErrCorrupt, name, k, len(v))
		}
		stored[string(k)] = off
		return nil
	})
	return stored, err
}

// cursor returns the group's cursor for ts, creating it at the stored
// committed offset, or at the oldest retained message for a topic the group
// has never consumed. Callers hold g.mu.
func (g *group) cursor(ts *topicState) *cursor {
	if c := g.cursors[ts.name]; c != nil {
		return c
	}
	start, stored := ts.first.Load(), int64(-1)
	if s, ok := g.stored[ts.name]; ok {
		start, stored = max(s, start), s
	}
	c := &cursor{
		topic:     ts,
		committed: start,
		stored:    stored,
		next:      start,
		inflight:  make(map[int64]int),
		retry:     make(map[int64]retryState),
		acked:     make(map[int64]struct{}),
	}
	g.cursors[ts.name] = c
	return c
}

// lease picks the next message for a worker among topics: first a due retry
// (oldest offset first), then the next undelivered offset, rotating over
// topics. When there is nothing it returns the time the earliest pending retry
// becomes due (zero if none) and a channel closed when the group's state changes.
func (g *group) lease(topics []*topicState, now time.Time, maxUnacked int) (l lease, ok bool, wake time.Time, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(topics)
	for i := range n {
		idx := (g.rr + i) % n
		c := g.cursor(topics[idx])
		if off, r, found := c.dueRetry(now, &wake); found {
			delete(c.retry, off)
			c.inflight[off] = r.attempt + 1
			g.rr = idx + 1
			return lease{c: c, off: off, attempt: r.attempt + 1}, true, time.Time{}, nil
		}
		c.skipTrimmed()
		if c.next < c.topic.end.Load() && c.next-c.committed < int64(maxUnacked) {
			off := c.next
			c.next++
			c.inflight[off] = 1
			g.rr = idx + 1
			return lease{c: c, off: off, attempt: 1}, true, time.Time{}, nil
		}
	}
	return lease{}, false, wake, g.changed
}

// dueRetry returns the lowest retry offset due at now, and lowers *wake to
// the earliest retry not yet due.
func (c *cursor) dueRetry(now time.Time, wake *time.Time) (int64, retryState, bool) {
	best, found := int64(0), false
	for off, r := range c.retry {
		if r.due.After(now) {
			if wake.IsZero() || r.due.Before(*wake) {
				*wake = r.due
			}
			continue
		}
		if !found || off < best {
			best, found = off, true
		}
	}
	return best, c.retry[best], found
}

// skipTrimmed moves an idle cursor past messages retention removed before the
// group first consumed the topic, rather than looking each one up.
func (c *cursor) skipTrimmed() {
	first := c.topic.first.Load()
	if c.committed < first && len(c.inflight) == 0 && len(c.retry) == 0 && len(c.acked) == 0 {
		c.committed, c.next = first, max(c.next, first)
	}
}

// ack records a successful delivery and advances the committed offset over
// any contiguous run of acknowledged messages.
func (g *group) ack(l lease, maxUnacked int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := l.c
	delete(c.inflight, l.off)
	delete(c.retry, l.off)
	if l.off < c.committed {
		return
	}
	if l.off > c.committed {
		c.acked[l.off] = struct{}{}
		return
	}
	wasFull := c.next-c.committed >= int64(maxUnacked)
	c.committed++
	for {
		if _, ok := c.acked[c.committed]; !ok {
			break
		}
		delete(c.acked, c.committed)
		c.committed++
	}
	if wasFull {
		g.signal()
	}
}

// nack schedules a failed delivery again at due.
func (g *group) nack(l lease, due time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(l.c.inflight, l.off)
	l.c.retry[l.off] = retryState{due: due, attempt: l.attempt}
	g.signal()
}

// release returns an unfinished delivery (its subscription is closing) for
// immediate redelivery, without counting it as an attempt.
func (g *group) release(l lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(l.c.inflight, l.off)
	l.c.retry[l.off] = retryState{attempt: l.attempt - 1}
	g.signal()
}

// signal wakes every worker waiting on the group. Callers hold g.mu.
func (g *group) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// groupFor returns the named group, loading its offsets on first use, and
// counts one more subscription on it. Callers hold b.mu.
func (b *Bolt) groupFor(name string) (*group, error) {
	g := b.groups[name]
	if g == nil {
		var stored map[string]int64
		err := b.db.View(func(tx *bolt.Tx) error {
			var err error
			stored, err = loadGroup(tx, name)
			return err
		})
		if err != nil {
			return nil, err
		}
		g = newGroup(name, stored)
		b.groups[name] = g
	}
	g.mu.Lock()
	g.subs++
	g.mu.Unlock()
	return g, nil
}

// offsetUpdate is one committed offset to persist.
type offsetUpdate struct {
	g      *group
	c      *cursor
	offset int64
}

// flushOffsets persists every committed offset that changed since the last flush.
func (b *Bolt) flushOffsets() error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.RLock()
	groups := make([]*group, 0, len(b.groups))
	for _, g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.RUnlock()
	var ups []offsetUpdate
	for _, g := range groups {
		g.mu.Lock()
		for _, c := range g.cursors {
			if c.committed != c.stored {
				ups = append(ups, offsetUpdate{g: g, c: c, offset: c.committed})
			}
		}
		g.mu.Unlock()
	}
	if len(ups) == 0 {
		return nil
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(groupsBucket)
		if root == nil {
			return errors.New("bucket broker.groups missing")
		}
		for _, u := range ups {
			gb, err := root.CreateBucketIfNotExists([]byte(u.g.name))
			if err != nil {
				return fmt.Errorf("group %s: %w", u.g.name, err)
			}
			if err := gb.Put([]byte(u.c.topic.name), offsetKey(u.offset)); err != nil {
				return fmt.Errorf("group %s: %w", u.g.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("broker: commit offsets: %w", err)
	}
	for _, u := range ups {
		u.g.mu.Lock()
		u.c.stored = max(u.c.stored, u.offset)
		u.g.mu.Unlock()
	}
	return nil
}

// flushLoop persists acknowledged offsets every CommitInterval.
func (b *Bolt) flushLoop() {
	defer b.bg.Done()
	t := time.NewTicker(b.opts.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-t.C:
			if err := b.flushOffsets(); err != nil {
				b.opts.Logger.Error("broker: flushing consumer offsets", "err", err)
			}
		}
	}
}

// DeleteGroup forgets a consumer group and its committed offsets, so it no
// longer holds back retention. A later subscription with the same name starts
// from the oldest retained message. It fails with ErrGroupActive while the
// group has subscriptions.
func (b *Bolt) DeleteGroup(ctx context.Context, name string) error {
	if b.closed.Load() {
		return fmt.Errorf("broker: delete group %s: %w", name, ErrClosed)
	}
	if err := ValidateGroup(name); err != nil {
		return fmt.Errorf("broker: delete group: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("broker: delete group %s: %w", name, err)
	}
	// flushMu keeps a concurrent flush from writing the group back.
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if g := b.groups[name]; g != nil {
		g.mu.Lock()
		active := g.subs > 0
		g.mu.Unlock()
		if active {
			return fmt.Errorf("broker: delete group %s: %w", name, ErrGroupActive)
		}
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(groupsBucket)
		if root == nil || root.Bucket([]byte(name)) == nil {
			return nil
		}
		return root.DeleteBucket([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("broker: delete group %s: %w", name, err)
	}
	delete(b.groups, name)
	return nil
}
