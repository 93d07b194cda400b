package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/store/ring"
)

// The event stream of docs/bridge-api.md ("Events"): server-sent events of
// the ring, filtered to what the principal may see.

// parseLastEventID reads the Last-Event-ID header: an integer >= 0.
func parseLastEventID(r *http.Request) (uint64, bool, error) {
	vals := r.Header.Values("Last-Event-ID")
	if len(vals) == 0 {
		return 0, false, nil
	}
	if len(vals) > 1 {
		return 0, false, errf(CodeInvalidParameter, "Last-Event-ID must be sent once")
	}
	v, err := parseUint(vals[0])
	if err != nil {
		return 0, false, errf(CodeInvalidParameter, "Last-Event-ID must be an integer >= 0")
	}
	return v, true, nil
}

const eventBatch = 256

// handleEvents streams this client's job events as server-sent events.
func (s *Service) handleEvents(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	after, resume, err := parseLastEventID(r)
	if err != nil {
		return err
	}
	if len(r.URL.RawQuery) > 0 {
		return errf(CodeInvalidParameter, "this endpoint takes no query parameters")
	}
	// An id no event has had yet is not a place in this stream (the ring
	// was reset, or the id was made up): waiting silently until ids pass it
	// would drop every event until then, so it is refused
	// (docs/bridge-api.md, Events).
	if newest := s.ring.Newest(); resume && after > newest {
		return errf(CodeInvalidParameter, "Last-Event-ID %d is newer than the newest event %d; reload state and reconnect without Last-Event-ID", after, newest)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK) // what GET would answer, without the stream
		return nil
	}
	// Subscribe before reading the backlog, so nothing falls between them;
	// frames the backlog already delivered are skipped by id.
	sub, unsubscribe := s.hub.subscribe(p)
	defer unsubscribe()
	if !resume {
		after = s.ring.Newest()
	} else if _, err := s.ring.ReadAfter(after, 1); errors.Is(err, ring.ErrExpired) {
		return errf(CodeCursorExpired, "events after %d are no longer retained (oldest is %d); reload state and reconnect without Last-Event-ID", after, s.ring.Oldest())
	} else if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	sub.lagged.Store(resume) // a resumed stream first catches up from the ring
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer s.live.add(p, cancel)()

	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n: connected\n\n"); err != nil || rc.Flush() != nil {
		return nil
	}
	st := &sseStream{s: s, w: w, rc: rc, sub: sub, after: after}
	heartbeat := time.NewTicker(s.cfg.Heartbeat.D())
	defer heartbeat.Stop()
	for {
		if sub.lagged.Load() {
			if !st.catchUp() {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case f := <-sub.ch:
			if !st.send(f) {
				return nil
			}
		case <-heartbeat.C:
			if !st.write([]byte(": ping\n\n")) {
				return nil
			}
		}
	}
}

// sseStream writes one client's frames in id order.
type sseStream struct {
	s     *Service
	w     http.ResponseWriter
	rc    *http.ResponseController
	sub   *subscriber
	after uint64
}

func (st *sseStream) write(b []byte) bool {
	_ = st.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := st.w.Write(b); err != nil {
		return false
	}
	return st.rc.Flush() == nil
}

// send writes a frame unless an earlier read already delivered it.
func (st *sseStream) send(f frame) bool {
	if f.id <= st.after || !st.sub.visible(f) {
		return true
	}
	st.after = f.id
	return st.write(f.data)
}

// catchUp reads the ring directly from the stream's cursor until it is
// current, then rejoins the hub. It reports false when the stream must end.
func (st *sseStream) catchUp() bool {
	st.sub.lagged.Store(false)
	// Drop buffered frames: the ring read below covers them.
	for len(st.sub.ch) > 0 {
		<-st.sub.ch
	}
	for {
		entries, err := st.s.ring.ReadAfter(st.after, eventBatch)
		if err != nil {
			// Further behind than the ring keeps: say so and end; the
			// client reloads and reconnects.
			st.write(fmt.Appendf(nil, "event: error\ndata: {\"code\":%q}\n\n", CodeCursorExpired))
			return false
		}
		var buf bytes.Buffer
		for _, e := range entries {
			if f, ok := formatFrame(e); ok && st.sub.visible(f) {
				buf.Write(f.data)
			}
			st.after = e.ID
		}
		if buf.Len() > 0 && !st.write(buf.Bytes()) {
			return false
		}
		if len(entries) < eventBatch {
			return true
		}
	}
}
