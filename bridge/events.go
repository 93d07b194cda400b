package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/store/ring"
)

// Event kinds on GET /v1/bridge/events (the SSE `event:` field):
//
//	job.created      data: Job
//	job.updated      data: Job (every state change, and a message that re-queues it)
//	message.created  data: Message (a user message, or the agent's final answer of a turn)
//	agent.message    data: {text}: assistant text as the agent produces it
//	agent.reasoning  data: {text}
//	tool.started     data: {seq, name, files}
//	tool.finished    data: {seq, name, status}
//
// Each event's `data` is the JSON envelope {type, jobId, time, data}; its SSE
// `id` is the ring's monotonic id, usable as Last-Event-ID.
type event struct {
	Client string    `json:"-"`
	JobID  string    `json:"jobId"`
	Type   string    `json:"type"`
	Time   time.Time `json:"time"`
	Data   any       `json:"data"`
}

// publisher appends committed events to the ring in the order they were
// committed. Requests do not wait for the ring's fsync: the job is already
// durable, and the ring's own group commit follows within milliseconds.
type publisher struct {
	s      *Service
	mu     sync.Mutex
	queue  []event
	wake   chan struct{}
	closed chan struct{}
	done   chan struct{}
}

func newPublisher(s *Service) *publisher {
	return &publisher{s: s, wake: make(chan struct{}, 1), closed: make(chan struct{}), done: make(chan struct{})}
}

// enqueue never blocks: it runs on the database writer.
func (p *publisher) enqueue(evs []event) {
	if len(evs) == 0 {
		return
	}
	now := p.s.now().UTC()
	p.mu.Lock()
	for _, e := range evs {
		e.Time = now
		p.queue = append(p.queue, e)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *publisher) loop() {
	defer close(p.done)
	for {
		select {
		case <-p.wake:
		case <-p.closed:
			p.flush() // what was committed before shutdown is kept
			return
		}
		p.flush()
	}
}

func (p *publisher) flush() {
	for {
		p.mu.Lock()
		batch := p.queue
		p.queue = nil
		p.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		payloads := make([][]byte, 0, len(batch))
		for _, e := range batch {
			body, err := json.Marshal(e)
			if err != nil {
				p.s.log.Error("encode event", "type", e.Type, "err", err)
				continue
			}
			// The client id and a NUL lead the payload so streams can
			// filter without decoding JSON.
			b := make([]byte, 0, len(e.Client)+1+len(body))
			b = append(append(append(b, e.Client...), 0), body...)
			payloads = append(payloads, b)
		}
		if _, err := p.s.ring.Append(context.Background(), payloads...); err != nil {
			p.s.log.Error("append events", "count", len(payloads), "err", err)
		}
	}
}

func (p *publisher) close() {
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	<-p.done
}

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

// parseUint accepts only plain decimal digits (no sign, no spaces).
func parseUint(s string) (uint64, error) {
	if s == "" || len(s) > 19 {
		return 0, errors.New("bad integer")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("bad integer")
		}
	}
	return strconv.ParseUint(s, 10, 64)
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
	if !resume {
		after = s.ring.Newest()
	} else if _, err := s.ring.ReadAfter(after, 1); errors.Is(err, ring.ErrExpired) {
		return errf(CodeCursorExpired, "events after %d are no longer retained (oldest is %d); reload state and reconnect without Last-Event-ID", after, s.ring.Oldest())
	} else if err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer s.live.add(p.Client, cancel)()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n: connected\n\n"); err != nil {
		return nil
	}
	if rc.Flush() != nil {
		return nil
	}
	heartbeat := time.NewTicker(s.cfg.Heartbeat.D())
	defer heartbeat.Stop()
	recheck := time.NewTicker(500 * time.Millisecond)
	defer recheck.Stop()
	var buf bytes.Buffer
	for {
		notify := s.ring.Notify()
		entries, err := s.ring.ReadAfter(after, eventBatch)
		if err != nil {
			// This stream fell further behind than the ring keeps: say so
			// and end it; the client reloads and reconnects.
			fmt.Fprintf(w, "event: error\ndata: {\"code\":%q}\n\n", CodeCursorExpired)
			rc.Flush()
			return nil
		}
		buf.Reset()
		for _, e := range entries {
			after = e.ID
			client, body, ok := bytes.Cut(e.Data, []byte{0})
			if !ok || (!p.Owner && string(client) != p.Client) {
				continue
			}
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(body, &head)
			fmt.Fprintf(&buf, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, head.Type, body)
		}
		if buf.Len() > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := w.Write(buf.Bytes()); err != nil {
				return nil
			}
			if rc.Flush() != nil {
				return nil
			}
		}
		if len(entries) == eventBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-notify:
		case <-heartbeat.C:
			_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-recheck.C:
			// Covers revocations made directly in the database while the
			// daemon runs; API revocations close streams at once.
			if !s.stillValid(ctx, p) {
				return nil
			}
		}
	}
}
