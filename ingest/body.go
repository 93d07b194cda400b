package ingest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
)

// Reading webhook bodies
//
// A body is read as its bytes arrive, into a buffer that starts small and
// doubles, never sized from the declared Content-Length: a client that
// declares 1 MiB and sends a byte every few seconds holds a few hundred bytes,
// not a megabyte (issue 20, item 1). Every buffer's capacity is taken from
// one budget shared by all requests (security.max-in-flight-bytes); a request
// that would exceed it is answered 503 WH-OVERLOADED with Retry-After, so
// bodies being read or handled never hold more than the budget. The daemon
// bounds how long a body may take to arrive (listen.body-read-timeout, see
// daemon/body.go); a body cut by that deadline is answered 408.

// bodyBudget counts the bytes that webhook body buffers hold, and keeps
// buffers of the sizes readAll grows through for reuse: a body whose
// request was acknowledged (its copy is durable on the broker) goes back
// to pools, so a warmed-up daemon reads bodies of up to 64 KiB without
// allocating (BENCHMARKS.md, "The chat turn and the ingest
// acknowledgement").
type bodyBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
	pools [bodyPoolClasses]sync.Pool // of *[]byte with capacity firstBodyChunk<<class
}

// bodyPoolClasses: pooled capacities are 512 B, 1 KiB, ... 64 KiB.
const bodyPoolClasses = 8

// poolClass is the pool of buffers of capacity c, if c has one.
func poolClass(c int) (int, bool) {
	for k := range bodyPoolClasses {
		if c == firstBodyChunk<<k {
			return k, true
		}
	}
	return 0, false
}

// buffer returns an empty buffer of capacity n, from its pool if it has one.
func (b *bodyBudget) buffer(n int) []byte {
	if k, ok := poolClass(n); ok {
		if p, _ := b.pools[k].Get().(*[]byte); p != nil {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, n)
}

// recycle gives buf back for reuse. Nothing may use buf afterwards.
func (b *bodyBudget) recycle(buf []byte) {
	if k, ok := poolClass(cap(buf)); ok {
		buf = buf[:0]
		b.pools[k].Put(&buf)
	}
}

// take reserves n bytes, or reports false when that would pass the limit.
func (b *bodyBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// give returns n reserved bytes.
func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse reports the reserved bytes (tests).
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// firstBodyChunk is the first buffer's size: a typical small webhook fits,
// and a slow client gets no more before it has sent that much.
const firstBodyChunk = 512

// nextBodyCap is the capacity to grow a full buffer of capacity c to.
func nextBodyCap(c int, declared, limit int64) int {
	ceiling := limit + 1 // one byte past the limit tells "too large"
	next := int64(2 * c)
	if c == 0 {
		next = firstBodyChunk
		if declared >= 0 && declared < firstBodyChunk {
			next = declared + 1 // room for the body and the EOF
		}
	}
	return int(min(next, ceiling))
}

// Errors of reading a body, besides too large.
var (
	errBodyBudget  = errors.New("ingest: body memory budget exhausted")
	errBodyTimeout = errors.New("ingest: request body not received in time")
	errBodyRead    = errors.New("ingest: request body could not be read")
	errBodyTooBig  = errors.New("ingest: request body too large")
)

// readAll reads body (at most limit bytes) into a buffer grown as bytes
// arrive, reserving each growth from the budget; held is what the caller
// must give back, whatever the outcome.
func (b *bodyBudget) readAll(body io.Reader, declared, limit int64) (buf []byte, held int64, err error) {
	for {
		if len(buf) == cap(buf) {
			next := nextBodyCap(cap(buf), declared, limit)
			if next <= cap(buf) {
				return buf, held, errBodyTooBig
			}
			grow := int64(next - cap(buf))
			if !b.take(grow) {
				return buf, held, errBodyBudget
			}
			held += grow
			nb := b.buffer(next)[:len(buf)]
			copy(nb, buf)
			b.recycle(buf)
			buf = nb
		}
		n, rerr := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, held, errBodyTooBig
		}
		var mbe *http.MaxBytesError
		switch {
		case rerr == nil:
		case errors.Is(rerr, io.EOF):
			return buf, held, nil
		case errors.As(rerr, &mbe):
			return buf, held, errBodyTooBig
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			return buf, held, errBodyTimeout
		default:
			return buf, held, fmt.Errorf("%w: %w", errBodyRead, rerr)
		}
	}
}
