package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestBackoff(t *testing.T) {
	o := DeliveryOptions{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{1000, time.Second},
	}
	for _, tt := range tests {
		is.New(t).Equal(o.backoff(tt.attempt), tt.want)
	}
}

func TestDeliveryDefaults(t *testing.T) {
	is := is.New(t)
	o := DeliveryOptions{}.withDefaults()
	is.Equal(o.RedeliveryTimeout, 30*time.Second)
	is.Equal(o.MinBackoff, 500*time.Millisecond)
	is.Equal(o.MaxBackoff, 30*time.Second)
	o = DeliveryOptions{MinBackoff: time.Minute, MaxBackoff: time.Second}.withDefaults()
	is.Equal(o.MaxBackoff, time.Minute) // never below the minimum
}

func TestRunHandler(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		h    Handler
		want error
	}{
		{"ack", func(context.Context, Message) error { return nil }, nil},
		{"error", func(context.Context, Message) error { return boom }, boom},
		{"panic", func(context.Context, Message) error { panic("bad") }, ErrHandlerPanic},
		{"nil pointer panic", func(context.Context, Message) error { var m map[string]int; m["x"] = 1; return nil }, ErrHandlerPanic},
		{"timeout", func(ctx context.Context, _ Message) error { <-ctx.Done(); return ctx.Err() }, ErrHandlerTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var wg sync.WaitGroup
			err := runHandler(t.Context(), tt.h, Message{}, 1, 50*time.Millisecond, &wg)
			is.True(errors.Is(err, tt.want))
			is.Equal(err == nil, tt.want == nil)
			wg.Wait()
		})
	}
}

func TestRunHandlerAbandonsButTracks(t *testing.T) {
	is := is.New(t)
	var wg sync.WaitGroup
	release := make(chan struct{})
	var done bool
	start := time.Now()
	err := runHandler(t.Context(), func(ctx context.Context, m Message) error {
		<-release // ignores ctx
		done = true
		return nil
	}, Message{}, 1, 20*time.Millisecond, &wg)
	is.True(errors.Is(err, ErrHandlerTimeout))
	// Did not wait for the handler (which waits for release, closed below);
	// 5 s is far above the 20 ms timeout and leaves room for a loaded -race run.
	is.True(time.Since(start) < 5*time.Second)
	close(release)
	wg.Wait() // the abandoned call is still awaited
	is.True(done)
}

func TestRunHandlerWaitsWhenParentCancelled(t *testing.T) {
	is := is.New(t)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	err := runHandler(ctx, func(hctx context.Context, m Message) error {
		cancel()
		<-hctx.Done()
		time.Sleep(10 * time.Millisecond) // finishing its work
		is.Equal(Attempt(hctx), 3)
		return nil
	}, Message{}, 3, time.Minute, &wg)
	is.NoErr(err) // the result counts: the message can be acknowledged
	is.Equal(Attempt(t.Context()), 0)
}
