package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/bridge/store/ring"
)

// hub reads each new ring entry once, formats its SSE frame once and hands it
// to every stream that may see it. A stream whose buffer is full is marked
// lagging and catches up by reading the ring itself, so a slow consumer never
// delays the others or the jobs.
type hub struct {
	ring *ring.Ring

	mu     sync.RWMutex
	byUser map[string]map[*subscriber]struct{}
	all    map[*subscriber]struct{} // owner streams see every client
	cursor atomic.Uint64            // newest id the hub has dispatched
}

// frame is one formatted SSE event.
type frame struct {
	id     uint64
	client string
	data   []byte // "id: ...\nevent: ...\ndata: ...\n\n"
}

type subscriber struct {
	client string
	owner  bool
	ch     chan frame
	lagged atomic.Bool
}

const subscriberBuffer = 1024

func newHub(r *ring.Ring) *hub {
	h := &hub{ring: r, byUser: map[string]map[*subscriber]struct{}{}, all: map[*subscriber]struct{}{}}
	h.cursor.Store(r.Newest())
	return h
}

// formatFrame renders a ring entry as an SSE event; ok is false for a
// malformed entry.
func formatFrame(e ring.Entry) (frame, bool) {
	client, body, ok := bytes.Cut(e.Data, []byte{0})
	if !ok {
		return frame{}, false
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &head)
	return frame{id: e.ID, client: string(client), data: fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, head.Type, body)}, true
}

func (h *hub) run(ctx context.Context) {
	for {
		notify := h.ring.Notify()
		entries, err := h.ring.ReadAfter(h.cursor.Load(), 512)
		if err != nil {
			// The hub itself fell behind the ring's capacity: skip ahead;
			// streams notice the gap and catch up (or expire) on their own.
			h.markAllLagged()
			h.cursor.Store(h.ring.Newest())
			continue
		}
		for _, e := range entries {
			if f, ok := formatFrame(e); ok {
				h.dispatch(f)
			}
			h.cursor.Store(e.ID)
		}
		if len(entries) == 512 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-notify:
		}
	}
}

func (h *hub) dispatch(f frame) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	send := func(s *subscriber) {
		if s.lagged.Load() {
			return
		}
		select {
		case s.ch <- f:
		default:
			s.lagged.Store(true)
		}
	}
	for s := range h.byUser[f.client] {
		send(s)
	}
	for s := range h.all {
		send(s)
	}
}

func (h *hub) markAllLagged() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, m := range h.byUser {
		for s := range m {
			s.lagged.Store(true)
		}
	}
	for s := range h.all {
		s.lagged.Store(true)
	}
}

func (h *hub) subscribe(p Principal) (*subscriber, func()) {
	s := &subscriber{client: p.Client, owner: p.Owner, ch: make(chan frame, subscriberBuffer)}
	h.mu.Lock()
	if s.owner {
		h.all[s] = struct{}{}
	} else {
		if h.byUser[s.client] == nil {
			h.byUser[s.client] = map[*subscriber]struct{}{}
		}
		h.byUser[s.client][s] = struct{}{}
	}
	h.mu.Unlock()
	return s, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.all, s)
		delete(h.byUser[s.client], s)
		if len(h.byUser[s.client]) == 0 {
			delete(h.byUser, s.client)
		}
	}
}

// visible reports whether a frame belongs to the subscriber.
func (s *subscriber) visible(f frame) bool { return s.owner || f.client == s.client }
