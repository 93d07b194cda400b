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
// took seconds of CPU every RetentionInterval). The first pass after a
// start counts once, as the walk did.
type sizeTally struct {
	mu      sync.Mutex // held by trimTopic for the whole pass
	counted bool
	from    int64
	next    int64
	bytes   int64
}

// sized is one message's offset and size.
type sized struct{ off, n int64 }

// deleted takes deleted messages out of the tally.
func (t *sizeTally) deleted(msgs []sized) {
	for _, m := range msgs {
		if t.counted && m.off >= t.from && m.off < t.next {
			t.bytes -= m.n
			t.from = m.off + 1
		}
	}
}

// sizeLimit is the lowest offset of ts's topic whose message, with every
// newer one, fits in RetentionMaxBytes: older offsets exceed the size
// bound (or are below floor, and go anyway). It keeps the tally (ts.size,
// held by the caller) in step with what is stored.
func (b *Bolt) sizeLimit(ts *topicState, floor int64) (int64, error) {
	t := &ts.size
	err := b.db.View(func(tx *bolt.Tx) error {
		tb := topicBucket(tx, ts.name)
		if tb == nil {
			return nil
		}
		c := tb.Cursor()
		if !t.counted {
			if err := t.count(c, floor, b.opts.RetentionMaxBytes); err != nil {
				return err
			}
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
		// What the bounds now pass, oldest first: messages over the size
		// bound, and those below floor (they go anyway).
		for k, v := c.Seek(offsetKey(t.from)); k != nil; k, v = c.Next() {
			off, ok := decodeOffset(k)
			if !ok {
				return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			if off >= t.next || (off >= floor && t.bytes <= b.opts.RetentionMaxBytes) {
				break
			}
			t.bytes -= int64(len(k) + len(v))
			t.from = off + 1
		}
		return nil
	})
	if err != nil {
		t.counted = false // counted again on the next pass
		return math.MinInt64, err
	}
	if !t.counted {
		return math.MinInt64, nil // no topic yet
	}
	return t.from, nil
}

// count makes the tally from scratch, walking back from the newest message
// until the size bound is passed or floor is reached.
func (t *sizeTally) count(c *bolt.Cursor, floor, maxBytes int64) error {
	floor = max(floor, 0) // offsets start at 0
	t.counted, t.from, t.next, t.bytes = true, floor, floor, 0
	newest := true
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		off, ok := decodeOffset(k)
		if !ok {
			t.counted = false
			return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
		}
		if newest {
			t.from, t.next, newest = off+1, off+1, false
		}
		n := int64(len(k) + len(v))
		if off < floor || t.bytes+n > maxBytes {
			return nil // off and older go: the tally is [off+1, next)
		}
		t.bytes += n
		t.from = off
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
