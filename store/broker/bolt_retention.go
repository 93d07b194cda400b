package broker

import (
	"fmt"
	"math"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Default retention of each topic of the bbolt broker (docs/retention.md).
const (
	DefaultRetentionMaxAge      = 7 * 24 * time.Hour
	DefaultRetentionMaxMessages = 1_000_000
	DefaultRetentionMaxBytes    = 512 << 20
)

// trimChunk bounds the deletes in one write transaction so retention never
// holds the writer (and so publishers) for long.
const trimChunk = 5_000

// retentionEnabled says whether any retention bound is set.
func (o BoltOptions) retentionEnabled() bool {
	return o.RetentionMaxAge >= 0 || o.RetentionMaxMessages >= 0 || o.RetentionMaxBytes >= 0
}

// retentionLoop applies retention every interval. Its caller reads the
// options before starting it, so the loop itself only reads them when it
// trims.
func (b *Bolt) retentionLoop(enabled bool, interval time.Duration) {
	defer b.bg.Done()
	if !enabled {
		<-b.closing
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-t.C:
			if err := b.trim(); err != nil {
				b.opts.Logger.Error("broker: retention", "err", err)
			}
		}
	}
}

// trim applies retention to every topic once.
func (b *Bolt) trim() error {
	b.mu.RLock()
	topics := make([]*topicState, 0, len(b.topics))
	for _, ts := range b.topics {
		topics = append(topics, ts)
	}
	b.mu.RUnlock()
	for _, ts := range topics {
		select {
		case <-b.closing:
			return nil
		default:
		}
		if err := b.trimTopic(ts); err != nil {
			return fmt.Errorf("topic %s: %w", ts.name, err)
		}
	}
	return nil
}

// trimTopic deletes, oldest first, messages beyond the count limit or older
// than the age limit, stopping at the first message some group still needs.
func (b *Bolt) trimTopic(ts *topicState) error {
	ts.size.mu.Lock()
	defer ts.size.mu.Unlock()
	countLimit := int64(math.MinInt64) // offsets below it exceed RetentionMaxMessages or RetentionMaxBytes
	if b.opts.RetentionMaxMessages >= 0 {
		countLimit = ts.end.Load() - b.opts.RetentionMaxMessages
	}
	if b.opts.RetentionMaxBytes >= 0 {
		sizeLimit, err := b.sizeLimit(ts, countLimit)
		if err != nil {
			return err
		}
		countLimit = max(countLimit, sizeLimit)
	}
	var cutoff time.Time // messages older than it exceed RetentionMaxAge
	ageLimited := b.opts.RetentionMaxAge >= 0
	if ageLimited {
		cutoff = b.opts.Now().Add(-b.opts.RetentionMaxAge)
	}
	floor := b.consumedFloor(ts.name)
	for {
		removed, done := 0, false
		var first int64
		var deleted []sized
		err := b.db.Update(func(tx *bolt.Tx) error {
			removed, done, deleted = 0, false, deleted[:0]
			tb := topicBucket(tx, ts.name)
			if tb == nil {
				done = true
				return nil
			}
			limit := min(floor, storedFloor(tx, ts.name))
			c := tb.Cursor()
			for k, v := c.First(); k != nil && removed < trimChunk; k, v = c.First() {
				off, ok := decodeOffset(k)
				if !ok {
					return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
				}
				if off >= limit || (off >= countLimit && (!ageLimited || !recordBefore(v, cutoff))) {
					done = true
					break
				}
				deleted = append(deleted, sized{off, int64(len(k) + len(v))})
				if err := c.Delete(); err != nil {
					return err
				}
				removed++
			}
			first = int64(tb.Sequence())
			if k, _ := c.First(); k != nil {
				first, _ = decodeOffset(k)
			}
			return nil
		})
		if err != nil {
			// The deletes may have reached the disk even so (a failed
			// sync after the meta page was written): count afresh.
			ts.size.started = false
			return err
		}
		ts.size.deleted(deleted)
		if removed > 0 {
			ts.first.Store(max(ts.first.Load(), first))
		}
		if done || removed < trimChunk {
			return nil
		}
	}
}

// sizeTally is what the size bound has counted of a topic: the bytes (key
// and value) of its stored messages with offsets in [from, next). A stored
// message never changes and only trimTopic deletes, oldest first, so each
// retention pass reads only the messages applied since the last one and
// those the bound now passes, instead of walking the topic back from its
// newest message every time (on a topic of a million messages that walk
// took seconds of CPU every RetentionInterval). After a start the tally is
// counted back from the newest message sizeCountChunk messages per pass,
// so that first count does not take a burst of CPU either; until it is
// complete the size bound trims nothing.
type sizeTally struct {
	mu       sync.Mutex // held by trimTopic for the whole pass
	started  bool
	complete bool // counted down to the bound, to floor or to the oldest message
	chunk    int  // messages a pass counts down; 0 is sizeCountChunk
	from     int64
	next     int64
	bytes    int64
}

// sizeCountChunk bounds the messages one retention pass counts back.
const sizeCountChunk = 50_000

// sized is one message's offset and size.
type sized struct{ off, n int64 }

// deleted takes deleted messages out of the tally. Deletes go oldest
// first: one inside the tally means nothing older is left to count.
func (t *sizeTally) deleted(msgs []sized) {
	for _, m := range msgs {
		if t.started && m.off >= t.from && m.off < t.next {
			t.bytes -= m.n
			t.from, t.complete = m.off+1, true
		}
	}
}

// sizeLimit is the lowest offset of ts's topic whose message, with every
// newer one, fits in RetentionMaxBytes: older offsets exceed the size
// bound (or are below floor, and go anyway). It keeps the tally (ts.size,
// held by the caller) in step with what is stored.
func (b *Bolt) sizeLimit(ts *topicState, floor int64) (int64, error) {
	t := &ts.size
	maxBytes := b.opts.RetentionMaxBytes
	err := b.db.View(func(tx *bolt.Tx) error {
		tb := topicBucket(tx, ts.name)
		if tb == nil {
			return nil
		}
		c := tb.Cursor()
		if !t.started {
			// An empty tally just above the newest message, counted down
			// below.
			t.started, t.complete, t.bytes = true, false, 0
			t.from = max(floor, 0) // offsets start at 0
			if k, _ := c.Last(); k != nil {
				off, ok := decodeOffset(k)
				if !ok {
					return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
				}
				t.from = off + 1
			}
			t.next = t.from
		}
		// What was applied since the last pass.
		for k, v := c.Seek(offsetKey(t.next)); k != nil; k, v = c.Next() {
			off, ok := decodeOffset(k)
			if !ok {
				return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			t.bytes += int64(len(k) + len(v))
			t.next = off + 1
		}
		if !t.complete {
			if err := t.countDown(c, floor, maxBytes); err != nil || !t.complete {
				return err
			}
		}
		// What the bounds now pass, oldest first: messages over the size
		// bound, and those below floor (they go anyway).
		for k, v := c.Seek(offsetKey(t.from)); k != nil; k, v = c.Next() {
			off, ok := decodeOffset(k)
			if !ok {
				return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			if off >= t.next || (off >= floor && t.bytes <= maxBytes) {
				break
			}
			t.bytes -= int64(len(k) + len(v))
			t.from = off + 1
		}
		return nil
	})
	switch {
	case err != nil:
		t.started = false // counted again on the next pass
		return math.MinInt64, err
	case !t.complete:
		return math.MinInt64, nil // no topic yet, or still counting
	}
	return t.from, nil
}

// countDown extends the tally down from its oldest counted message, at
// most sizeCountChunk messages, and marks it complete when it reaches a
// message that would pass the size bound, one below floor, or the oldest.
func (t *sizeTally) countDown(c *bolt.Cursor, floor, maxBytes int64) error {
	k, v := c.Seek(offsetKey(t.from))
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	chunk := t.chunk
	if chunk <= 0 {
		chunk = sizeCountChunk
	}
	for range chunk {
		if k == nil {
			t.complete = true
			return nil
		}
		off, ok := decodeOffset(k)
		if !ok {
			return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
		}
		n := int64(len(k) + len(v))
		if off < floor || t.bytes+n > maxBytes {
			t.complete = true // off and older go
			return nil
		}
		t.bytes += n
		t.from = off
		k, v = c.Prev()
	}
	return nil
}

// consumedFloor is the lowest committed offset of any in-memory cursor on the
// topic (math.MaxInt64 if none): retention must not pass it.
func (b *Bolt) consumedFloor(topic string) int64 {
	floor := int64(math.MaxInt64)
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, g := range b.groups {
		g.mu.Lock()
		// A cursor supersedes the offset loaded with the group, which goes stale.
		if c := g.cursors[topic]; c != nil {
			floor = min(floor, c.committed)
		} else if s, ok := g.stored[topic]; ok {
			floor = min(floor, s)
		}
		g.mu.Unlock()
	}
	return floor
}

// storedFloor is the lowest committed offset stored for topic by any group,
// including groups not loaded in this process (math.MaxInt64 if none).
func storedFloor(tx *bolt.Tx, topic string) int64 {
	floor := int64(math.MaxInt64)
	root := tx.Bucket(groupsBucket)
	if root == nil {
		return floor
	}
	_ = root.ForEachBucket(func(name []byte) error {
		if off, ok := decodeOffset(root.Bucket(name).Get([]byte(topic))); ok {
			floor = min(floor, off)
		}
		return nil
	})
	return floor
}

// recordBefore reports whether the stored record was published before t.
// Undecodable records count as old so they cannot pin the log forever.
func recordBefore(v []byte, t time.Time) bool {
	d := decoder{b: v}
	if d.byte() != codecVersion {
		return true
	}
	ns := d.varint()
	return d.err != nil || time.Unix(0, ns).Before(t)
}
