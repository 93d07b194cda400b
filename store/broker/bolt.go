package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bucket names; the "broker." prefix keeps them apart from the event ring
// that shares events.bolt.
var (
	// topicsBucket holds one sub-bucket per topic: 8-byte big-endian offset ->
	// record. The sub-bucket's sequence is the topic's next offset, so offsets
	// stay monotonic even after retention has emptied the topic.
	topicsBucket = []byte("broker.topics")
	// groupsBucket holds one sub-bucket per consumer group: topic -> 8-byte
	// committed offset (every message below it is acknowledged).
	groupsBucket = []byte("broker.groups")
)

// BoltOptions configure a Bolt broker. Zero values select the defaults.
type BoltOptions struct {
	DeliveryOptions

	// Concurrency is the number of handler calls one subscription runs at a
	// time. Default 1, which delivers each topic in offset order to a lone
	// subscriber (redeliveries excepted).
	Concurrency int
	// MaxUnacked bounds, per group and topic, how far delivery may run ahead
	// of the oldest unacknowledged message. A message that keeps failing
	// therefore stalls its topic for its group after this many more messages
	// (the log never skips it). Default 1024.
	MaxUnacked int
	// CommitInterval is how often acknowledged offsets are written to bbolt.
	// Acks are cheap in between; a crash redelivers at most this much.
	// Default 100ms.
	CommitInterval time.Duration

	// RetentionMaxAge and RetentionMaxMessages bound each topic; a negative
	// value disables that bound. Defaults 7 days and 1,000,000. Retention never
	// removes a message some consumer group known to the broker has not yet
	// acknowledged (see Bolt), so consumers do not lose messages to it.
	RetentionMaxAge      time.Duration
	RetentionMaxMessages int64
	// RetentionMaxBytes bounds the stored bytes (keys, headers and values) of
	// each topic, under the same rule; negative disables it. Default 512 MiB.
	// After a start it applies once each topic's bytes are counted, which
	// takes one pass per 50,000 stored messages (sizeTally).
	RetentionMaxBytes int64
	// RetentionInterval is how often retention runs in the background. Default 1m.
	RetentionInterval time.Duration

	// MaxMessageBytes bounds one encoded message (key, headers and value).
	// Default 1 MiB, Kafka's default.
	MaxMessageBytes int
	// MaxBatchMessages bounds how many messages one group commit writes.
	// Default 20,000.
	MaxBatchMessages int

	// JournalPath, when set, puts a write-ahead journal in front of bbolt
	// (bolt_journal.go): Publish returns once its messages are in the
	// journal and fdatasynced (one fsync per group of publishes instead of
	// bbolt's two), and a background goroutine applies them to bbolt in
	// fsynced transactions. The broker replays the journal when it opens.
	// The daemon uses events.journal next to events.bolt. Default: none,
	// every group of publishes is its own bbolt transaction.
	JournalPath string
	// JournalRewindBytes is how far one of the journal's two files grows
	// before the writer switches to the other, once bbolt holds everything
	// in that one (bolt_journal.go). Default 4 MiB.
	JournalRewindBytes int64
	// ApplyInterval is the least time between two of the applier's bbolt
	// transactions, so that under load they are few and large: each costs
	// two fsyncs that the journal's own fsync would queue behind. The
	// applier does not wait when the writer needs it (MaxPendingBytes) or
	// the broker is closing. Default 10ms.
	ApplyInterval time.Duration
	// MaxPendingBytes bounds the memory of the journaled records not yet
	// applied to bbolt (held for readers; counted by their buffers'
	// capacity): past it, the writer waits for the applier. Default 64 MiB.
	MaxPendingBytes int64

	// Logger receives operational errors from background work. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock for message timestamps and retention age, for tests;
	// redelivery timing always uses the real clock. Default time.Now.
	Now func() time.Time
}

func (o BoltOptions) withDefaults() BoltOptions {
	o.DeliveryOptions = o.DeliveryOptions.withDefaults()
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.MaxUnacked <= 0 {
		o.MaxUnacked = 1024
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 100 * time.Millisecond
	}
	if o.RetentionMaxAge == 0 {
		o.RetentionMaxAge = DefaultRetentionMaxAge
	}
	if o.RetentionMaxMessages == 0 {
		o.RetentionMaxMessages = DefaultRetentionMaxMessages
	}
	if o.RetentionMaxBytes == 0 {
		o.RetentionMaxBytes = DefaultRetentionMaxBytes
	}
	if o.RetentionInterval <= 0 {
		o.RetentionInterval = time.Minute
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1 << 20
	}
	if o.MaxBatchMessages <= 0 {
		o.MaxBatchMessages = 20_000
	}
	if o.JournalRewindBytes <= 0 {
		o.JournalRewindBytes = 4 << 20
	}
	if o.ApplyInterval <= 0 {
		o.ApplyInterval = 10 * time.Millisecond
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Bolt is the default broker: a durable log per topic in a bbolt database.
//
// Publishes from concurrent callers are written by one goroutine that commits
// everything queued while the previous commit was syncing (group commit), so
// throughput grows with concurrency instead of being bound by one fsync per call.
//
// Consumer groups live in this process: subscriptions of one group share a
// per-topic cursor, so each message goes to one of them. Acknowledgements may
// arrive out of order; the committed offset only advances over a contiguous
// run of acknowledged messages, and is persisted every CommitInterval and on
// Close. After a crash or restart every message at or above the committed
// offset is delivered again, including ones acknowledged out of order.
// Messages are handed out in offset order per topic; a failed one is retried
// after its backoff while later ones proceed (at most MaxUnacked ahead), so
// only a lone subscription with Concurrency 1 and no failures sees strict order.
//
// Retention trims a topic's oldest messages beyond RetentionMaxMessages or
// older than RetentionMaxAge, but never past the lowest committed offset of
// any group that has consumed the topic (stored in bbolt or active in this
// process). A group that is no longer used therefore holds retention back
// until it is removed with DeleteGroup. A new group starts at the oldest
// retained message.
//
// With BoltOptions.JournalPath the groups go to a write-ahead journal first
// (one fdatasync each) and reach bbolt in the background (bolt_journal.go,
// bolt_apply.go).
//
// Bolt does not own the *bbolt.DB: Close stops the broker, the caller closes
// the database afterwards. Publish is only durable if the database was opened
// without NoSync.
type Bolt struct {
	db   *bolt.DB
	opts BoltOptions

	pubc    chan *publishReq
	closing chan struct{}
	closed  atomic.Bool
	bg      sync.WaitGroup // writer, flusher and retention loops

	mu        sync.RWMutex
	topics    map[string]*topicState
	topicsVer uint64        // bumped when a topic appears, so subscriptions rematch
	changed   chan struct{} // closed and replaced after every commit that adds messages
	groups    map[string]*group
	subs      map[*boltSub]struct{}

	flushMu sync.Mutex // serialises offset flushes

	commits atomic.Int64 // publish transactions, to observe group commit

	// recs recycles record buffers (*[]byte): a record is garbage once its
	// transaction has committed, and webhook ingest publishes one per
	// request (BENCHMARKS.md, "The chat turn and the ingest acknowledgement").
	recs sync.Pool

	// With a journal (nil without): see bolt_journal.go and bolt_apply.go.
	j         *journal
	jerr      error            // the journal's first write error: publishing stops (writer only)
	next      map[string]int64 // next offset per topic (writer only)
	pmu       sync.RWMutex
	pending   map[string]*pendingTopic // journaled, not yet in bbolt
	amu       sync.Mutex
	acond     *sync.Cond
	applyQ    []applyBatch
	wdone     bool          // the writer has stopped: the applier drains and stops
	applied   uint64        // journal sequence after the last frame applied to bbolt
	pbytes    int64         // capacity of the record buffers in pending
	appliedCh chan struct{} // closed and replaced after every apply
	hurry     chan struct{} // the writer waits for the applier (buffered 1)
}

// maxPooledRecord bounds the record buffers kept for reuse.
const maxPooledRecord = 64 << 10

// Commits reports how many groups of publishes have been made durable
// (journal fdatasyncs with a journal, bbolt transactions without): with
// concurrent publishers, fewer than Publish calls (group commit).
func (b *Bolt) Commits() int64 { return b.commits.Load() }

// recordBuffer returns an empty buffer of at least n bytes.
func (b *Bolt) recordBuffer(n int) []byte {
	if p, _ := b.recs.Get().(*[]byte); p != nil && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, max(n, 4<<10))
}

// topicState is the in-memory view of a topic's log bounds.
type topicState struct {
	name  string
	end   atomic.Int64 // next offset to assign; every offset below it is committed to disk
	first atomic.Int64 // oldest retained offset
	size  sizeTally    // the size bound's running count (bolt_retention.go)
}

// NewBolt starts a broker on db, creating its buckets if needed.
func NewBolt(db *bolt.DB, opts BoltOptions) (*Bolt, error) {
	if db == nil {
		return nil, fmt.Errorf("broker: new bolt: %w: nil db", ErrInvalidArgument)
	}
	b := &Bolt{
		db:      db,
		opts:    opts.withDefaults(),
		pubc:    make(chan *publishReq),
		closing: make(chan struct{}),
		topics:  make(map[string]*topicState),
		changed: make(chan struct{}),
		groups:  make(map[string]*group),
		subs:    make(map[*boltSub]struct{}),
	}
	if b.opts.JournalPath != "" {
		if db.NoSync {
			// The applier's commits are what let journal frames be
			// forgotten (the writer reuses a file once bbolt holds its
			// frames): an unsynced commit would lose acknowledged messages.
			return nil, fmt.Errorf("broker: new bolt: %w: JournalPath needs a database opened without NoSync", ErrInvalidArgument)
		}
		j, err := openJournal(b.opts.JournalPath, db, b.opts.Logger)
		if err != nil {
			return nil, fmt.Errorf("broker: new bolt: %w", err)
		}
		b.j = j
	}
	if err := b.load(); err != nil {
		if b.j != nil {
			b.j.close()
		}
		return nil, fmt.Errorf("broker: new bolt: %w", err)
	}
	b.bg.Add(3)
	if b.j != nil {
		b.startJournal()
	} else {
		go b.writeLoop(func(batch []*publishReq, _ int) error { return b.commit(batch) })
	}
	go b.flushLoop()
	go b.retentionLoop(b.opts.retentionEnabled(), b.opts.RetentionInterval)
	return b, nil
}

// load creates the buckets and reads every topic's bounds.
func (b *Bolt) load() error {
	return b.db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(groupsBucket); err != nil {
			return err
		}
		root, err := tx.CreateBucketIfNotExists(topicsBucket)
		if err != nil {
			return err
		}
		return root.ForEachBucket(func(name []byte) error {
			tb := root.Bucket(name)
			ts := &topicState{name: string(name)}
			ts.end.Store(int64(tb.Sequence()))
			ts.first.Store(ts.end.Load())
			if k, _ := tb.Cursor().First(); k != nil {
				off, ok := decodeOffset(k)
				if !ok {
					return fmt.Errorf("%w: topic %q: key of %d bytes", ErrCorrupt, name, len(k))
				}
				ts.first.Store(off)
			}
			b.topics[ts.name] = ts
			return nil
		})
	})
}

// publishReq is one Publish call queued for the writer.
type publishReq struct {
	topics []string
	recs   [][]byte
	done   chan error
}

// Publish appends msgs durably; when it returns nil every message is synced
// to disk. Messages of one call are committed together, in order. If ctx ends
// while the write is in progress Publish returns ctx's error and the messages
// may or may not have been written.
func (b *Bolt) Publish(ctx context.Context, msgs ...Message) error {
	if b.closed.Load() {
		return fmt.Errorf("broker: publish: %w", ErrClosed)
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("broker: publish: %w", err)
	}
	// Encode on the caller's goroutine: it spreads the work and means the
	// writer never touches caller-owned memory.
	ts := b.opts.Now()
	req := &publishReq{topics: make([]string, len(msgs)), recs: make([][]byte, len(msgs)), done: make(chan error, 1)}
	for i := range msgs {
		m := &msgs[i]
		if err := ValidateTopic(m.Topic); err != nil {
			return fmt.Errorf("broker: publish: %w", err)
		}
		rec := appendRecord(b.recordBuffer(encodedSize(m)), m, ts)
		if len(rec) > b.opts.MaxMessageBytes {
			return fmt.Errorf("broker: publish %s: %w: %d bytes > %d", m.Topic, ErrMessageTooLarge, len(rec), b.opts.MaxMessageBytes)
		}
		req.topics[i], req.recs[i] = m.Topic, rec
	}
	select {
	case b.pubc <- req:
	case <-b.closing:
		return fmt.Errorf("broker: publish: %w", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("broker: publish: %w", ctx.Err())
	}
	select {
	case err := <-req.done:
		if b.j != nil {
			// The applier recycles journaled records once bbolt has them.
			return err
		}
		// The transaction is over: bbolt no longer holds the records.
		for _, rec := range req.recs {
			if cap(rec) <= maxPooledRecord {
				b.recs.Put(&rec)
			}
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("broker: publish: %w", ctx.Err())
	}
}

// writeLoop is the single writer: it takes one request, then everything
// else already waiting, and commits them in one transaction (or, with a
// journal, journals them: bolt_apply.go).
func (b *Bolt) writeLoop(write func(batch []*publishReq, n int) error) {
	defer b.bg.Done()
	var batch []*publishReq
	for {
		select {
		case req := <-b.pubc:
			batch = append(batch[:0], req)
		case <-b.closing:
			return
		}
		if b.j != nil {
			// Let handlers that are already runnable reach Publish first,
			// so they join this group instead of the next: a journal fsync
			// costs ~150 µs of kernel CPU on this VM whatever its size, so
			// on busy CPUs larger groups are cheaper (BENCHMARKS.md, "One
			// fsync per acknowledgement"). With nothing else runnable it
			// returns at once: no delay on an idle server.
			runtime.Gosched()
		}
		n := len(batch[0].recs)
	drain:
		for n < b.opts.MaxBatchMessages {
			select {
			case req := <-b.pubc:
				batch = append(batch, req)
				n += len(req.recs)
			default:
				break drain
			}
		}
		err := write(batch, n)
		for _, req := range batch {
			req.done <- err
		}
		clear(batch) // drop references for the GC
	}
}

// commit writes batch in one transaction and then publishes the new log ends.
func (b *Bolt) commit(batch []*publishReq) error {
	ends := make(map[string]int64)
	err := b.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(topicsBucket)
		if root == nil {
			return errors.New("bucket broker.topics missing")
		}
		buckets := make(map[string]*bolt.Bucket)
		for _, req := range batch {
			for i, topic := range req.topics {
				tb := buckets[topic]
				if tb == nil {
					var err error
					if tb, err = root.CreateBucketIfNotExists([]byte(topic)); err != nil {
						return fmt.Errorf("topic %s: %w", topic, err)
					}
					tb.FillPercent = 1 // append-only keys: full pages waste no space
					buckets[topic] = tb
				}
				off := int64(tb.Sequence())
				if err := tb.Put(offsetKey(off), req.recs[i]); err != nil {
					return fmt.Errorf("topic %s: %w", topic, err)
				}
				if err := tb.SetSequence(uint64(off + 1)); err != nil {
					return fmt.Errorf("topic %s: %w", topic, err)
				}
				ends[topic] = off + 1
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("broker: publish: %w", err)
	}
	b.commits.Add(1)
	b.advance(ends)
	return nil
}

// advance makes committed messages visible to subscriptions and wakes them.
func (b *Bolt) advance(ends map[string]int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for topic, end := range ends {
		ts := b.topics[topic]
		if ts == nil {
			ts = &topicState{name: topic}
			b.topics[topic] = ts
			b.topicsVer++
		}
		if end > ts.end.Load() {
			ts.end.Store(end)
		}
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// Topics lists the topics that have received at least one message, sorted,
// including topics whose messages retention has since removed.
func (b *Bolt) Topics(ctx context.Context) ([]string, error) {
	if b.closed.Load() {
		return nil, fmt.Errorf("broker: topics: %w", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("broker: topics: %w", err)
	}
	b.mu.RLock()
	out := make([]string, 0, len(b.topics))
	for name, ts := range b.topics {
		if ts.end.Load() > 0 {
			out = append(out, name)
		}
	}
	b.mu.RUnlock()
	slices.Sort(out)
	return out, nil
}

// Read implements Reader.
func (b *Bolt) Read(ctx context.Context, topic string, fromOffset int64, limit int) ([]Message, error) {
	if b.closed.Load() {
		return nil, fmt.Errorf("broker: read %s: %w", topic, ErrClosed)
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("broker: read: %w", err)
	}
	if limit <= 0 || limit > maxReadLimit {
		return nil, fmt.Errorf("broker: read %s: %w: limit %d not in 1..%d", topic, ErrInvalidArgument, limit, maxReadLimit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("broker: read %s: %w", topic, err)
	}
	// Messages not yet applied to bbolt come from memory; taken first, so
	// whatever bbolt lacks of the offsets below them it held already.
	tail, tailBase, err := b.readPending(topic, max(fromOffset, 0), limit)
	if err != nil {
		return nil, fmt.Errorf("broker: read %s: %w", topic, err)
	}
	var out []Message
	err = b.db.View(func(tx *bolt.Tx) error {
		tb := topicBucket(tx, topic)
		if tb == nil {
			return nil
		}
		c := tb.Cursor()
		for k, v := c.Seek(offsetKey(max(fromOffset, 0))); k != nil && len(out) < limit; k, v = c.Next() {
			off, ok := decodeOffset(k)
			if !ok {
				return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(k))
			}
			if off >= tailBase {
				break
			}
			m, err := decodeRecord(topic, off, v)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("broker: read %s: %w", topic, err)
	}
	if n := limit - len(out); n > 0 {
		out = append(out, tail[:min(n, len(tail))]...)
	}
	return out, nil
}

// Latest implements Reader.
func (b *Bolt) Latest(ctx context.Context, topic string) (int64, error) {
	if b.closed.Load() {
		return 0, fmt.Errorf("broker: latest %s: %w", topic, ErrClosed)
	}
	if err := ValidateTopic(topic); err != nil {
		return 0, fmt.Errorf("broker: latest: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("broker: latest %s: %w", topic, err)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if ts := b.topics[topic]; ts != nil {
		return ts.end.Load(), nil
	}
	return 0, nil
}

// readMessage loads one record; found is false if retention removed it.
func (b *Bolt) readMessage(topic string, off int64) (m Message, found bool, err error) {
	if b.j != nil {
		// Journaled and not yet applied: bbolt does not have it yet. A miss
		// here means it was applied (or never journaled), so bbolt is asked.
		b.pmu.RLock()
		if pt := b.pending[topic]; pt != nil && off >= pt.base && off < pt.base+int64(len(pt.recs)) {
			m, err = decodeRecord(topic, off, pt.recs[off-pt.base])
			b.pmu.RUnlock()
			return m, err == nil, err
		}
		b.pmu.RUnlock()
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		tb := topicBucket(tx, topic)
		if tb == nil {
			return nil
		}
		v := tb.Get(offsetKey(off))
		if v == nil {
			return nil
		}
		found = true
		m, err = decodeRecord(topic, off, v)
		return err
	})
	return m, found, err
}

func topicBucket(tx *bolt.Tx, topic string) *bolt.Bucket {
	root := tx.Bucket(topicsBucket)
	if root == nil {
		return nil
	}
	return root.Bucket([]byte(topic))
}

// Close stops every subscription (waiting for in-flight handlers), the
// writer and the background loops, and persists acknowledged offsets. It
// does not close the database. Calling Close again returns nil.
func (b *Bolt) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.mu.Lock()
	subs := make([]*boltSub, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	close(b.closing)
	b.bg.Wait()
	if b.j != nil {
		// The applier has drained (or failed: the journal keeps what bbolt
		// lacks, and the next open replays it).
		if err := b.j.close(); err != nil {
			b.opts.Logger.Error("broker: closing the journal", "err", err)
		}
	}
	if err := b.flushOffsets(); err != nil {
		return fmt.Errorf("broker: close: %w", err)
	}
	return nil
}
