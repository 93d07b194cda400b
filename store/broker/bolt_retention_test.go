package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"
)

// fakeClock is a settable BoltOptions.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func publishN(t *testing.T, b Broker, topic string, from, to int) {
	t.Helper()
	var batch []Message
	for i := from; i < to; i++ {
		batch = append(batch, Message{Topic: topic, Value: fmt.Appendf(nil, "m%d", i)})
		if len(batch) == 1000 || i == to-1 {
			if err := b.Publish(t.Context(), batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// retained returns the offsets Read still finds in topic.
func retained(t *testing.T, b *Bolt, topic string) (first int64, n int) {
	t.Helper()
	var all []Message
	for from := int64(0); ; {
		got, err := b.Read(t.Context(), topic, from, maxReadLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		all = append(all, got...)
		from = got[len(got)-1].Offset + 1
	}
	if len(all) == 0 {
		return -1, 0
	}
	for i, m := range all {
		if m.Offset != all[0].Offset+int64(i) {
			t.Fatalf("hole at %d", m.Offset)
		}
	}
	return all[0].Offset, len(all)
}

func retentionOptions(maxMessages int64, maxAge time.Duration) BoltOptions {
	opts := testBoltOptions()
	opts.RetentionMaxMessages = maxMessages
	opts.RetentionMaxAge = maxAge
	opts.RetentionInterval = time.Hour // tests call trim directly
	return opts
}

func TestBoltRetentionByCount(t *testing.T) {
	is := is.New(t)
	b := newBoltEnv(t, retentionOptions(5, -1)).open()
	publishN(t, b, "cnt", 0, 20)
	is.NoErr(b.trim())
	first, n := retained(t, b, "cnt")
	is.Equal(first, int64(15))
	is.Equal(n, 5)
	latest, err := b.Latest(t.Context(), "cnt")
	is.NoErr(err)
	is.Equal(latest, int64(20))
	// Offsets keep counting after a trim, and a new group starts at the oldest retained.
	publishN(t, b, "cnt", 20, 21)
	r := newRecorder(nil)
	subscribe(t, b, "late", []string{"cnt"}, r.handle)
	r.waitValues(t, "m15", "m20")
	time.Sleep(quiet / 4)
	is.Equal(len(r.values()), 6)
}

func TestBoltRetentionLargeTrimInChunks(t *testing.T) {
	is := is.New(t)
	b := newBoltEnv(t, retentionOptions(10, -1)).open()
	publishN(t, b, "big", 0, 2*trimChunk+100)
	is.NoErr(b.trim())
	first, n := retained(t, b, "big")
	is.Equal(first, int64(2*trimChunk+90))
	is.Equal(n, 10)
}

func TestBoltRetentionByAge(t *testing.T) {
	is := is.New(t)
	clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts := retentionOptions(-1, time.Hour)
	opts.Now = clock.Now
	b := newBoltEnv(t, opts).open()
	publishN(t, b, "age", 0, 5)
	clock.Advance(30 * time.Minute)
	publishN(t, b, "age", 5, 7)
	is.NoErr(b.trim())
	_, n := retained(t, b, "age")
	is.Equal(n, 7) // nothing is an hour old yet
	clock.Advance(45 * time.Minute)
	is.NoErr(b.trim())
	first, n := retained(t, b, "age")
	is.Equal(first, int64(5))
	is.Equal(n, 2)
	clock.Advance(time.Hour)
	is.NoErr(b.trim())
	first, _ = retained(t, b, "age")
	is.Equal(first, int64(-1)) // all gone
	topics, err := b.Topics(t.Context())
	is.NoErr(err)
	is.Equal(topics, []string{"age"}) // still known, offsets continue
	publishN(t, b, "age", 7, 8)
	first, _ = retained(t, b, "age")
	is.Equal(first, int64(7))
}

// slowGroup subscribes group "slow" to topic: it acknowledges m0..m2 and
// fails everything after, so it holds retention at offset 3.
func slowGroup(t *testing.T, b *Bolt, topic string) Subscription {
	t.Helper()
	r := newRecorder(func(_ context.Context, m Message) error {
		var i int
		if _, err := fmt.Sscanf(string(m.Value), "m%d", &i); err == nil && i < 3 {
			return nil
		}
		return errors.New("later")
	})
	s := subscribe(t, b, "slow", []string{topic}, r.handle)
	r.waitValues(t, "m0", "m1", "m2", "m3")
	return s
}

func TestBoltRetentionKeepsUnacked(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, retentionOptions(5, -1))
	b := e.open()
	publishN(t, b, "keep", 0, 20)
	s := slowGroup(t, b, "keep")
	is.NoErr(b.trim())
	first, _ := retained(t, b, "keep")
	is.Equal(first, int64(3)) // the active group still needs m3 onwards
	is.NoErr(s.Close())

	// An inactive group, known only from its stored offset, holds retention too.
	b = e.open()
	is.NoErr(b.trim())
	first, _ = retained(t, b, "keep")
	is.Equal(first, int64(3))

	// Until it is deleted.
	is.NoErr(b.DeleteGroup(t.Context(), "slow"))
	is.NoErr(b.trim())
	first, n := retained(t, b, "keep")
	is.Equal(first, int64(15))
	is.Equal(n, 5)
}

func TestBoltRetentionRunsInBackground(t *testing.T) {
	opts := retentionOptions(2, -1)
	opts.RetentionInterval = 10 * time.Millisecond
	b := newBoltEnv(t, opts).open()
	publishN(t, b, "bg", 0, 10)
	waitUntil(t, "background trim", func() bool {
		first, _ := retained(t, b, "bg")
		return first == 8
	})
}

func TestBoltRetentionBySize(t *testing.T) {
	is := is.New(t)
	opts := retentionOptions(-1, -1)
	// Records are the same size (an 8-byte key, "m15".."m19" plus the
	// codec's header), measured from the newest.
	b := newBoltEnv(t, opts).open()
	publishN(t, b, "size", 0, 20)
	var per int64
	is.NoErr(b.db.View(func(tx *bolt.Tx) error {
		k, v := topicBucket(tx, "size").Cursor().Last()
		per = int64(len(k) + len(v))
		return nil
	}))
	b.opts.RetentionMaxBytes = 5*per + per/2 // room for five and a half of the newest
	is.NoErr(b.trim())
	first, n := retained(t, b, "size")
	is.Equal(first, int64(15))
	is.Equal(n, 5)
	// The message bound still applies when it is the stricter one.
	b.opts.RetentionMaxMessages = 2
	is.NoErr(b.trim())
	first, n = retained(t, b, "size")
	is.Equal(first, int64(18))
	is.Equal(n, 2)
	// A topic that fits is left alone.
	b.opts.RetentionMaxMessages, b.opts.RetentionMaxBytes = -1, 1<<20
	publishN(t, b, "size", 20, 30)
	is.NoErr(b.trim())
	first, n = retained(t, b, "size")
	is.Equal(first, int64(18))
	is.Equal(n, 12)
}

// TestBoltRetentionSizeTallyMatchesAWalk: the size bound kept as a running
// tally trims exactly what a walk back from the newest message would,
// through random publishes and trims and a reopen (which counts afresh),
// alone and with a message or an age bound (the age bound deletes past the
// tally's start).
func TestBoltRetentionSizeTallyMatchesAWalk(t *testing.T) {
	for _, c := range []struct {
		name        string
		maxMessages int64
		maxAge      time.Duration
	}{{"size", -1, -1}, {"size and count", 8, -1}, {"size and age", -1, time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			opts := retentionOptions(c.maxMessages, c.maxAge)
			opts.RetentionMaxBytes = 6 << 10
			opts.Now = clock.Now
			env := newBoltEnv(t, opts)
			b := env.open()
			rng := rand.New(rand.NewPCG(21, uint64(len(c.name))))
			pastSize := 0 // trims where the other bound cut past the size bound
			defer func() {
				if c.maxMessages >= 0 || c.maxAge >= 0 {
					is.True(pastSize > 0)
				}
			}()
			for round := range 300 {
				if round == 150 {
					b = env.open()
				}
				// Mostly minutes; now and then most of an hour, so that the
				// age bound, when there is one, cuts past the size bound.
				step := time.Duration(rng.IntN(5)) * time.Minute
				if rng.IntN(8) == 0 {
					step = 55 * time.Minute
				}
				clock.Advance(step)
				var batch []Message
				for range rng.IntN(12) {
					batch = append(batch, Message{Topic: "t", Value: bytes.Repeat([]byte{'x'}, rng.IntN(900))})
				}
				if len(batch) > 0 {
					is.NoErr(b.Publish(t.Context(), batch...))
				}
				if rng.IntN(3) > 0 {
					continue
				}
				// What a walk from the newest message keeps, then what the
				// other bound keeps of it.
				want := int64(-1)
				is.NoErr(b.db.View(func(tx *bolt.Tx) error {
					var total int64
					cur := topicBucket(tx, "t").Cursor()
					for k, v := cur.Last(); k != nil; k, v = cur.Prev() {
						if total += int64(len(k) + len(v)); total > opts.RetentionMaxBytes {
							break
						}
						want, _ = decodeOffset(k)
					}
					if c.maxAge < 0 || want < 0 {
						return nil
					}
					k, v := cur.Seek(offsetKey(want))
					for ; k != nil && recordBefore(v, clock.Now().Add(-c.maxAge)); k, v = cur.Next() {
					}
					bySize := want
					want = -1
					if k != nil {
						want, _ = decodeOffset(k)
					}
					if want != bySize {
						pastSize++
					}
					return nil
				}))
				if end, err := b.Latest(t.Context(), "t"); c.maxMessages >= 0 && err == nil && want >= 0 && end-c.maxMessages > want {
					want = end - c.maxMessages
					pastSize++
				}
				is.NoErr(b.trim())
				first, _ := retained(t, b, "t")
				is.Equal(first, want)
			}
		})
	}
}

// TestBoltRetentionSizeTallyCountsDownInChunks: after a start the tally is
// counted a chunk per pass; the size bound trims nothing until the count
// is complete, then exactly what a walk would, messages published meanwhile
// included.
func TestBoltRetentionSizeTallyCountsDownInChunks(t *testing.T) {
	is := is.New(t)
	opts := retentionOptions(-1, -1)
	opts.RetentionMaxBytes = 20 << 10
	b := newBoltEnv(t, opts).open()
	rng := rand.New(rand.NewPCG(3, 4))
	publish := func(n int) {
		var batch []Message
		for range n {
			batch = append(batch, Message{Topic: "t", Value: bytes.Repeat([]byte{'x'}, rng.IntN(300))})
		}
		is.NoErr(b.Publish(t.Context(), batch...))
	}
	publish(100)
	b.mu.RLock()
	ts := b.topics["t"]
	b.mu.RUnlock()
	ts.size.chunk = 7
	// walk answers the lowest offset the size bound keeps (the oldest
	// stored one when everything fits) and the bytes from it on.
	walk := func() (limit, total int64) {
		is.NoErr(b.db.View(func(tx *bolt.Tx) error {
			c := topicBucket(tx, "t").Cursor()
			for k, v := c.Last(); k != nil; k, v = c.Prev() {
				off, _ := decodeOffset(k)
				if total+int64(len(k)+len(v)) > opts.RetentionMaxBytes {
					return nil
				}
				limit, total = off, total+int64(len(k)+len(v))
			}
			return nil
		}))
		return limit, total
	}
	passes := 0
	for ; passes < 100; passes++ {
		ts.size.mu.Lock()
		limit, err := b.sizeLimit(ts, math.MinInt64)
		complete := ts.size.complete
		ts.size.mu.Unlock()
		is.NoErr(err)
		if complete {
			want, total := walk()
			is.Equal(limit, want)
			is.Equal(ts.size.bytes, total)
			break
		}
		is.Equal(limit, int64(math.MinInt64)) // nothing trimmed while counting
		publish(3)                            // counted by the next pass too
	}
	is.True(passes > 1 && passes < 100) // counted over several passes
}

// TestBoltRetentionSizeBoundWaitsForAGroup: messages over the size bound
// that a group still needs stay until it lets them go, and then the size
// bound trims exactly what a walk would.
func TestBoltRetentionSizeBoundWaitsForAGroup(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, retentionOptions(-1, -1))
	b := e.open()
	publishN(t, b, "keep", 0, 20)
	var per int64
	is.NoErr(b.db.View(func(tx *bolt.Tx) error {
		k, v := topicBucket(tx, "keep").Cursor().Last()
		per = int64(len(k) + len(v))
		return nil
	}))
	b.opts.RetentionMaxBytes = 5*per + per/2 // room for five of the newest
	s := slowGroup(t, b, "keep")
	is.NoErr(b.trim())
	first, _ := retained(t, b, "keep")
	is.Equal(first, int64(3)) // the group still needs m3 onwards
	publishN(t, b, "keep", 20, 23)
	is.NoErr(b.trim())
	first, _ = retained(t, b, "keep")
	is.Equal(first, int64(3))
	is.NoErr(s.Close())
	is.NoErr(b.DeleteGroup(t.Context(), "slow"))
	is.NoErr(b.trim())
	first, n := retained(t, b, "keep")
	is.Equal(first, int64(18)) // m18..m22: the five newest
	is.Equal(n, 5)
}
