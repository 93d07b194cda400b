package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// boltSub is one running subscription: Concurrency workers leasing messages
// from the group's shared cursors.
type boltSub struct {
	b    *Bolt
	g    *group
	pats patterns
	h    Handler

	ctx      context.Context
	cancel   context.CancelFunc
	workers  sync.WaitGroup
	handlers sync.WaitGroup // handler calls, including abandoned ones
	once     sync.Once
	err      error

	watchMu   sync.Mutex
	stopWatch func() bool // unregisters the ctx watcher
}

// Subscribe starts consuming the topics matching patterns as group; topics
// created later that match are picked up as soon as their first message is
// committed. A group new to a topic starts at its oldest retained message.
// The subscription runs until ctx is done, Close is called on it, or the
// broker is closed; handlers get a context derived from ctx.
func (b *Bolt) Subscribe(ctx context.Context, group string, pats []string, h Handler) (Subscription, error) {
	if err := ValidateGroup(group); err != nil {
		return nil, fmt.Errorf("broker: subscribe: %w", err)
	}
	ps, err := parsePatterns(pats)
	if err != nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, err)
	}
	if h == nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w: nil handler", group, ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, err)
	}
	s := &boltSub{b: b, pats: ps, h: h}
	s.ctx, s.cancel = context.WithCancel(ctx)

	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		s.cancel()
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, ErrClosed)
	}
	s.g, err = b.groupFor(group)
	if err != nil {
		b.mu.Unlock()
		s.cancel()
		return nil, fmt.Errorf("broker: subscribe %s: %w", group, err)
	}
	// Add before the subscription is visible to Close, which waits on it.
	s.workers.Add(b.opts.Concurrency)
	b.subs[s] = struct{}{}
	b.mu.Unlock()

	for range b.opts.Concurrency {
		go s.work()
	}
	// When the caller's ctx ends, release the subscription's resources too.
	stopWatch := context.AfterFunc(ctx, s.stop)
	s.watchMu.Lock()
	s.stopWatch = stopWatch
	s.watchMu.Unlock()
	return s, nil
}

// Close stops the subscription, waits for in-flight handlers and persists
// the group's acknowledged offsets. Unfinished deliveries go back to the group.
func (s *boltSub) Close() error {
	s.stop()
	return s.err
}

func (s *boltSub) stop() {
	s.once.Do(func() {
		s.cancel()
		s.workers.Wait()
		s.handlers.Wait()
		s.watchMu.Lock()
		if s.stopWatch != nil {
			s.stopWatch() // no-op when it is what called stop
		}
		s.watchMu.Unlock()
		s.b.mu.Lock()
		delete(s.b.subs, s)
		s.b.mu.Unlock()
		s.g.mu.Lock()
		s.g.subs--
		s.g.mu.Unlock()
		if err := s.b.flushOffsets(); err != nil {
			s.err = fmt.Errorf("broker: close subscription %s: %w", s.g.name, err)
		}
	})
}

// topicCache is a worker's list of matching topics, rebuilt when topics appear.
type topicCache struct {
	valid  bool
	ver    uint64
	topics []*topicState
}

// matching returns the topics s consumes and a channel closed on the next publish.
func (s *boltSub) matching(cache *topicCache) ([]*topicState, <-chan struct{}) {
	b := s.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	if !cache.valid || cache.ver != b.topicsVer {
		cache.topics = cache.topics[:0]
		for name, ts := range b.topics {
			if s.pats.match(name) {
				cache.topics = append(cache.topics, ts)
			}
		}
		slices.SortFunc(cache.topics, func(a, b *topicState) int { return strings.Compare(a.name, b.name) })
		cache.valid, cache.ver = true, b.topicsVer
	}
	return cache.topics, b.changed
}

func (s *boltSub) work() {
	defer s.workers.Done()
	var cache topicCache
	for s.ctx.Err() == nil {
		topics, published := s.matching(&cache)
		l, ok, wake, changed := s.g.lease(topics, time.Now(), s.b.opts.MaxUnacked)
		if ok {
			s.deliver(l)
			continue
		}
		s.wait(published, changed, wake)
	}
}

func (s *boltSub) deliver(l lease) {
	b, g := s.b, s.g
	m, found, err := b.readMessage(l.c.topic.name, l.off)
	switch {
	case err != nil:
		b.opts.Logger.Error("broker: reading message", "group", g.name, "topic", l.c.topic.name, "offset", l.off, "err", err)
		g.nack(l, time.Now().Add(b.opts.backoff(l.attempt)))
		return
	case !found:
		// Retention removed it before this group ever consumed it.
		g.ack(l, b.opts.MaxUnacked)
		return
	}
	err = runHandler(s.ctx, s.h, m, l.attempt, b.opts.RedeliveryTimeout, &s.handlers)
	switch {
	case err == nil:
		g.ack(l, b.opts.MaxUnacked)
	case s.ctx.Err() != nil:
		g.release(l)
	default:
		if errors.Is(err, ErrHandlerTimeout) || errors.Is(err, ErrHandlerPanic) {
			b.opts.Logger.Warn("broker: handler failed", "group", g.name, "topic", m.Topic, "offset", m.Offset, "attempt", l.attempt, "err", err)
		}
		g.nack(l, time.Now().Add(b.opts.backoff(l.attempt)))
	}
}

// wait blocks until something may have made work available: a publish, a
// change in the group, the next retry falling due, or the end of the subscription.
func (s *boltSub) wait(published, changed <-chan struct{}, wake time.Time) {
	var timer <-chan time.Time
	if !wake.IsZero() {
		t := time.NewTimer(time.Until(wake))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-s.ctx.Done():
	case <-published:
	case <-changed:
	case <-timer:
	}
}
