package bridge

import (
	"context"
	"encoding/json"
	"sync"
	"time"
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
