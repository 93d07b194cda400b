package ingest

import (
	"sync"
	"sync/atomic"
	"time"
)

// Activity kinds shown by `bridge webhooks tail`.
const (
	KindAccepted   = "accepted"   // published and acknowledged
	KindRejected   = "rejected"   // refused at ingestion (dead-lettered unless rate limited)
	KindFailed     = "failed"     // publication or processing failed (dead-lettered)
	KindVerified   = "verified"   // processor verified the signature
	KindUnverified = "unverified" // processor of type none
	KindDuplicate  = "duplicate"  // processor saw the delivery id before
	KindReplayed   = "replayed"   // republished from the DLQ
)

// Activity is one thing that happened to a webhook, streamed live.
type Activity struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	EventID    string    `json:"event_id"`
	Provider   string    `json:"provider"`
	Topic      string    `json:"topic,omitempty"`
	DeliveryID string    `json:"delivery_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Status     int       `json:"status,omitempty"`
	Size       int       `json:"size,omitempty"`
}

// hub fans activity out to live subscribers. It never blocks the
// publisher: a subscriber that cannot keep up loses items and is told how
// many.
type hub struct {
	mu   sync.RWMutex
	subs map[*hubSub]struct{}
}

type hubSub struct {
	provider string
	ch       chan Activity
	dropped  atomic.Int64
}

const hubBuffer = 1024

func newHub() *hub { return &hub{subs: make(map[*hubSub]struct{})} }

// subscribe registers a subscriber for provider ("" for all).
func (h *hub) subscribe(provider string) *hubSub {
	s := &hubSub{provider: provider, ch: make(chan Activity, hubBuffer)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *hubSub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

func (h *hub) publish(a Activity) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs {
		if s.provider != "" && s.provider != a.Provider {
			continue
		}
		select {
		case s.ch <- a:
		default:
			s.dropped.Add(1)
		}
	}
}
