package broker

import (
	"fmt"
	"math"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Publishing through the journal (BoltOptions.JournalPath; the format and
// recovery are in bolt_journal.go). Two goroutines:
//
//   - the writer takes every waiting Publish call, appends their messages
//     to the journal, fdatasyncs it once, makes the messages visible
//     (pending, then the topics' ends) and answers the callers;
//   - the applier takes every batch the writer has journaled since its last
//     transaction and writes them to bbolt in one (fsynced) transaction,
//     then forgets them from pending.
//
// So a publisher waits for one fdatasync, not bbolt's two, and bbolt's
// commit of one group overlaps the journaling of the next.

// pendingTopic holds a topic's journaled records not yet in bbolt: offsets
// [base, base+len(recs)).
type pendingTopic struct {
	base int64
	recs [][]byte
}

// applyBatch is one journaled group for the applier.
type applyBatch struct {
	recs  []journalRec
	bytes int64
	seq   uint64 // journal sequence after its last frame
}

// maxApplyMessages bounds one bbolt transaction of the applier.
const maxApplyMessages = 50_000

func (b *Bolt) startJournal() {
	b.pending = make(map[string]*pendingTopic)
	b.next = make(map[string]int64, len(b.topics))
	for name, ts := range b.topics {
		b.next[name] = ts.end.Load()
	}
	b.acond = sync.NewCond(&b.amu)
	b.applied = b.j.seq
	b.appliedCh = make(chan struct{})
	b.hurry = make(chan struct{}, 1)
	b.bg.Add(1) // the applier, besides the three loops NewBolt counts
	go b.journalLoop()
	go b.applyLoop()
}

// journalLoop is the writer: writeLoop, journaling each batch; when it
// stops, the applier finishes what is queued and stops too.
func (b *Bolt) journalLoop() {
	defer func() {
		b.amu.Lock()
		b.wdone = true
		b.acond.Broadcast()
		b.amu.Unlock()
	}()
	b.writeLoop(b.journalBatch)
}

// journalBatch makes batch durable in the journal and visible to readers.
func (b *Bolt) journalBatch(batch []*publishReq, n int) error {
	if b.jerr != nil {
		return b.jerr
	}
	if err := b.makeRoom(); err != nil {
		return err
	}
	j := b.j
	ab := applyBatch{recs: make([]journalRec, 0, n)}
	ends := make(map[string]int64)
	for _, req := range batch {
		for i, topic := range req.topics {
			off := b.next[topic]
			rec := req.recs[i]
			j.appendFrame(topic, off, rec, len(ab.recs) == n-1)
			ab.recs = append(ab.recs, journalRec{topic: topic, off: off, rec: rec})
			// Its capacity, not its length: a pooled buffer (4-64 KiB)
			// stays pinned until it is applied, whatever it holds.
			ab.bytes += int64(cap(rec))
			b.next[topic] = off + 1
			ends[topic] = off + 1
		}
	}
	if err := j.flush(); err != nil {
		// After a failed write or fdatasync the file's state is unknown
		// (the kernel may have dropped the pages), so nothing more is
		// journaled: publishing fails until the broker is reopened, which
		// replays what did reach the disk.
		b.jerr = fmt.Errorf("broker: publish: journal: %w", err)
		b.opts.Logger.Error("broker: journal write failed; publishing stops until restart", "err", err)
		return b.jerr
	}
	ab.seq = j.seq
	b.commits.Add(1)
	b.addPending(ab.recs)
	b.advance(ends)
	b.amu.Lock()
	b.applyQ = append(b.applyQ, ab)
	b.pbytes += ab.bytes
	b.acond.Signal()
	b.amu.Unlock()
	return nil
}

// makeRoom waits while the applier is too far behind (MaxPendingBytes),
// and switches to the journal's other file when the current one has passed
// JournalRewindBytes and bbolt holds everything in the other.
func (b *Bolt) makeRoom() error {
	j := b.j
	for {
		b.amu.Lock()
		applied := b.applied
		wait := b.pbytes > b.opts.MaxPendingBytes
		ch := b.appliedCh
		b.amu.Unlock()
		if !wait {
			if other := 1 - j.cur; j.pos >= b.opts.JournalRewindBytes {
				if applied >= j.last[other] {
					j.switchFile()
				} else {
					// The switch waits for bbolt to hold the other file:
					// wake the applier rather than let the file grow
					// through its ApplyInterval pause.
					select {
					case b.hurry <- struct{}{}:
					default:
					}
				}
			}
			return nil
		}
		select {
		case b.hurry <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-b.closing:
			return fmt.Errorf("broker: publish: %w", ErrClosed)
		}
	}
}

// applyLoop is the applier: it writes journaled batches to bbolt until the
// writer has stopped and nothing is left.
func (b *Bolt) applyLoop() {
	defer b.bg.Done()
	backoff := 10 * time.Millisecond
	var recs []journalRec
	var last time.Time
	for {
		b.amu.Lock()
		for len(b.applyQ) == 0 && !b.wdone {
			b.acond.Wait()
		}
		if len(b.applyQ) == 0 {
			b.amu.Unlock()
			return
		}
		if wait := b.opts.ApplyInterval - time.Since(last); wait > 0 && !b.wdone {
			// Let more gather: fewer, larger transactions.
			b.amu.Unlock()
			b.pause(wait)
			b.amu.Lock()
		}
		k, n := 0, 0
		for k < len(b.applyQ) && (k == 0 || n+len(b.applyQ[k].recs) <= maxApplyMessages) {
			n += len(b.applyQ[k].recs)
			k++
		}
		q := b.applyQ[:k]
		b.amu.Unlock()

		recs = recs[:0]
		for _, ab := range q {
			recs = append(recs, ab.recs...)
		}
		err := b.db.Update(func(tx *bolt.Tx) error {
			_, err := applyRecords(tx, recs)
			return err
		})
		if err != nil {
			b.opts.Logger.Error("broker: applying journaled messages to bbolt", "messages", len(recs), "err", err)
			select {
			case <-b.closing:
				// The journal keeps them; the next open replays them.
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff, last = 10*time.Millisecond, time.Now()
		b.dropPending(recs)
		var bytes int64
		for _, ab := range q {
			bytes += ab.bytes
		}
		b.amu.Lock()
		b.applied = q[k-1].seq
		b.pbytes -= bytes
		clear(b.applyQ[:k])
		b.applyQ = b.applyQ[k:]
		close(b.appliedCh)
		b.appliedCh = make(chan struct{})
		b.amu.Unlock()
		// bbolt has copied the records and readers no longer see them in
		// pending (they decode under pmu): the buffers can be reused.
		for _, r := range recs {
			if rec := r.rec; cap(rec) <= maxPooledRecord {
				b.recs.Put(&rec)
			}
		}
		clear(recs)
	}
}

// pause waits for d, less if the writer is waiting for the applier or the
// broker is closing.
func (b *Bolt) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.hurry:
	case <-b.closing:
	}
}

// addPending makes journaled records readable before bbolt has them.
func (b *Bolt) addPending(recs []journalRec) {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	for _, r := range recs {
		pt := b.pending[r.topic]
		if pt == nil {
			pt = &pendingTopic{}
			b.pending[r.topic] = pt
		}
		if len(pt.recs) == 0 {
			pt.base = r.off
		}
		pt.recs = append(pt.recs, r.rec)
	}
}

// dropPending forgets records bbolt now holds: the oldest of their topics.
func (b *Bolt) dropPending(recs []journalRec) {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	for i := 0; i < len(recs); {
		topic, n := recs[i].topic, 0
		for i < len(recs) && recs[i].topic == topic {
			i++
			n++
		}
		pt := b.pending[topic]
		if pt == nil {
			continue
		}
		n = min(n, len(pt.recs))
		clear(pt.recs[:n])
		pt.recs, pt.base = pt.recs[n:], pt.base+int64(n)
		if len(pt.recs) == 0 {
			delete(b.pending, topic)
		}
	}
}

// readPending decodes up to limit pending messages of topic from offset
// from on, and returns the lowest pending offset (math.MaxInt64 if none):
// every offset below it was in bbolt when it looked.
func (b *Bolt) readPending(topic string, from int64, limit int) ([]Message, int64, error) {
	if b.j == nil {
		return nil, math.MaxInt64, nil
	}
	b.pmu.RLock()
	defer b.pmu.RUnlock()
	pt := b.pending[topic]
	if pt == nil || len(pt.recs) == 0 {
		return nil, math.MaxInt64, nil
	}
	var out []Message
	for off := max(from, pt.base); off < pt.base+int64(len(pt.recs)) && len(out) < limit; off++ {
		m, err := decodeRecord(topic, off, pt.recs[off-pt.base])
		if err != nil {
			return nil, 0, err
		}
		out = append(out, m)
	}
	return out, pt.base, nil
}
