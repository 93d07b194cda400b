package ring

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"

	"go.etcd.io/bbolt"
)

// Request states: a queued request may still be abandoned by its caller; once
// the committer claims it, the caller waits for the commit's outcome.
const (
	reqQueued int32 = iota
	reqClaimed
	reqAbandoned
)

// maxYields bounds how long the committer keeps gathering a group.
const maxYields = 4

type appendReq struct {
	payloads [][]byte
	state    atomic.Int32
	done     chan struct{} // closed by the committer after ids/err are set
	ids      []uint64
	err      error
}

// Append appends payloads as one unit (consecutive ids, same commit) and
// returns their ids. When it returns nil the entries are durable. Concurrent
// callers share commits (group commit): one committer goroutine writes every
// request queued while the previous transaction was being fsynced, so one
// fsync serves many appenders. There is no timer: a lone appender commits at
// once.
//
// If ctx is done before the committer takes the request, nothing is appended
// and ctx's error is returned. Once taken, the commit is waited for (it cannot
// be undone), so a nil error always means appended and an error means not.
// Appending no payloads is a no-op. The payload slices must not be modified
// until Append returns; the ring does not retain them afterwards.
func (r *Ring) Append(ctx context.Context, payloads ...[]byte) ([]uint64, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	for i, p := range payloads {
		if int64(len(p)) > MaxPayloadSize {
			return nil, fmt.Errorf("ring %q: append: payload %d is %d bytes, limit %d", r.name, i, len(p), int64(MaxPayloadSize))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ring %q: append: %w", r.name, err)
	}
	if r.isClosed() {
		return nil, ErrClosed
	}
	req := &appendReq{payloads: payloads, done: make(chan struct{})}
	select {
	case r.reqs <- req:
	case <-ctx.Done():
		return nil, fmt.Errorf("ring %q: append: %w", r.name, ctx.Err())
	case <-r.closing:
		return nil, ErrClosed
	}
	select {
	case <-req.done:
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return nil, fmt.Errorf("ring %q: append: %w", r.name, ctx.Err())
		}
		<-req.done
	case <-r.closing:
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return nil, ErrClosed
		}
		<-req.done
	}
	return req.ids, req.err
}

// commitLoop is the single writer of this ring. It runs until Close.
func (r *Ring) commitLoop() {
	defer close(r.done)
	batch := make([]*appendReq, 0, 64)
	for {
		select {
		case <-r.closing:
			r.failQueued()
			return
		case req := <-r.reqs:
			batch = append(batch[:0], req)
		}
		// Take everything that queued up meanwhile: that is the group.
		// Appenders woken by the previous commit may not have run yet, so
		// yield while that still brings more: it costs microseconds and
		// fills a commit that costs milliseconds.
		batch = r.drain(batch)
		for range maxYields {
			n := len(batch)
			runtime.Gosched()
			if batch = r.drain(batch); len(batch) == n || len(batch) >= maxRequestsPerCommit {
				break
			}
		}
		r.commit(batch)
		clear(batch) // drop references to payloads between commits
	}
}

// drain appends queued requests to batch without blocking.
func (r *Ring) drain(batch []*appendReq) []*appendReq {
	for len(batch) < maxRequestsPerCommit {
		select {
		case req := <-r.reqs:
			batch = append(batch, req)
		default:
			return batch
		}
	}
	return batch
}

// failQueued answers requests still in the queue at Close. Appenders racing
// with Close may enqueue later; they see r.closing and abandon themselves.
func (r *Ring) failQueued() {
	for {
		select {
		case req := <-r.reqs:
			if req.state.CompareAndSwap(reqQueued, reqClaimed) {
				req.err = ErrClosed
				close(req.done)
			}
		default:
			return
		}
	}
}

func (r *Ring) commit(batch []*appendReq) {
	live := batch[:0]
	total := 0
	for _, req := range batch {
		if req.state.CompareAndSwap(reqQueued, reqClaimed) {
			live = append(live, req)
			total += len(req.payloads)
		}
	}
	if len(live) == 0 {
		return
	}
	r.commits.Add(1)
	r.committedReqs.Add(uint64(len(live)))
	// One allocation for every id of the commit; each request gets a window.
	allIDs := make([]uint64, total)
	var first, newest uint64
	err := r.db.Update(func(tx *bbolt.Tx) error {
		b, err := r.createEntries(tx)
		if err != nil {
			return err
		}
		// Keys are appended in order: full pages split better than half ones.
		b.FillPercent = 1.0
		seq := b.Sequence()
		var key [8]byte
		i := 0
		for _, req := range live {
			for _, p := range req.payloads {
				seq++
				allIDs[i] = seq
				i++
				// Put copies the key, so one buffer serves the whole batch.
				if err := b.Put(encodeInto(key[:], seq), p); err != nil {
					return fmt.Errorf("put entry %d: %w", seq, err)
				}
			}
		}
		if err := b.SetSequence(seq); err != nil {
			return fmt.Errorf("set sequence: %w", err)
		}
		if first, err = r.trim(b); err != nil {
			return err
		}
		newest = seq
		return nil
	})
	if err != nil {
		err = fmt.Errorf("ring %q: append: %w", r.name, err)
	} else {
		r.setBounds(first, newest)
	}
	i := 0
	for _, req := range live {
		if err != nil {
			req.err = err
		} else {
			n := len(req.payloads)
			req.ids = allIDs[i : i+n : i+n]
			i += n
		}
		close(req.done)
	}
	if err == nil {
		r.notify()
	}
}

func encodeInto(dst []byte, id uint64) []byte {
	binary.BigEndian.PutUint64(dst, id)
	return dst[:8]
}
