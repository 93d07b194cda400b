package ingest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentbridge/bridge/store/broker"
)

// Errors of the publication path that are not the broker's.
var (
	// errOverloaded: the batching buffer is full (back-pressure: 503).
	errOverloaded = errors.New("ingest: publication buffer is full")
	// errClosing: the service is shutting down.
	errClosing = errors.New("ingest: service is shutting down")
)

// publisher publishes durably with the configured retry, directly or
// through the batcher.
type publisher struct {
	broker broker.Publisher
	retry  RetryConfig
	sleep  func(context.Context, time.Duration) error
	batch  *batcher // nil when batching is off
}

// publish returns once msg is durable (nil) or has definitively failed.
// ctx should not be a request's: an abandoned client must not cut short a
// publication whose outcome decides between the topic and the DLQ.
func (p *publisher) publish(ctx context.Context, provider string, msg broker.Message) error {
	if p.batch != nil {
		return p.batch.submit(ctx, provider, msg)
	}
	return p.publishNow(ctx, provider, msg)
}

// publishBatch publishes msgs in one call. When that fails for a reason of
// the messages themselves (one too large, say) each is published on its own
// so one bad message cannot fail its neighbours.
func (p *publisher) publishBatch(ctx context.Context, provider string, msgs []broker.Message) []error {
	errs := make([]error, len(msgs))
	err := p.publishNow(ctx, provider, msgs...)
	if err != nil && len(msgs) > 1 && classify(err) == classClient {
		for i := range msgs {
			errs[i] = p.publishNow(ctx, provider, msgs[i])
		}
		return errs
	}
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func (p *publisher) publishNow(ctx context.Context, provider string, msgs ...broker.Message) error {
	_, err := retryPublish(ctx, p.retry.policyFor(provider), p.sleep, func(ctx context.Context) error {
		return p.broker.Publish(ctx, msgs...)
	})
	return err
}

// batcher gathers messages for up to max-wait-time or max-batch-size and
// publishes each provider's share with one Publish call. Every submitter
// still waits for its own batch to be durable.
type batcher struct {
	in      chan *batchItem
	maxSize int
	maxWait time.Duration
	// flush publishes msgs and returns one result per message.
	flush func(provider string, msgs []broker.Message) []error

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	flushes  sync.WaitGroup
	sem      chan struct{} // bounds concurrent flushes
	mu       sync.RWMutex  // submit holds it shared, close exclusively
	closed   bool
}

type batchItem struct {
	provider string
	msg      broker.Message
	done     chan error
}

const maxConcurrentFlushes = 4

func newBatcher(b Batching, flush func(provider string, msgs []broker.Message) []error) *batcher {
	bt := &batcher{
		in:      make(chan *batchItem, b.BufferSize),
		maxSize: b.MaxBatchSize,
		maxWait: b.MaxWaitTime.D(),
		flush:   flush,
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		sem:     make(chan struct{}, maxConcurrentFlushes),
	}
	go bt.loop()
	return bt
}

// submit enqueues msg without blocking (a full buffer is errOverloaded) and
// waits for its batch's result.
func (b *batcher) submit(ctx context.Context, provider string, msg broker.Message) error {
	it := &batchItem{provider: provider, msg: msg, done: make(chan error, 1)}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return errClosing
	}
	select {
	case b.in <- it:
	default:
		b.mu.RUnlock()
		return errOverloaded
	}
	b.mu.RUnlock()
	// Once queued the item is always answered (close drains the queue), so
	// waiting on done alone cannot hang; ctx is not consulted on purpose.
	return <-it.done
}

func (b *batcher) loop() {
	defer close(b.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var pending []*batchItem
	for {
		select {
		case it := <-b.in:
			if len(pending) == 0 {
				timer.Reset(b.maxWait)
			}
			pending = append(pending, it)
			if len(pending) >= b.maxSize {
				timer.Stop()
				b.dispatch(pending)
				pending = nil
			}
		case <-timer.C:
			b.dispatch(pending)
			pending = nil
		case <-b.stop:
			timer.Stop()
			// Nothing can be added any more (closed is set): drain and flush.
		drain:
			for {
				select {
				case it := <-b.in:
					pending = append(pending, it)
				default:
					break drain
				}
			}
			for len(pending) > 0 {
				n := min(len(pending), b.maxSize)
				b.dispatch(pending[:n])
				pending = pending[n:]
			}
			b.flushes.Wait()
			return
		}
	}
}

// dispatch publishes a batch in the background, grouped by provider so each
// group uses its provider's retry policy.
func (b *batcher) dispatch(items []*batchItem) {
	if len(items) == 0 {
		return
	}
	b.sem <- struct{}{}
	b.flushes.Add(1)
	go func() {
		defer func() { <-b.sem; b.flushes.Done() }()
		groups := make(map[string][]*batchItem)
		var order []string
		for _, it := range items {
			if groups[it.provider] == nil {
				order = append(order, it.provider)
			}
			groups[it.provider] = append(groups[it.provider], it)
		}
		for _, provider := range order {
			g := groups[provider]
			msgs := make([]broker.Message, len(g))
			for i, it := range g {
				msgs[i] = it.msg
			}
			errs := b.flush(provider, msgs)
			for i, it := range g {
				it.done <- errs[i]
			}
		}
	}()
}

// close flushes what is queued and waits for every batch to finish.
func (b *batcher) close() {
	b.stopOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(b.stop)
	})
	<-b.done
}
