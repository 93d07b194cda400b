// Package ring is the bridge's durable event ring buffer: a bounded, append-only
// log of opaque payloads with monotonic integer ids, stored in bbolt.
//
// A ring lives in the top-level bucket "ring.<name>" of a shared bbolt database
// (events.bolt, which also holds the broker's "broker.*" buckets). Inside it the
// nested bucket "entries" maps 8-byte big-endian ids to payloads; that bucket's
// persisted sequence is the newest id ever assigned, so ids survive trimming and
// restarts and are never reused.
//
// Retained entries are always the contiguous id range [Oldest, Newest]: ids are
// assigned contiguously and trimming only removes the oldest ones.
//
// Cursor semantics (what ReadAfter's after means): a reader that has seen every
// event up to and including id after asks for the next ones. The answer is
// ErrExpired exactly when some event it has not seen was trimmed, that is when
// after+1 < Oldest(). Consequences worth spelling out:
//   - after = Oldest()-1 is fine; after = Oldest()-2 is expired.
//   - after = 0 means "from id 1": it is expired once id 1 has been trimmed.
//     A consumer with no cursor that wants only live events should start from
//     Newest() (which never expires); one that wants everything retained starts
//     from Oldest()-1 and, if it loses the race with a trim, gets ErrExpired
//     and can retry.
//   - A ring that has never been appended to is empty (Oldest() = Newest() = 0)
//     and no cursor is expired.
//   - after >= Newest() returns no entries and no error, including cursors
//     from a future the ring has not reached (e.g. a data directory that was
//     reset): such a reader simply waits for ids beyond its cursor.
package ring

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.etcd.io/bbolt"
)

// BucketPrefix prefixes the top-level bbolt bucket of every ring, so rings do
// not collide with other users of the same database (the broker uses "broker.").
const BucketPrefix = "ring."

// MaxNameLen bounds a ring's name; bbolt keys are limited to 32 KiB and a
// longer name is certainly a bug.
const MaxNameLen = 200

// MaxPayloadSize is the largest payload Append accepts (bbolt's value limit).
const MaxPayloadSize = bbolt.MaxValueSize

var (
	// ErrExpired reports a cursor older than the oldest retained entry: some
	// entries after it have been trimmed. The bridge answers HTTP 409.
	ErrExpired = errors.New("ring: cursor expired: entries after it have been trimmed")
	// ErrClosed is returned by operations on a closed Ring.
	ErrClosed = errors.New("ring: closed")
)

var entriesBucket = []byte("entries")

// maxRequestsPerCommit bounds how many Append calls share one transaction, so
// one commit's memory and latency stay bounded under a flood of appenders.
const maxRequestsPerCommit = 4096

// Entry is one retained event.
type Entry struct {
	ID   uint64
	Data []byte
}

// Ring is a durable bounded event log. Its methods are safe for concurrent use.
// Close it before closing the bbolt database.
type Ring struct {
	db       *bbolt.DB
	name     string
	bucket   []byte
	capacity uint64

	// oldest and newest mirror the database for cheap reads; only the
	// committer goroutine writes them (oldest is 0 while the ring is empty).
	oldest atomic.Uint64
	newest atomic.Uint64

	// Group-commit statistics, read by tests and benchmarks.
	commits       atomic.Uint64
	committedReqs atomic.Uint64

	reqs      chan *appendReq
	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when the committer has exited

	notifyMu sync.Mutex
	notifyCh chan struct{}
}

// Open opens (creating if needed) the ring called name in db, keeping at most
// capacity entries. If the ring already holds more than capacity entries (it
// was last opened with a larger capacity) the oldest are trimmed now.
//
// Appends are durable when they return provided db fsyncs its commits (the
// bbolt default; a db opened with NoSync gives up durability for every user).
// Open each name once per database: a second Ring on the same name would
// still get unique ids (the id counter is read inside each transaction) but
// its cached Oldest/Newest and notifications would miss the other's appends.
func Open(db *bbolt.DB, name string, capacity int) (*Ring, error) {
	switch {
	case db == nil:
		return nil, errors.New("ring: open: nil database")
	case name == "":
		return nil, errors.New("ring: open: empty name")
	case len(name) > MaxNameLen:
		return nil, fmt.Errorf("ring: open: name longer than %d bytes", MaxNameLen)
	case capacity <= 0:
		return nil, fmt.Errorf("ring: open %q: capacity must be positive, got %d", name, capacity)
	}
	r := &Ring{
		db:       db,
		name:     name,
		bucket:   []byte(BucketPrefix + name),
		capacity: uint64(capacity),
		reqs:     make(chan *appendReq, maxRequestsPerCommit),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
		notifyCh: make(chan struct{}),
	}
	err := db.Update(func(tx *bbolt.Tx) error {
		b, err := r.createEntries(tx)
		if err != nil {
			return err
		}
		first, err := r.trim(b)
		if err != nil {
			return err
		}
		r.setBounds(first, b.Sequence())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ring: open %q: %w", name, err)
	}
	go r.commitLoop()
	return r, nil
}

// Close stops the ring. Appends still queued fail with ErrClosed, waiters in
// Wait return ErrClosed, and channels from Notify are closed. It does not close
// the database. Close is idempotent.
func (r *Ring) Close() error {
	r.closeOnce.Do(func() {
		close(r.closing)
		<-r.done
		// The committer has exited, so nobody else touches notifyCh's
		// lifecycle: close it for good without a replacement.
		r.notifyMu.Lock()
		close(r.notifyCh)
		r.notifyMu.Unlock()
	})
	return nil
}

// Oldest returns the id of the oldest retained entry, or 0 if the ring is empty.
func (r *Ring) Oldest() uint64 { return r.oldest.Load() }

// Newest returns the id of the newest entry ever appended, or 0 if none was.
func (r *Ring) Newest() uint64 { return r.newest.Load() }

// Capacity returns the maximum number of retained entries.
func (r *Ring) Capacity() int { return int(r.capacity) }

// ReadAfter returns up to limit entries with id > after, in id order. It
// returns ErrExpired when entries after the cursor have been trimmed (see the
// package documentation for the exact rule) and an empty slice when after is
// at or beyond the newest id. The returned Data slices are the caller's.
func (r *Ring) ReadAfter(after uint64, limit int) ([]Entry, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("ring: read after %d: limit must be positive, got %d", after, limit)
	}
	if r.isClosed() {
		return nil, ErrClosed
	}
	var out []Entry
	err := r.db.View(func(tx *bbolt.Tx) error {
		b := r.entries(tx)
		if b == nil {
			return errors.New("bucket missing")
		}
		newest := b.Sequence()
		if after >= newest {
			return nil
		}
		c := b.Cursor()
		// Check expiry against the same snapshot we read from, not the cached
		// bounds, so a concurrent trim cannot slip between check and read.
		k, _ := c.First()
		first := newest + 1 // empty but with ids assigned: everything was trimmed
		if k != nil {
			id, err := decodeID(k)
			if err != nil {
				return err
			}
			first = id
		}
		if after+1 < first {
			return ErrExpired
		}
		n := min(uint64(limit), newest-after)
		out = make([]Entry, 0, n)
		// One backing array for all payloads: bbolt's memory is only valid
		// inside the transaction, and n small allocations dominate the cost.
		var arena []byte
		ends := make([]int, 0, n)
		for k, v := c.Seek(encodeID(after + 1)); k != nil && uint64(len(out)) < n; k, v = c.Next() {
			id, err := decodeID(k)
			if err != nil {
				return err
			}
			arena = append(arena, v...)
			ends = append(ends, len(arena))
			out = append(out, Entry{ID: id})
		}
		start := 0
		for i, end := range ends {
			out[i].Data = arena[start:end:end]
			start = end
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ring %q: read after %d: %w", r.name, after, err)
	}
	return out, nil
}

// Notify returns a channel that is closed after the next commit that appends
// entries (or when the ring is closed). Closing never blocks appenders, however
// slow the consumer. Take the channel before reading, so nothing appended
// between the read and the wait is missed:
//
//	for {
//		ch := r.Notify()
//		entries, err := r.ReadAfter(cursor, 100)
//		... deliver entries, advance cursor ...
//		if len(entries) == 0 {
//			select { case <-ch: case <-ctx.Done(): return }
//		}
//	}
func (r *Ring) Notify() <-chan struct{} {
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	return r.notifyCh
}

// Wait blocks until Newest() > after, ctx is done, or the ring is closed.
func (r *Ring) Wait(ctx context.Context, after uint64) error {
	for {
		ch := r.Notify()
		if r.Newest() > after {
			return nil
		}
		if r.isClosed() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notify wakes every current waiter by closing the channel and installing a
// fresh one for later waiters. Only the committer calls it.
func (r *Ring) notify() {
	r.notifyMu.Lock()
	close(r.notifyCh)
	r.notifyCh = make(chan struct{})
	r.notifyMu.Unlock()
}

func (r *Ring) isClosed() bool {
	select {
	case <-r.closing:
		return true
	default:
		return false
	}
}

func (r *Ring) setBounds(first, newest uint64) {
	if first > newest {
		first = 0 // empty
	}
	r.newest.Store(newest)
	r.oldest.Store(first)
}

func (r *Ring) entries(tx *bbolt.Tx) *bbolt.Bucket {
	top := tx.Bucket(r.bucket)
	if top == nil {
		return nil
	}
	return top.Bucket(entriesBucket)
}

func (r *Ring) createEntries(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	top, err := tx.CreateBucketIfNotExists(r.bucket)
	if err != nil {
		return nil, fmt.Errorf("create bucket: %w", err)
	}
	b, err := top.CreateBucketIfNotExists(entriesBucket)
	if err != nil {
		return nil, fmt.Errorf("create entries bucket: %w", err)
	}
	return b, nil
}

// trim deletes the oldest entries until at most capacity remain and returns
// the id of the oldest retained entry (Sequence()+1 when empty).
func (r *Ring) trim(b *bbolt.Bucket) (uint64, error) {
	newest := b.Sequence()
	keep := uint64(1) // first id to keep
	if newest > r.capacity {
		keep = newest - r.capacity + 1
	}
	c := b.Cursor()
	// Re-seek after each Delete: bbolt cursors may skip a key when Next
	// follows a Delete.
	for k, _ := c.First(); k != nil; k, _ = c.First() {
		id, err := decodeID(k)
		if err != nil {
			return 0, err
		}
		if id > newest {
			return 0, fmt.Errorf("corrupt ring: entry %d beyond sequence %d", id, newest)
		}
		if id >= keep {
			return id, nil
		}
		if err := c.Delete(); err != nil {
			return 0, fmt.Errorf("trim entry %d: %w", id, err)
		}
	}
	return newest + 1, nil
}

func encodeID(id uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), id)
}

func decodeID(k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, fmt.Errorf("corrupt ring: key of %d bytes", len(k))
	}
	return binary.BigEndian.Uint64(k), nil
}
