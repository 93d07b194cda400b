package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"
)

func testBoltOptions() BoltOptions {
	return BoltOptions{
		DeliveryOptions: DeliveryOptions{
			RedeliveryTimeout: testRedelivery,
			MinBackoff:        testMinBackoff,
			MaxBackoff:        testMaxBackoff,
		},
		CommitInterval: 20 * time.Millisecond,
		Logger:         slog.New(slog.DiscardHandler),
	}
}

func openTestDB(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return db
}

// boltEnv is a bolt database file that can be reopened, as after a restart.
type boltEnv struct {
	t    *testing.T
	path string
	opts BoltOptions
	db   *bolt.DB
	b    *Bolt
}

func newBoltEnv(t *testing.T, opts BoltOptions) *boltEnv {
	e := &boltEnv{t: t, path: filepath.Join(t.TempDir(), "events.bolt"), opts: opts}
	t.Cleanup(e.shutdown)
	return e
}

// open closes the previous broker and database, if any, and starts anew.
func (e *boltEnv) open() *Bolt {
	e.t.Helper()
	e.shutdown()
	e.db = openTestDB(e.t, e.path)
	b, err := NewBolt(e.db, e.opts)
	if err != nil {
		e.t.Fatalf("new bolt: %v", err)
	}
	e.b = b
	return b
}

func (e *boltEnv) shutdown() {
	if e.b != nil {
		if err := e.b.Close(); err != nil {
			e.t.Errorf("close broker: %v", err)
		}
	}
	if e.db != nil {
		if err := e.db.Close(); err != nil {
			e.t.Errorf("close db: %v", err)
		}
	}
}

func TestBoltContract(t *testing.T) {
	testContract(t, func(t *testing.T) func() Broker {
		e := newBoltEnv(t, testBoltOptions())
		return func() Broker { return e.open() }
	})
}

func TestNewBoltRejectsNilDB(t *testing.T) {
	is := is.New(t)
	_, err := NewBolt(nil, BoltOptions{})
	is.True(errors.Is(err, ErrInvalidArgument))
}

func TestBoltDataSurvivesReopen(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, testBoltOptions())
	b := e.open()
	ctx := t.Context()
	is.NoErr(b.Publish(ctx, Message{Topic: "keep", Key: "k", Headers: map[string]string{"a": "b"}, Value: []byte("v0")}))
	is.NoErr(b.Publish(ctx, msgs("keep", "v1", "v2")...))
	is.NoErr(b.Publish(ctx, msgs("other", "o0")...))

	b = e.open()
	topics, err := b.Topics(ctx)
	is.NoErr(err)
	is.Equal(topics, []string{"keep", "other"})
	n, err := b.Latest(ctx, "keep")
	is.NoErr(err)
	is.Equal(n, int64(3))
	// Offsets continue where they stopped.
	is.NoErr(b.Publish(ctx, msgs("keep", "v3")...))
	got, err := b.Read(ctx, "keep", 0, 10)
	is.NoErr(err)
	is.Equal(len(got), 4)
	for i, m := range got {
		is.Equal(m.Offset, int64(i))
		is.Equal(string(m.Value), fmt.Sprintf("v%d", i))
	}
	is.Equal(got[0].Key, "k")
	is.Equal(got[0].Headers, map[string]string{"a": "b"})
}

func TestBoltBucketsArePrefixed(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, testBoltOptions())
	b := e.open()
	is.NoErr(b.Publish(t.Context(), msgs("t", "x")...))
	r := newRecorder(nil)
	subscribe(t, b, "g", []string{"t"}, r.handle)
	r.waitValues(t, "x")
	is.NoErr(b.Close())
	var names []string
	is.NoErr(e.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	}))
	is.Equal(names, []string{"broker.groups", "broker.topics"}) // shares events.bolt without collisions
}

// storedGroupOffset reads a group's committed offset for topic from bbolt.
func storedGroupOffset(t *testing.T, db *bolt.DB, group, topic string) (int64, bool) {
	t.Helper()
	var off int64
	var ok bool
	err := db.View(func(tx *bolt.Tx) error {
		gb := tx.Bucket(groupsBucket).Bucket([]byte(group))
		if gb != nil {
			off, ok = decodeOffset(gb.Get([]byte(topic)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return off, ok
}

func TestBoltOutOfOrderAcksNeverSkip(t *testing.T) {
	is := is.New(t)
	opts := testBoltOptions()
	opts.Concurrency = 4
	e := newBoltEnv(t, opts)
	b := e.open()
	is.NoErr(b.Publish(t.Context(), msgs("ooo", "m0", "m1", "m2", "m3", "m4")...))
	// m0 keeps failing while its successors are acknowledged.
	r := newRecorder(func(_ context.Context, m Message) error {
		if string(m.Value) == "m0" {
			return errors.New("not yet")
		}
		return nil
	})
	subscribe(t, b, "g", []string{"ooo"}, r.handle)
	r.waitValues(t, "m1", "m2", "m3", "m4")
	waitUntil(t, "m0 retried", func() bool { return r.count("m0") >= 2 })
	is.NoErr(b.Close())
	off, ok := storedGroupOffset(t, e.db, "g", "ooo")
	is.True(ok)
	is.Equal(off, int64(0)) // the committed offset cannot pass unacknowledged m0

	// After a restart everything from m0 on is delivered again.
	b = e.open()
	r2 := newRecorder(nil)
	subscribe(t, b, "g", []string{"ooo"}, r2.handle)
	r2.waitValues(t, "m0", "m1", "m2", "m3", "m4")
	is.NoErr(b.Close())
	off, _ = storedGroupOffset(t, e.db, "g", "ooo")
	is.Equal(off, int64(5))
}

func TestBoltMaxUnackedStallsBehindFailingMessage(t *testing.T) {
	is := is.New(t)
	opts := testBoltOptions()
	opts.MaxUnacked = 3
	opts.Concurrency = 2
	e := newBoltEnv(t, opts)
	b := e.open()
	is.NoErr(b.Publish(t.Context(), msgs("win", "m0", "m1", "m2", "m3", "m4")...))
	var healed atomic.Bool
	r := newRecorder(func(_ context.Context, m Message) error {
		if string(m.Value) == "m0" && !healed.Load() {
			return errors.New("poison")
		}
		return nil
	})
	subscribe(t, b, "g", []string{"win"}, r.handle)
	waitUntil(t, "m0 retried", func() bool { return r.count("m0") >= 3 })
	got := r.values()
	is.Equal(got["m3"]+got["m4"], 0) // the window ends 3 past the unacknowledged m0
	is.Equal(got["m1"], 1)
	is.Equal(got["m2"], 1)
	healed.Store(true)
	r.waitValues(t, "m3", "m4")
}

func TestBoltSharedGroupSplitsWork(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, testBoltOptions())
	b := e.open()
	block := make(chan struct{})
	defer close(block)
	busy := make(chan string, 1)
	r := newRecorder(nil)
	// a holds on to the first message it gets; b must handle all the others.
	subscribe(t, b, "g", []string{"work"}, func(ctx context.Context, m Message) error {
		select {
		case busy <- string(m.Value):
		default:
		}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return r.handle(ctx, m)
	})
	var values []string
	for i := range 20 {
		values = append(values, fmt.Sprint(i))
	}
	is.NoErr(b.Publish(t.Context(), msgs("work", values[:1]...)...))
	held := <-busy
	other := newRecorder(nil)
	subscribe(t, b, "g", []string{"work"}, other.handle)
	is.NoErr(b.Publish(t.Context(), msgs("work", values[1:]...)...))
	other.waitValues(t, values[1:]...)
	is.Equal(held, "0")
	is.Equal(other.count("0"), 0) // in flight elsewhere, so not delivered twice
}

func TestBoltSubscriptionCloseReturnsWorkToGroup(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, testBoltOptions())
	b := e.open()
	started := make(chan struct{})
	s := subscribe(t, b, "g", []string{"hand"}, func(ctx context.Context, _ Message) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	r := newRecorder(nil)
	is.NoErr(b.Publish(t.Context(), msgs("hand", "m")...))
	<-started
	subscribe(t, b, "g", []string{"hand"}, r.handle)
	is.NoErr(s.Close())
	r.waitValues(t, "m") // released at once, not after the redelivery timeout
}

func TestBoltDeleteGroup(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, testBoltOptions())
	b := e.open()
	ctx := t.Context()
	is.NoErr(b.Publish(ctx, msgs("dg", "m0", "m1")...))
	r := newRecorder(nil)
	s := subscribe(t, b, "g", []string{"dg"}, r.handle)
	r.waitValues(t, "m0", "m1")
	is.True(errors.Is(b.DeleteGroup(ctx, "g"), ErrGroupActive))
	is.NoErr(s.Close())
	_, ok := storedGroupOffset(t, e.db, "g", "dg")
	is.True(ok)
	is.NoErr(b.DeleteGroup(ctx, "g"))
	_, ok = storedGroupOffset(t, e.db, "g", "dg")
	is.True(!ok)
	is.NoErr(b.DeleteGroup(ctx, "never-existed"))
	is.True(errors.Is(b.DeleteGroup(ctx, ""), ErrInvalidGroup))
	// A group recreated under the name starts over.
	r2 := newRecorder(nil)
	subscribe(t, b, "g", []string{"dg"}, r2.handle)
	r2.waitValues(t, "m0", "m1")
}

func TestBoltMessageTooLarge(t *testing.T) {
	is := is.New(t)
	opts := testBoltOptions()
	opts.MaxMessageBytes = 100
	b := newBoltEnv(t, opts).open()
	err := b.Publish(t.Context(), Message{Topic: "big", Value: make([]byte, 200)})
	is.True(errors.Is(err, ErrMessageTooLarge))
	is.NoErr(b.Publish(t.Context(), Message{Topic: "big", Value: make([]byte, 50)}))
}

func TestBoltCorruptRecord(t *testing.T) {
	is := is.New(t)
	e := newBoltEnv(t, testBoltOptions())
	b := e.open()
	is.NoErr(b.Publish(t.Context(), msgs("bad", "ok")...))
	is.NoErr(e.db.Update(func(tx *bolt.Tx) error {
		return topicBucket(tx, "bad").Put(offsetKey(0), []byte{9, 9, 9})
	}))
	_, err := b.Read(t.Context(), "bad", 0, 10)
	is.True(errors.Is(err, ErrCorrupt)) // reported, not a panic
}

func TestBoltConcurrentSubscribeAndClose(t *testing.T) {
	// Subscribing while the broker closes either fails with ErrClosed or
	// yields a subscription Close has stopped; -race checks the handover.
	is := is.New(t)
	b := newBoltEnv(t, testBoltOptions()).open()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := b.Subscribe(context.Background(), "g", []string{"*"}, func(context.Context, Message) error { return nil })
			if err != nil {
				is.True(errors.Is(err, ErrClosed))
				return
			}
			is.NoErr(s.Close())
		})
		wg.Go(func() {
			err := b.Publish(context.Background(), msgs("t", "x")...)
			is.True(err == nil || errors.Is(err, ErrClosed))
		})
	}
	is.NoErr(b.Close())
	wg.Wait()
}

func TestBoltGroupCommit(t *testing.T) {
	is := is.New(t)
	b := newBoltEnv(t, testBoltOptions()).open()
	const publishers = 64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range publishers {
		wg.Go(func() {
			<-start
			is.NoErr(b.Publish(t.Context(), msgs(fmt.Sprintf("gc.%d", i%4), "x")...))
		})
	}
	close(start)
	wg.Wait()
	n := b.commits.Load()
	t.Logf("%d single-message publishes in %d commits", publishers, n)
	is.True(n < publishers/2) // concurrent publishers share transactions (and fsyncs)
	total := int64(0)
	for i := range 4 {
		latest, err := b.Latest(t.Context(), fmt.Sprintf("gc.%d", i))
		is.NoErr(err)
		total += latest
	}
	is.Equal(total, int64(publishers))
}
