package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DeliveryOptions tune redelivery; both implementations embed them.
type DeliveryOptions struct {
	// RedeliveryTimeout bounds one handler call. When it passes the handler's
	// context is cancelled and the message is delivered again even if the
	// handler has not returned. Default 30s.
	RedeliveryTimeout time.Duration
	// MinBackoff is the wait before the first redelivery of a failed message;
	// it doubles per attempt up to MaxBackoff. Defaults 500ms and 30s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

func (o DeliveryOptions) withDefaults() DeliveryOptions {
	if o.RedeliveryTimeout <= 0 {
		o.RedeliveryTimeout = 30 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	return o
}

// backoff returns the wait before redelivering a message that has failed
// attempt times (attempt >= 1).
func (o DeliveryOptions) backoff(attempt int) time.Duration {
	d := o.MinBackoff
	for i := 1; i < attempt && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

type attemptKey struct{}

// Attempt returns which delivery of the current message this is (1 for the
// first) when called with the context passed to a Handler, and 0 otherwise.
// Handlers use it to give up on poison messages, e.g. by publishing them to a
// dead-letter topic and returning nil. The bolt broker counts attempts in memory
// (they restart at 1 after a restart); the Kafka broker counts per subscription.
func Attempt(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}

// runHandler calls h with a deadline of timeout. If the handler has not
// returned by then it is abandoned (its context is cancelled) and
// ErrHandlerTimeout is returned so the caller can redeliver; the abandoned call
// is still tracked by running so Close can wait for it. When ctx itself ends
// (the subscription is closing) runHandler waits for the handler instead, so a
// handler that finishes its work still gets its message acknowledged.
func runHandler(ctx context.Context, h Handler, m Message, attempt int, timeout time.Duration, running *sync.WaitGroup) error {
	hctx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, attempt), timeout)
	done := make(chan error, 1)
	running.Add(1)
	go func() {
		defer running.Done()
		defer cancel()
		done <- callHandler(hctx, h, m)
	}()
	select {
	case err := <-done:
		return timedOut(ctx, hctx, err, timeout)
	case <-hctx.Done():
		if ctx.Err() != nil {
			return <-done
		}
		select {
		case err := <-done:
			return timedOut(ctx, hctx, err, timeout)
		default:
			return fmt.Errorf("%w after %s", ErrHandlerTimeout, timeout)
		}
	}
}

// timedOut marks a handler failure caused by the redelivery timeout (e.g. the
// handler returned its context's error) as ErrHandlerTimeout.
func timedOut(ctx, hctx context.Context, err error, timeout time.Duration) error {
	if err != nil && ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %s: %w", ErrHandlerTimeout, timeout, err)
	}
	return err
}

// callHandler turns a panic into an error: one bad message must not crash the
// daemon, and it is redelivered like any other failure.
func callHandler(ctx context.Context, h Handler, m Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrHandlerPanic, r)
		}
	}()
	return h(ctx, m)
}
