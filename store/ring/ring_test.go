package ring

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"go.etcd.io/bbolt"
)

func openDB(t testing.TB, path string) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openRing(t testing.TB, db *bbolt.DB, name string, capacity int) *Ring {
	t.Helper()
	r, err := Open(db, name, capacity)
	if err != nil {
		t.Fatalf("open ring: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func appendN(t testing.TB, r *Ring, n int) []uint64 {
	t.Helper()
	var ids []uint64
	for i := range n {
		got, err := r.Append(context.Background(), fmt.Appendf(nil, "e%d", i))
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		ids = append(ids, got...)
	}
	return ids
}

func entryIDs(es []Entry) []uint64 {
	ids := make([]uint64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

func span(from, to uint64) []uint64 {
	var ids []uint64
	for id := from; id <= to; id++ {
		ids = append(ids, id)
	}
	return ids
}

func TestMonotonicIDs(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 100)
	is.Equal(r.Oldest(), uint64(0)) // empty ring
	is.Equal(r.Newest(), uint64(0))

	ids, err := r.Append(context.Background(), []byte("a"))
	is.NoErr(err)
	is.Equal(ids, []uint64{1})
	ids, err = r.Append(context.Background(), []byte("b"), []byte("c"), nil)
	is.NoErr(err)
	is.Equal(ids, []uint64{2, 3, 4})
	is.Equal(r.Oldest(), uint64(1))
	is.Equal(r.Newest(), uint64(4))

	ids, err = r.Append(context.Background()) // nothing to append
	is.NoErr(err)
	is.Equal(len(ids), 0)
	is.Equal(r.Newest(), uint64(4))

	es, err := r.ReadAfter(0, 10)
	is.NoErr(err)
	is.Equal(entryIDs(es), []uint64{1, 2, 3, 4})
	is.Equal(string(es[0].Data), "a")
	is.Equal(string(es[2].Data), "c")
	is.Equal(len(es[3].Data), 0)

	es, err = r.ReadAfter(2, 1) // limit honoured
	is.NoErr(err)
	is.Equal(entryIDs(es), []uint64{3})

	for _, after := range []uint64{4, 5, 1 << 63} { // at or beyond newest: empty, no error
		es, err = r.ReadAfter(after, 10)
		is.NoErr(err)
		is.Equal(len(es), 0)
	}
}

func TestReadAfterCopiesData(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10)
	payload := []byte("hello")
	_, err := r.Append(context.Background(), payload, []byte("world"))
	is.NoErr(err)
	payload[0] = 'X' // the ring must not keep the caller's slice

	es, err := r.ReadAfter(0, 10)
	is.NoErr(err)
	es[0].Data = append(es[0].Data, "!!"...) // must not spill into the next entry
	es, err = r.ReadAfter(0, 10)
	is.NoErr(err)
	is.Equal(string(es[0].Data), "hello")
	is.Equal(string(es[1].Data), "world")
}

func TestCapacityTrim(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 5)
	appendN(t, r, 3)
	is.Equal(r.Oldest(), uint64(1))
	appendN(t, r, 9) // 12 in total
	is.Equal(r.Oldest(), uint64(8))
	is.Equal(r.Newest(), uint64(12))
	es, err := r.ReadAfter(7, 100)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(8, 12))
	is.Equal(string(es[0].Data), "e4") // id 8 was the 5th payload of the second call

	// One call larger than the capacity keeps only its tail.
	batch := make([][]byte, 13)
	for i := range batch {
		batch[i] = fmt.Appendf(nil, "b%d", i)
	}
	ids, err := r.Append(context.Background(), batch...)
	is.NoErr(err)
	is.Equal(ids, span(13, 25))
	is.Equal(r.Oldest(), uint64(21))
	es, err = r.ReadAfter(20, 100)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(21, 25))
	is.Equal(string(es[4].Data), "b12")
}

func TestExpiryBoundary(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10)

	// Nothing trimmed yet: cursor 0 ("from the start") is oldest-1 and fine.
	appendN(t, r, 10)
	es, err := r.ReadAfter(0, 100)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(1, 10))

	appendN(t, r, 15) // ids 1..15 trimmed, 16..25 retained
	oldest := r.Oldest()
	is.Equal(oldest, uint64(16))

	es, err = r.ReadAfter(oldest-1, 100) // saw everything before oldest: fine
	is.NoErr(err)
	is.Equal(entryIDs(es), span(16, 25))

	_, err = r.ReadAfter(oldest-2, 100) // missed id oldest-1
	is.True(errors.Is(err, ErrExpired))
	_, err = r.ReadAfter(0, 100) // cursor 0 missed id 1
	is.True(errors.Is(err, ErrExpired))

	es, err = r.ReadAfter(oldest, 100)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(17, 25))
}

func TestRestart(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	db, err := bbolt.Open(path, 0o600, nil)
	is.NoErr(err)
	r, err := Open(db, "events", 4)
	is.NoErr(err)
	other, err := Open(db, "other", 4)
	is.NoErr(err)
	appendN(t, r, 10)
	appendN(t, other, 2)
	is.NoErr(r.Close())
	is.NoErr(other.Close())
	is.NoErr(db.Close())

	db = openDB(t, path)
	r = openRing(t, db, "events", 4)
	is.Equal(r.Oldest(), uint64(7))
	is.Equal(r.Newest(), uint64(10))
	es, err := r.ReadAfter(6, 10)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(7, 10))
	_, err = r.ReadAfter(5, 10)
	is.True(errors.Is(err, ErrExpired)) // trimming state survived

	ids, err := r.Append(context.Background(), []byte("after restart"))
	is.NoErr(err)
	is.Equal(ids, []uint64{11}) // never reused
	is.Equal(r.Oldest(), uint64(8))

	other = openRing(t, db, "other", 4)
	is.Equal(other.Newest(), uint64(2)) // rings sharing a db are independent
	is.Equal(other.Oldest(), uint64(1))
}

func TestReopenSmallerCapacityTrims(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "events.bolt")
	db := openDB(t, path)
	r := openRing(t, db, "events", 100)
	appendN(t, r, 20)
	is.NoErr(r.Close())

	r = openRing(t, db, "events", 3)
	is.Equal(r.Oldest(), uint64(18))
	is.Equal(r.Newest(), uint64(20))
	es, err := r.ReadAfter(17, 100)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(18, 20))

	is.NoErr(r.Close())
	r = openRing(t, db, "events", 50) // growing again does not resurrect anything
	is.Equal(r.Oldest(), uint64(18))
	appendN(t, r, 5)
	is.Equal(r.Oldest(), uint64(18))
	is.Equal(r.Newest(), uint64(25))
}

func TestDoesNotTouchOtherBuckets(t *testing.T) {
	is := is.New(t)
	db := openDB(t, filepath.Join(t.TempDir(), "events.bolt"))
	is.NoErr(db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("broker.topic"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	}))
	r := openRing(t, db, "events", 2)
	appendN(t, r, 5)

	var names []string
	is.NoErr(db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	}))
	is.Equal(names, []string{"broker.topic", "ring.events"})
	is.NoErr(db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("broker.topic")).Get([]byte("k")); string(v) != "v" {
			return fmt.Errorf("broker value changed: %q", v)
		}
		return nil
	}))
}

func TestInvalidArguments(t *testing.T) {
	is := is.New(t)
	db := openDB(t, filepath.Join(t.TempDir(), "events.bolt"))
	for _, c := range []struct {
		name     string
		db       *bbolt.DB
		ring     string
		capacity int
	}{
		{"zero capacity", db, "events", 0},
		{"negative capacity", db, "events", -1},
		{"nil db", nil, "events", 10},
		{"empty name", db, "", 10},
		{"long name", db, string(make([]byte, MaxNameLen+1)), 10},
	} {
		r, err := Open(c.db, c.ring, c.capacity)
		if err == nil || r != nil {
			t.Errorf("%s: Open = %v, %v; want error", c.name, r, err)
		}
	}

	r := openRing(t, db, "events", 10)
	for _, limit := range []int{0, -1} {
		_, err := r.ReadAfter(0, limit)
		is.True(err != nil)
	}
}

func TestClosed(t *testing.T) {
	is := is.New(t)
	r, err := Open(openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10)
	is.NoErr(err)
	appendN(t, r, 1)
	ch := r.Notify()
	is.NoErr(r.Close())
	is.NoErr(r.Close()) // idempotent

	select {
	case <-ch:
	default:
		t.Fatal("Notify channel not closed by Close")
	}
	_, err = r.Append(context.Background(), []byte("x"))
	is.True(errors.Is(err, ErrClosed))
	_, err = r.ReadAfter(0, 10)
	is.True(errors.Is(err, ErrClosed))
	is.True(errors.Is(r.Wait(context.Background(), 5), ErrClosed))
	is.Equal(r.Newest(), uint64(1))
}

func TestAppendCanceledContext(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ids, err := r.Append(ctx, []byte("x"))
	is.True(errors.Is(err, context.Canceled))
	is.Equal(len(ids), 0)
	is.Equal(r.Newest(), uint64(0)) // nothing appended
}

func TestConcurrentAppends(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10_000)
	const workers, perWorker = 32, 40

	// Cancelled appenders race with real ones: whichever way each goes, a nil
	// error must mean "appended" and an error "not appended".
	var (
		mu       sync.Mutex
		byID     = map[uint64]string{}
		failures int
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				ctx := context.Background()
				var cancel context.CancelFunc = func() {}
				if i%10 == 9 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*time.Microsecond)
				}
				payload := fmt.Sprintf("w%d-%d", w, i)
				var ps [][]byte
				if i%2 == 0 {
					ps = [][]byte{[]byte(payload)}
				} else {
					ps = [][]byte{[]byte(payload + "a"), []byte(payload + "b")}
				}
				ids, err := r.Append(ctx, ps...)
				cancel()
				mu.Lock()
				if err != nil {
					failures++
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("append: %v", err)
					}
				} else {
					if len(ids) != len(ps) {
						t.Errorf("got %d ids for %d payloads", len(ids), len(ps))
					}
					for j, id := range ids {
						if j > 0 && id != ids[j-1]+1 {
							t.Errorf("ids of one call not consecutive: %v", ids)
						}
						if _, dup := byID[id]; dup {
							t.Errorf("duplicate id %d", id)
						}
						byID[id] = string(ps[j])
					}
				}
				mu.Unlock()
			}
		})
	}
	// A reader running alongside sees a consistent prefix at every read.
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			es, err := r.ReadAfter(0, 100_000)
			if err != nil {
				t.Errorf("concurrent read: %v", err)
				return
			}
			for i, e := range es {
				if e.ID != uint64(i+1) {
					t.Errorf("read gap: position %d has id %d", i, e.ID)
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-readerDone

	is.Equal(uint64(len(byID)), r.Newest()) // contiguous: no id lost to a cancelled append
	es, err := r.ReadAfter(0, 100_000)
	is.NoErr(err)
	is.Equal(entryIDs(es), span(1, r.Newest()))
	for _, e := range es {
		if byID[e.ID] != string(e.Data) {
			t.Fatalf("id %d holds %q, appender got it for %q", e.ID, e.Data, byID[e.ID])
		}
	}
	// Group commit: concurrent appenders shared transactions.
	is.True(r.commits.Load() < r.committedReqs.Load())
	t.Logf("%d ids, %d appends cancelled, %d appends in %d commits",
		len(byID), failures, r.committedReqs.Load(), r.commits.Load())
}

func TestNotify(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10)

	ch := r.Notify()
	select {
	case <-ch:
		t.Fatal("notified before any append")
	default:
	}
	appendN(t, r, 1)
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatal("not notified after append")
	}
	next := r.Notify()
	is.True(next != ch) // a fresh channel for the next append
	select {
	case <-next:
		t.Fatal("fresh channel already closed")
	default:
	}
}

func TestWait(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 10)
	ctx := context.Background()

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	is.True(errors.Is(r.Wait(short, 0), context.DeadlineExceeded)) // nothing yet

	errc := make(chan error, 1)
	go func() { errc <- r.Wait(ctx, 0) }()
	time.Sleep(10 * time.Millisecond)
	appendN(t, r, 1)
	select {
	case err := <-errc:
		is.NoErr(err)
	case <-time.After(15 * time.Second):
		t.Fatal("Wait did not return after append")
	}
	is.NoErr(r.Wait(ctx, 0)) // already satisfied: returns at once

	go func() { errc <- r.Wait(ctx, 1) }()
	time.Sleep(10 * time.Millisecond)
	is.NoErr(r.Close())
	select {
	case err := <-errc:
		is.True(errors.Is(err, ErrClosed))
	case <-time.After(15 * time.Second):
		t.Fatal("Wait did not return on Close")
	}
}

func TestSlowConsumersDoNotBlockAppenders(t *testing.T) {
	is := is.New(t)
	r := openRing(t, openDB(t, filepath.Join(t.TempDir(), "events.bolt")), "events", 1000)
	// Consumers that grab channels (and Wait calls) and never make progress.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var held []<-chan struct{}
	for range 100 {
		held = append(held, r.Notify())
		go r.Wait(ctx, 1<<62)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			_, err := r.Append(context.Background(), []byte("x"))
			if err != nil {
				t.Errorf("append: %v", err)
				return
			}
			held = append(held, r.Notify())
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("appends blocked by consumers that never read")
	}
	is.Equal(r.Newest(), uint64(200))
}

func TestReadAfterDoesNotWaitForCommits(t *testing.T) {
	// A long-running write transaction (e.g. the broker's) must not stall
	// readers: bbolt readers run beside the writer.
	is := is.New(t)
	db := openDB(t, filepath.Join(t.TempDir(), "events.bolt"))
	r := openRing(t, db, "events", 10)
	appendN(t, r, 3)
	tx, err := db.Begin(true)
	is.NoErr(err)
	defer tx.Rollback()
	es, err := r.ReadAfter(0, 10)
	is.NoErr(err)
	is.Equal(entryIDs(es), []uint64{1, 2, 3})
}
