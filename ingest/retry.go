package ingest

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/agentbridge/bridge/store/broker"
)

// failureClass sorts publish errors into the spec's retry categories.
type failureClass int

const (
	classServer     failureClass = iota // anything else the broker reports
	classTimeout                        // an attempt ran out of time
	classConnection                     // the broker could not be reached
	classClient                         // the message itself is unacceptable
	classFatal                          // the broker is closed: retrying cannot help
)

func (c failureClass) String() string {
	switch c {
	case classTimeout:
		return "timeout"
	case classConnection:
		return "connection_error"
	case classClient:
		return "client_error"
	case classFatal:
		return "unavailable"
	default:
		return "server_error"
	}
}

func classify(err error) failureClass {
	var ne net.Error
	switch {
	case errors.Is(err, broker.ErrClosed):
		return classFatal
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return classTimeout
	case errors.Is(err, broker.ErrInvalidTopic), errors.Is(err, broker.ErrMessageTooLarge),
		errors.Is(err, broker.ErrInvalidArgument):
		return classClient
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, new(*net.OpError)):
		return classConnection
	default:
		return classServer
	}
}

// retries reports whether p retries a failure of class c.
func (p RetryPolicy) retries(c failureClass) bool {
	switch c {
	case classTimeout:
		return p.RetryOnTimeout
	case classConnection:
		return p.RetryOnConnectionError
	case classClient:
		return p.RetryOnClientError
	case classFatal:
		return false
	default:
		return p.RetryOnServerError
	}
}

// delay is the wait before retry number n (1 = first retry):
// initial * multiplier^(n-1), capped at max-delay, then spread by
// ±jitter-factor so that many failing requests do not retry in lockstep.
func (p RetryPolicy) delay(n int, rnd func() float64) time.Duration {
	d := float64(p.InitialDelay.D()) * math.Pow(p.Multiplier, float64(n-1))
	d = min(d, float64(p.MaxDelay.D()))
	if p.EnableJitter && p.JitterFactor > 0 {
		d *= 1 + p.JitterFactor*(2*rnd()-1)
	}
	return time.Duration(max(d, 0))
}

// policyFor returns provider's retry policy.
func (c RetryConfig) policyFor(provider string) RetryPolicy {
	if p, ok := c.Providers[provider]; ok {
		return p
	}
	return c.Defaults
}

// retryPublish calls publish until it succeeds, the failure is not retried
// by p, or p's attempts are used. It returns the last error and the class
// of the last failure.
func retryPublish(ctx context.Context, p RetryPolicy, sleep func(context.Context, time.Duration) error, publish func(context.Context) error) (int, error) {
	var err error
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.AttemptTimeout.D())
		err = publish(actx)
		cancel()
		if err == nil {
			return attempt, nil
		}
		if attempt >= p.MaxAttempts || !p.retries(classify(err)) || ctx.Err() != nil {
			return attempt, err
		}
		if serr := sleep(ctx, p.delay(attempt, rand.Float64)); serr != nil {
			return attempt, errors.Join(err, serr)
		}
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
