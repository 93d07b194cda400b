package broker

import (
	"fmt"
	"math"
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
	countLimit := int64(math.MinInt64) // offsets below it exceed RetentionMaxMessages or RetentionMaxBytes
	if b.opts.RetentionMaxMessages >= 0 {
		countLimit = ts.end.Load() - b.opts.RetentionMaxMessages
	}
	if b.opts.RetentionMaxBytes >= 0 {
		sizeLimit, err := b.sizeLimit(ts.name, countLimit)
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
		err := b.db.Update(func(tx *bolt.Tx) error {
			removed, done = 0, false
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
		if removed > 0 {
			ts.first.Store(max(ts.first.Load(), first))
		}
		if done || removed < trimChunk {
			return nil
		}
	}
}

// sizeLimit is the lowest offset of topic whose message, with every newer
// one, fits in RetentionMaxBytes: older offsets exceed the size bound. The
// scan walks back from the newest message and stops at floor (offsets below
// it go anyway), so it reads at most what the other bounds retain.
func (b *Bolt) sizeLimit(topic string, floor int64) (int64, error) {
	limit := int64(math.MinInt64)
	err := b.db.View(func(tx *bolt.Tx) error {
		tb := topicBucket(tx, topic)
		if tb == nil {
			return nil
		}
		var total int64
		c := tb.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			off, ok := decodeOffset(k)
			if !ok {
				return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			if off < floor {
				return nil
			}
			if total += int64(len(k) + len(v)); total > b.opts.RetentionMaxBytes {
				limit = off + 1
				return nil
			}
		}
		return nil
	})
	return limit, err
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
