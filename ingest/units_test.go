package ingest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/store/broker"
)

func TestCompressionRoundTripAndMinSize(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"GZIP", "ZSTD", "LZ4"} {
		for _, level := range []int{1, 6, 9} {
			t.Run(fmt.Sprintf("%s-%d", alg, level), func(t *testing.T) {
				is := is.New(t)
				c, err := newCompressor(Compression{Enabled: true, MinSize: 1024, Algorithm: alg, Level: level})
				is.NoErr(err)
				defer c.Close()
				small := bytes.Repeat([]byte("a"), 1023)
				out, enc, err := c.compress(small)
				is.NoErr(err)
				is.Equal(enc, "") // under min-size: as is
				is.Equal(out, small)
				big := bytes.Repeat([]byte("a"), 1024)
				out, enc, err = c.compress(big)
				is.NoErr(err)
				is.True(enc != "")
				is.True(len(out) < len(big))
				back, err := c.decompress(out, enc)
				is.NoErr(err)
				is.Equal(back, big)
				// Incompressible data is published as is.
				rnd := make([]byte, 4096)
				_, _ = rand.Read(rnd)
				out, enc, err = c.compress(rnd)
				is.NoErr(err)
				is.Equal(enc, "")
				is.Equal(out, rnd)
			})
		}
	}
	is := is.New(t)
	c, err := newCompressor(Compression{Enabled: false, Algorithm: "GZIP", Level: 6})
	is.NoErr(err)
	defer c.Close()
	out, enc, _ := c.compress(bytes.Repeat([]byte("a"), 1<<16))
	is.Equal(enc, "")
	is.Equal(len(out), 1<<16)
	_, err = c.decompress([]byte("not gzip"), encodingGzip)
	is.True(err != nil)
	_, err = c.decompress([]byte("x"), "br")
	is.True(err != nil)
}

func TestCompressionConcurrent(t *testing.T) {
	t.Parallel()
	c, err := newCompressor(Compression{Enabled: true, MinSize: 1, Algorithm: "ZSTD", Level: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := bytes.Repeat([]byte{byte('a' + i)}, 5000)
			out, enc, err := c.compress(p)
			if err != nil {
				t.Error(err)
				return
			}
			back, err := c.decompress(out, enc)
			if err != nil || !bytes.Equal(back, p) {
				t.Errorf("round trip failed: %v", err)
			}
		}()
	}
	wg.Wait()
}

func policy() RetryPolicy {
	return DefaultConfig().Retry.Defaults
}

func TestRetryDelayWithJitter(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p := policy()
	p.EnableJitter = false
	is.Equal(p.delay(1, nil), time.Second)
	is.Equal(p.delay(2, nil), 2*time.Second)
	is.Equal(p.delay(5, nil), 16*time.Second)
	is.Equal(p.delay(6, nil), 30*time.Second) // capped at max-delay
	p.EnableJitter = true
	is.Equal(p.delay(2, func() float64 { return 0 }), time.Second)     // -50%
	is.Equal(p.delay(2, func() float64 { return 1 }), 3*time.Second)   // +50%
	is.Equal(p.delay(2, func() float64 { return 0.5 }), 2*time.Second) // centre
	is.Equal(p.delay(9, func() float64 { return 1 }), 45*time.Second)  // jitter applies after the cap
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]failureClass{
		fmt.Errorf("x: %w", broker.ErrClosed):             classFatal,
		context.DeadlineExceeded:                          classTimeout,
		os.ErrDeadlineExceeded:                            classTimeout,
		fmt.Errorf("x: %w", broker.ErrMessageTooLarge):    classClient,
		fmt.Errorf("x: %w", broker.ErrInvalidTopic):       classClient,
		syscall.ECONNREFUSED:                              classConnection,
		&net.OpError{Op: "dial", Err: errors.New("boom")}: classConnection,
		errors.New("disk full"):                           classServer,
	} {
		if got := classify(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

func TestRetryPublishPolicies(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	failing := func(err error, n int) (func(context.Context) error, *int) {
		calls := 0
		return func(context.Context) error {
			calls++
			if calls <= n {
				return err
			}
			return nil
		}, &calls
	}
	p := policy()
	p.EnableJitter = false

	fn, calls := failing(errors.New("server"), 2)
	attempts, err := retryPublish(context.Background(), p, sleep, fn)
	is.NoErr(err)
	is.Equal(attempts, 3)
	is.Equal(*calls, 3)
	is.Equal(slept, []time.Duration{time.Second, 2 * time.Second})

	fn, calls = failing(errors.New("server"), 3) // one more than max-attempts allows
	_, err = retryPublish(context.Background(), p, sleep, fn)
	is.True(err != nil)
	is.Equal(*calls, 3)

	for _, tc := range []struct {
		name  string
		err   error
		setup func(*RetryPolicy)
		calls int
	}{
		{"client not retried", broker.ErrMessageTooLarge, func(*RetryPolicy) {}, 1},
		{"client retried when enabled", broker.ErrMessageTooLarge, func(p *RetryPolicy) { p.RetryOnClientError = true }, 2},
		{"timeout off", context.DeadlineExceeded, func(p *RetryPolicy) { p.RetryOnTimeout = false }, 1},
		{"connection off", syscall.ECONNRESET, func(p *RetryPolicy) { p.RetryOnConnectionError = false }, 1},
		{"server off", errors.New("x"), func(p *RetryPolicy) { p.RetryOnServerError = false }, 1},
		{"closed never", broker.ErrClosed, func(p *RetryPolicy) {}, 1},
	} {
		pp := p
		tc.setup(&pp)
		fn, calls := failing(tc.err, 1)
		_, _ = retryPublish(context.Background(), pp, sleep, fn)
		if *calls != tc.calls {
			t.Errorf("%s: %d calls, want %d", tc.name, *calls, tc.calls)
		}
	}

	// Each attempt is bounded by attempt-timeout.
	p.AttemptTimeout = config.Duration(10 * time.Millisecond)
	p.MaxAttempts = 2
	n := 0
	_, err = retryPublish(context.Background(), p, sleep, func(ctx context.Context) error {
		n++
		<-ctx.Done()
		return ctx.Err()
	})
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.Equal(n, 2)
}

func TestBatcherGroupsAndWaits(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var mu sync.Mutex
	var batches [][]string
	flush := func(provider string, msgs []broker.Message) []error {
		mu.Lock()
		keys := []string{provider}
		for _, m := range msgs {
			keys = append(keys, m.Key)
		}
		batches = append(batches, keys)
		mu.Unlock()
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			if m.Key == "bad" {
				errs[i] = errors.New("bad message")
			}
		}
		return errs
	}
	// A full batch flushes at once, long before max-wait-time.
	b := newBatcher(Batching{MaxBatchSize: 3, MaxWaitTime: config.Duration(time.Minute), BufferSize: 100}, flush)
	var wg sync.WaitGroup
	results := make([]error, 3)
	start := time.Now()
	for i, key := range []string{"a", "bad", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = b.submit(context.Background(), "p", broker.Message{Key: key})
		}()
	}
	wg.Wait()
	is.True(time.Since(start) < 30*time.Second)
	is.NoErr(results[0])
	is.True(results[1] != nil) // each message gets its own result
	is.NoErr(results[2])
	b.close()
	is.Equal(b.submit(context.Background(), "q", broker.Message{}), errClosing)
	mu.Lock()
	is.Equal(len(batches), 1)
	is.Equal(len(batches[0]), 4) // provider + 3 keys
	mu.Unlock()

	// A lone message waits max-wait-time.
	b = newBatcher(Batching{MaxBatchSize: 3, MaxWaitTime: config.Duration(50 * time.Millisecond), BufferSize: 100}, flush)
	defer b.close()
	start = time.Now()
	is.NoErr(b.submit(context.Background(), "q", broker.Message{Key: "z"}))
	is.True(time.Since(start) >= 50*time.Millisecond)
}

func TestBatcherBufferFull(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	// Build the batcher without its loop so the buffer stays full.
	b := &batcher{
		in: make(chan *batchItem, 1), maxSize: 1, maxWait: time.Millisecond,
		flush: func(_ string, msgs []broker.Message) []error { return make([]error, len(msgs)) },
		stop:  make(chan struct{}), done: make(chan struct{}), sem: make(chan struct{}, maxConcurrentFlushes),
	}
	queued := &batchItem{provider: "p", done: make(chan error, 1)}
	b.in <- queued
	is.Equal(b.submit(context.Background(), "p", broker.Message{}), errOverloaded) // never blocks
	go b.loop()
	b.close() // flushes what was queued
	is.NoErr(<-queued.done)
	is.Equal(b.submit(context.Background(), "p", broker.Message{}), errClosing)
}

func TestBatchingEndToEnd(t *testing.T) {
	t.Parallel()
	var fb *flakyBroker
	h := newHarness(t, harnessOpt{
		env:  map[string]string{"PLATFORM_WEBHOOKS_BATCHING_ENABLED": "true", "PLATFORM_WEBHOOKS_BATCHING_MAX_WAIT_TIME": "50ms", "PLATFORM_WEBHOOKS_BATCHING_MAX_BATCH_SIZE": "8"},
		wrap: func(b brokerT) brokerT { fb = &flakyBroker{Broker: b}; return fb },
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readAck(t, h.post("github", []byte(`{}`), "Content-Type", jsonCT))
		}()
	}
	wg.Wait()
	if n := len(h.read("github")); n != 8 {
		t.Fatalf("%d published", n)
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.calls >= 8 {
		t.Fatalf("%d publish calls for 8 events: not batched (%v)", fb.calls, fb.sizes)
	}
}

func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	now := time.Unix(1000, 0)
	l := newRateLimiter(RateLimitConfig{Enabled: true, LimitForPeriod: 2, LimitRefreshPeriod: config.Duration(time.Second)}, func() time.Time { return now })
	ok, _ := l.allow("a")
	is.True(ok)
	ok, _ = l.allow("a")
	is.True(ok)
	ok, wait := l.allow("a")
	is.True(!ok)
	is.Equal(wait, 500*time.Millisecond)
	is.Equal(retryAfterSeconds(wait), 1)
	ok, _ = l.allow("b") // separate bucket
	is.True(ok)
	now = now.Add(500 * time.Millisecond)
	ok, _ = l.allow("a")
	is.True(ok)
	// The map is bounded: past maxLimiters names share the overflow bucket.
	for i := range maxLimiters + 10 {
		l.limiter(fmt.Sprint("p", i))
	}
	is.True(len(l.limiters) <= maxLimiters+1)
	l2 := newRateLimiter(RateLimitConfig{Enabled: false}, time.Now)
	ok, _ = l2.allow("x")
	is.True(ok)
}

func TestSourceAddress(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f, err := newSourceFilter(Security{EnableIPWhitelist: true, TrustedProxies: []string{"127.0.0.1", "10.0.0.0/8"}},
		map[string][]string{"github": {"192.30.252.0/22", "2001:db8::1"}})
	is.NoErr(err)
	req := func(remote string, xff ...string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.RemoteAddr = remote
		for _, v := range xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		return r
	}
	is.Equal(f.source(req("192.30.252.1:5000")), netip.MustParseAddr("192.30.252.1"))
	is.Equal(f.source(req("[::ffff:192.30.252.1]:5000")), netip.MustParseAddr("192.30.252.1"))
	// Through trusted proxies: the right-most untrusted hop.
	is.Equal(f.source(req("127.0.0.1:1", "6.6.6.6, 192.30.252.7", "10.1.1.1")), netip.MustParseAddr("192.30.252.7"))
	// An untrusted peer's X-Forwarded-For is ignored.
	is.Equal(f.source(req("8.8.8.8:1", "192.30.252.7")), netip.MustParseAddr("8.8.8.8"))
	// A malformed chain stops at the peer.
	is.Equal(f.source(req("127.0.0.1:1", "junk")), netip.MustParseAddr("127.0.0.1"))
	is.True(f.allowed("github", netip.MustParseAddr("192.30.255.255")))
	is.True(!f.allowed("github", netip.MustParseAddr("192.31.0.0")))
	is.True(f.allowed("github", netip.MustParseAddr("2001:db8::1")))
	is.True(!f.allowed("github", netip.MustParseAddr("2001:db8::2")))
	is.True(!f.allowed("stripe", netip.MustParseAddr("192.30.252.1")))
	is.True(!f.allowed("github", netip.Addr{}))
}

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	env := &Envelope{ID: "01", Provider: "github", ReceivedAt: time.Unix(1, 5).UTC(), ContentType: "application/json",
		Encoding: encodingGzip, Size: 10, Payload: []byte("xyz"), Header: http.Header{"X-Hub-Signature-256": {"sha256=1"}, "X-Multi": {"a", "b"}},
		Meta: Metadata{UserAgent: "ua", SourceIP: "1.2.3.4", RequestID: "r", Method: "POST", URI: "/u", Host: "h"}, Replay: 2}
	m := env.Message("t")
	back, err := ParseEnvelope(m)
	is.NoErr(err)
	is.Equal(back.ID, env.ID)
	is.True(back.ReceivedAt.Equal(env.ReceivedAt))
	is.Equal(back.Meta, env.Meta)
	is.Equal(back.Header.Get("X-Multi"), "a, b")
	is.Equal(back.Replay, 2)
	is.Equal(back.Encoding, encodingGzip)
	is.Equal(back.Size, 10)
	delete(m.Headers, hTime)
	_, err = ParseEnvelope(m)
	is.True(errors.Is(err, ErrNotEnvelope))
	_, err = ParseEnvelope(broker.Message{})
	is.True(errors.Is(err, ErrNotEnvelope))
	is.Equal(clip("héllo", 2), "h")
	is.Equal(clip("a\xffb", 10), "a\uFFFDb")
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add("1.0", EventType, "id", "github", "2026-01-01T00:00:00Z", "3", "http-x-a")
	f.Fuzz(func(t *testing.T, spec, typ, id, provider, tm, size, extra string) {
		m := broker.Message{Headers: map[string]string{hSpecVersion: spec, hType: typ, hID: id, hProvider: provider, hTime: tm, hDataSize: size, extra: "v"}}
		e, err := ParseEnvelope(m)
		if err != nil {
			return
		}
		if e.ID == "" || e.Provider == "" || e.Size < 0 {
			t.Fatalf("accepted %+v", e)
		}
	})
}
