package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// factory prepares empty storage for one test and returns open, which starts
// a broker on it. open may be called again once the previous broker is
// closed: that is a restart (bolt reopens the file, Kafka connects a new client).
type factory func(t *testing.T) (open func() Broker)

// Timing shared by both implementations' test options.
const (
	// testRedelivery is short enough to keep the timeout tests quick, and
	// long enough that a trivial handler starved of CPU (-race, a loaded
	// 2-core machine) is not mistaken for a hung one and delivered twice.
	testRedelivery = 1500 * time.Millisecond
	testMinBackoff = 20 * time.Millisecond
	testMaxBackoff = 100 * time.Millisecond
	// waitLong bounds waits for things that must happen; they normally take
	// milliseconds, the margin absorbs -race on a loaded 2-core machine.
	waitLong = 15 * time.Second
	// quiet is how long a test watches for something that must not happen.
	quiet = 400 * time.Millisecond
)

// testContract runs the behaviour every Broker must have.
func testContract(t *testing.T, newEnv factory) {
	tests := []struct {
		name string
		run  func(t *testing.T, open func() Broker)
	}{
		{"PublishConsume", contractPublishConsume},
		{"ReadLatest", contractReadLatest},
		{"Validation", contractValidation},
		{"PatternsAndLateTopics", contractPatterns},
		{"GroupIsolation", contractGroupIsolation},
		{"SharedGroup", contractSharedGroup},
		{"FailureRedelivers", contractFailureRedelivers},
		{"AckedNotRedelivered", contractAckedNotRedelivered},
		{"RestartRedeliversUnacked", contractRestartRedelivers},
		{"ConcurrentPublishers", contractConcurrentPublishers},
		{"ContextCancellation", contractContextCancellation},
		{"CloseWaitsForHandlers", contractCloseWaits},
		{"Close", contractClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newEnv(t))
		})
	}
}

// recorder collects deliveries; its handler acks unless fail says otherwise.
type recorder struct {
	mu    sync.Mutex
	got   []Message
	tries map[string]int // deliveries per value
	fail  func(ctx context.Context, m Message) error
	news  chan struct{}
}

func newRecorder(fail func(ctx context.Context, m Message) error) *recorder {
	return &recorder{tries: make(map[string]int), fail: fail, news: make(chan struct{}, 1)}
}

func (r *recorder) handle(ctx context.Context, m Message) error {
	r.mu.Lock()
	r.got = append(r.got, m)
	r.tries[string(m.Value)]++
	r.mu.Unlock()
	select {
	case r.news <- struct{}{}:
	default:
	}
	if r.fail != nil {
		return r.fail(ctx, m)
	}
	return nil
}

func (r *recorder) messages() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *recorder) count(value string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries[value]
}

// values returns how often each value was delivered.
func (r *recorder) values() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.tries)
}

// waitUntil polls cond until it holds or waitLong passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitValues waits until every value in want was delivered at least once.
func (r *recorder) waitValues(t *testing.T, want ...string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("deliveries of %v", want), func() bool {
		got := r.values()
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
}

func msgs(topic string, values ...string) []Message {
	out := make([]Message, len(values))
	for i, v := range values {
		out[i] = Message{Topic: topic, Value: []byte(v)}
	}
	return out
}

func subscribe(t *testing.T, b Broker, group string, pats []string, h Handler) Subscription {
	t.Helper()
	s, err := b.Subscribe(t.Context(), group, pats, h)
	if err != nil {
		t.Fatalf("subscribe %s %v: %v", group, pats, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func contractPublishConsume(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	ctx := t.Context()
	in := []Message{
		{Topic: "orders", Key: "k1", Headers: map[string]string{"h": "1", "trace": "abc"}, Value: []byte("first")},
		{Topic: "orders", Value: []byte("second")},
		{Topic: "orders", Key: "k3", Value: []byte("third")},
	}
	before := time.Now().Add(-time.Second)
	is.NoErr(b.Publish(ctx, in...))

	r := newRecorder(nil)
	subscribe(t, b, "g", []string{"orders"}, r.handle)
	r.waitValues(t, "first", "second", "third")
	got := r.messages()
	is.Equal(len(got), 3)
	for i, m := range got {
		is.Equal(m.Topic, "orders")
		is.Equal(m.Offset, int64(i))                   // offsets start at 0, in order
		is.Equal(string(m.Value), string(in[i].Value)) // same payload
		is.Equal(m.Key, in[i].Key)                     // key kept
		is.True(m.Timestamp.After(before))             // broker stamps the time
		is.True(m.Timestamp.Before(time.Now().Add(time.Second)))
	}
	is.Equal(got[0].Headers, map[string]string{"h": "1", "trace": "abc"})
	is.Equal(len(got[1].Headers), 0)

	topics, err := b.Topics(ctx)
	is.NoErr(err)
	is.Equal(topics, []string{"orders"})
}

func contractReadLatest(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	rd, ok := b.(Reader)
	is.True(ok) // every implementation reads without a group
	ctx := t.Context()

	n, err := rd.Latest(ctx, "log")
	is.NoErr(err)
	is.Equal(n, int64(0)) // unknown topic
	got, err := rd.Read(ctx, "log", 0, 10)
	is.NoErr(err)
	is.Equal(len(got), 0)

	is.NoErr(b.Publish(ctx, msgs("log", "a", "b", "c", "d", "e")...))
	n, err = rd.Latest(ctx, "log")
	is.NoErr(err)
	is.Equal(n, int64(5))

	tests := []struct {
		from  int64
		limit int
		want  []string
	}{
		{0, 10, []string{"a", "b", "c", "d", "e"}},
		{-3, 2, []string{"a", "b"}},
		{2, 2, []string{"c", "d"}},
		{4, 10, []string{"e"}},
		{5, 10, nil},
		{99, 1, nil},
	}
	for _, tt := range tests {
		got, err := rd.Read(ctx, "log", tt.from, tt.limit)
		is.NoErr(err)
		var values []string
		for i, m := range got {
			values = append(values, string(m.Value))
			is.Equal(m.Offset, max(tt.from, 0)+int64(i))
		}
		is.Equal(values, tt.want)
	}
	_, err = rd.Read(ctx, "log", 0, 0)
	is.True(errors.Is(err, ErrInvalidArgument))
	_, err = rd.Read(ctx, "bad topic", 0, 1)
	is.True(errors.Is(err, ErrInvalidTopic))
}

func contractValidation(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	ctx := t.Context()
	ok := func(context.Context, Message) error { return nil }

	is.True(errors.Is(b.Publish(ctx, Message{Topic: "", Value: []byte("x")}), ErrInvalidTopic))
	is.True(errors.Is(b.Publish(ctx, Message{Topic: "a/b"}), ErrInvalidTopic))
	// A bad message rejects the whole call: nothing was published.
	is.True(errors.Is(b.Publish(ctx, Message{Topic: "fine"}, Message{Topic: "no good"}), ErrInvalidTopic))
	topics, err := b.Topics(ctx)
	is.NoErr(err)
	is.Equal(len(topics), 0)
	is.NoErr(b.Publish(ctx)) // nothing to do

	subTests := []struct {
		group string
		pats  []string
		h     Handler
		want  error
	}{
		{"", []string{"t"}, ok, ErrInvalidGroup},
		{"g", nil, ok, ErrInvalidPattern},
		{"g", []string{"a*b"}, ok, ErrInvalidPattern},
		{"g", []string{"**"}, ok, ErrInvalidPattern},
		{"g", []string{"t", "bad topic"}, ok, ErrInvalidPattern},
		{"g", []string{"t"}, nil, ErrInvalidArgument},
	}
	for _, tt := range subTests {
		s, err := b.Subscribe(ctx, tt.group, tt.pats, tt.h)
		is.True(errors.Is(err, tt.want)) // rejected with the documented error
		is.Equal(s, nil)
	}
}

func contractPatterns(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	ctx := t.Context()
	// Subscribed before any of the topics exists.
	r := newRecorder(nil)
	subscribe(t, b, "g", []string{"acme.*", "exact.one"}, r.handle)
	all := newRecorder(nil)
	subscribe(t, b, "all", []string{"*"}, all.handle)

	is.NoErr(b.Publish(ctx, msgs("acme.a", "a1")...))
	r.waitValues(t, "a1")
	// Topics created after the subscription started are picked up too.
	is.NoErr(b.Publish(ctx, msgs("other.x", "x1")...))
	is.NoErr(b.Publish(ctx, msgs("exact.onex", "e2")...))
	is.NoErr(b.Publish(ctx, msgs("exact.one", "e1")...))
	is.NoErr(b.Publish(ctx, msgs("acme.b", "b1")...))
	is.NoErr(b.Publish(ctx, msgs("acme", "no-dot")...))
	r.waitValues(t, "a1", "b1", "e1")
	all.waitValues(t, "a1", "b1", "e1", "x1", "e2", "no-dot")
	time.Sleep(quiet)
	is.Equal(r.values(), map[string]int{"a1": 1, "b1": 1, "e1": 1}) // nothing else matched
}

func contractGroupIsolation(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	values := []string{"1", "2", "3", "4", "5"}
	is.NoErr(b.Publish(t.Context(), msgs("iso", values...)...))
	g1, g2 := newRecorder(nil), newRecorder(nil)
	subscribe(t, b, "g1", []string{"iso"}, g1.handle)
	subscribe(t, b, "g2", []string{"iso*"}, g2.handle)
	g1.waitValues(t, values...)
	g2.waitValues(t, values...)
	time.Sleep(quiet)
	want := map[string]int{"1": 1, "2": 1, "3": 1, "4": 1, "5": 1}
	is.Equal(g1.values(), want) // each group gets everything, once
	is.Equal(g2.values(), want)
}

func contractSharedGroup(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	ctx := t.Context()
	// One recorder for both members: the group as a whole must see each
	// message once; the per-member split is the implementation's business.
	r := newRecorder(nil)
	var mu sync.Mutex
	per := map[string]int{}
	member := func(name string) Handler {
		return func(ctx context.Context, m Message) error {
			mu.Lock()
			per[name]++
			mu.Unlock()
			time.Sleep(time.Millisecond) // leave the other member a chance
			return r.handle(ctx, m)
		}
	}
	subscribe(t, b, "shared", []string{"shared.*"}, member("a"))
	subscribe(t, b, "shared", []string{"shared.*"}, member("b"))
	var want []string
	for i := range 4 {
		topic := fmt.Sprintf("shared.%d", i)
		var batch []string
		for j := range 10 {
			batch = append(batch, fmt.Sprintf("%s-%d", topic, j))
		}
		is.NoErr(b.Publish(ctx, msgs(topic, batch...)...))
		want = append(want, batch...)
	}
	r.waitValues(t, want...)
	time.Sleep(quiet)
	for v, n := range r.values() {
		if n != 1 {
			t.Errorf("%s delivered %d times to the group", v, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	is.Equal(per["a"]+per["b"], len(want))
}

func contractFailureRedelivers(t *testing.T, open func() Broker) {
	tests := []struct {
		name string
		fail func(ctx context.Context, release <-chan struct{}) error // the first attempt's behaviour
	}{
		{"error", func(context.Context, <-chan struct{}) error { return errors.New("boom") }},
		{"panic", func(context.Context, <-chan struct{}) error { panic("boom") }},
		{"timeout honouring ctx", func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return ctx.Err() }},
		{"timeout ignoring ctx", func(_ context.Context, release <-chan struct{}) error { <-release; return nil }},
	}
	b := open()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			release := make(chan struct{})
			defer close(release) // before the cleanup that closes the subscription and waits for handlers
			topic := fmt.Sprintf("fail.%d", i)
			var attempts sync.Map
			r := newRecorder(func(ctx context.Context, m Message) error {
				attempts.Store(string(m.Value)+fmt.Sprint(Attempt(ctx)), true)
				if string(m.Value) == "bad" && Attempt(ctx) == 1 {
					return tt.fail(ctx, release)
				}
				return nil
			})
			is.NoErr(b.Publish(t.Context(), msgs(topic, "before", "bad", "after")...))
			subscribe(t, b, fmt.Sprintf("g%d", i), []string{topic}, r.handle)
			waitUntil(t, "redelivery", func() bool { return r.count("bad") >= 2 })
			r.waitValues(t, "before", "after")
			// The recorder counts a delivery before its handler runs, so the
			// second attempt's own record may come a moment later.
			waitUntil(t, "the second delivery's Attempt(ctx) == 2", func() bool {
				_, second := attempts.Load("bad2")
				return second // Attempt counts deliveries
			})
			_, first := attempts.Load("before1")
			is.True(first)
			time.Sleep(quiet)
			is.Equal(r.count("bad"), 2) // acked on the second attempt, then left alone
			is.Equal(r.count("before"), 1)
			is.Equal(r.count("after"), 1)
		})
	}
}

func contractAckedNotRedelivered(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	is.NoErr(b.Publish(t.Context(), msgs("acked", "m1")...))
	r := newRecorder(nil)
	s := subscribe(t, b, "g", []string{"acked"}, r.handle)
	r.waitValues(t, "m1")
	time.Sleep(testRedelivery + 2*testMaxBackoff) // well past any redelivery
	is.Equal(r.count("m1"), 1)
	is.NoErr(s.Close())
	is.NoErr(b.Close())

	// After a restart the group resumes after m1: the marker is the first delivery.
	b = open()
	is.NoErr(b.Publish(t.Context(), msgs("acked", "m2")...))
	r2 := newRecorder(nil)
	subscribe(t, b, "g", []string{"acked"}, r2.handle)
	r2.waitValues(t, "m2")
	is.Equal(r2.values(), map[string]int{"m2": 1})
}

func contractRestartRedelivers(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	is.NoErr(b.Publish(t.Context(), msgs("restart", "m0", "m1", "m2")...))
	r := newRecorder(func(_ context.Context, m Message) error {
		if string(m.Value) == "m0" {
			return nil
		}
		return errors.New("not yet")
	})
	subscribe(t, b, "g", []string{"restart"}, r.handle)
	r.waitValues(t, "m0", "m1")
	is.NoErr(b.Close()) // also stops the subscription

	b = open()
	is.NoErr(b.Publish(t.Context(), msgs("restart", "m3")...))
	r2 := newRecorder(nil)
	subscribe(t, b, "g", []string{"restart"}, r2.handle)
	r2.waitValues(t, "m1", "m2", "m3")
	time.Sleep(quiet)
	is.Equal(r2.values(), map[string]int{"m1": 1, "m2": 1, "m3": 1}) // m0 was acked before the restart
}

func contractConcurrentPublishers(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	const publishers, perPublisher = 8, 30
	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Go(func() {
			// Alternate single messages and batches of three.
			for i, n := 0, 1; i < perPublisher; i, n = i+n, 4-n {
				var batch []string
				for j := i; j < min(i+n, perPublisher); j++ {
					batch = append(batch, fmt.Sprintf("%d-%03d", p, j))
				}
				if err := b.Publish(t.Context(), msgs("conc", batch...)...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	got, err := b.(Reader).Read(t.Context(), "conc", 0, maxReadLimit)
	is.NoErr(err)
	is.Equal(len(got), publishers*perPublisher) // nothing lost
	seen := map[string]bool{}
	last := map[byte]string{}
	for i, m := range got {
		is.Equal(m.Offset, int64(i)) // dense, increasing offsets
		v := string(m.Value)
		is.True(!seen[v]) // each message once
		seen[v] = true
		is.True(last[v[0]] < v) // each publisher's messages stay in its order
		last[v[0]] = v
	}
}

func contractContextCancellation(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	is.True(errors.Is(b.Publish(cancelled, msgs("ctx", "never")...), context.Canceled))
	_, err := b.Subscribe(cancelled, "g", []string{"ctx"}, func(context.Context, Message) error { return nil })
	is.True(errors.Is(err, context.Canceled))

	// A subscription ends with its context and leaves the rest to the group.
	is.NoErr(b.Publish(t.Context(), msgs("ctx", "m1")...))
	sctx, stop := context.WithCancel(t.Context())
	r := newRecorder(nil)
	s, err := b.Subscribe(sctx, "g", []string{"ctx"}, r.handle)
	is.NoErr(err)
	r.waitValues(t, "m1")
	stop()
	is.NoErr(s.Close()) // returns once stopped; harmless after cancellation
	is.NoErr(b.Publish(t.Context(), msgs("ctx", "m2")...))
	time.Sleep(quiet)
	is.Equal(r.values(), map[string]int{"m1": 1})

	r2 := newRecorder(nil)
	subscribe(t, b, "g", []string{"ctx"}, r2.handle)
	r2.waitValues(t, "m2")
	is.Equal(r2.values(), map[string]int{"m2": 1})
}

func contractCloseWaits(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	started := make(chan struct{})
	var finished, sawCancel bool
	var mu sync.Mutex
	s := subscribe(t, b, "g", []string{"slow"}, func(ctx context.Context, m Message) error {
		close(started)
		<-ctx.Done() // stays in flight until the subscription closes
		mu.Lock()
		sawCancel = errors.Is(ctx.Err(), context.Canceled)
		finished = true
		mu.Unlock()
		return ctx.Err()
	})
	is.NoErr(b.Publish(t.Context(), msgs("slow", "m")...))
	select {
	case <-started:
	case <-time.After(waitLong):
		t.Fatal("handler never started")
	}
	is.NoErr(s.Close())
	mu.Lock()
	defer mu.Unlock()
	is.True(finished)  // Close waited for the handler
	is.True(sawCancel) // and cancelled its context rather than timing it out
}

func contractClose(t *testing.T, open func() Broker) {
	is := is.New(t)
	b := open()
	ctx := t.Context()
	is.NoErr(b.Publish(ctx, msgs("c", "m")...))
	s := subscribe(t, b, "g", []string{"c"}, func(context.Context, Message) error { return nil })
	is.NoErr(b.Close())
	is.NoErr(b.Close()) // idempotent
	is.NoErr(s.Close()) // already stopped by the broker
	is.True(errors.Is(b.Publish(ctx, msgs("c", "late")...), ErrClosed))
	_, err := b.Subscribe(ctx, "g", []string{"c"}, func(context.Context, Message) error { return nil })
	is.True(errors.Is(err, ErrClosed))
	_, err = b.Topics(ctx)
	is.True(errors.Is(err, ErrClosed))
	_, err = b.(Reader).Read(ctx, "c", 0, 1)
	is.True(errors.Is(err, ErrClosed))
	_, err = b.(Reader).Latest(ctx, "c")
	is.True(errors.Is(err, ErrClosed))
}
