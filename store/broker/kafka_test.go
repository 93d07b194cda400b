package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/twmb/franz-go/pkg/kfake"
)

// newTestCluster starts an in-process fake Kafka cluster.
func newTestCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func testKafkaOptions(c *kfake.Cluster) KafkaOptions {
	return KafkaOptions{
		Brokers: c.ListenAddrs(),
		DeliveryOptions: DeliveryOptions{
			RedeliveryTimeout: testRedelivery,
			MinBackoff:        testMinBackoff,
			MaxBackoff:        testMaxBackoff,
		},
		MetadataMaxAge:    250 * time.Millisecond,
		SessionTimeout:    10 * time.Second, // members leave explicitly; this only guards against starvation
		HeartbeatInterval: 100 * time.Millisecond,
		RebalanceTimeout:  10 * time.Second,
		FetchMaxWait:      200 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
	}
}

func newTestKafka(t *testing.T, opts KafkaOptions) *Kafka {
	t.Helper()
	k, err := NewKafka(t.Context(), opts)
	if err != nil {
		t.Fatalf("new kafka: %v", err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

func TestKafkaContract(t *testing.T) {
	testContract(t, func(t *testing.T) func() Broker {
		c := newTestCluster(t)
		// A restart is a new client in the same groups.
		return func() Broker { return newTestKafka(t, testKafkaOptions(c)) }
	})
}

func TestParseBootstrapServers(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"localhost:9092", []string{"localhost:9092"}},
		{"a:1, b:2,,c:3 ", []string{"a:1", "b:2", "c:3"}},
	}
	for _, tt := range tests {
		is.New(t).Equal(ParseBootstrapServers(tt.in), tt.want)
	}
}

func TestNewKafkaErrors(t *testing.T) {
	is := is.New(t)
	_, err := NewKafka(t.Context(), KafkaOptions{})
	is.True(errors.Is(err, ErrInvalidArgument))

	// Nothing listens there: NewKafka fails instead of returning a dead broker.
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err = NewKafka(ctx, KafkaOptions{Brokers: []string{"127.0.0.1:1"}})
	is.True(err != nil)
}

func TestKafkaReadNeedsOnePartition(t *testing.T) {
	is := is.New(t)
	opts := testKafkaOptions(newTestCluster(t))
	opts.Partitions = 3
	k := newTestKafka(t, opts)
	is.NoErr(k.Publish(t.Context(), msgs("wide", "a", "b")...))
	_, err := k.Read(t.Context(), "wide", 0, 10)
	is.True(errors.Is(err, ErrUnsupported))
	_, err = k.Latest(t.Context(), "wide")
	is.True(errors.Is(err, ErrUnsupported))
	topics, err := k.Topics(t.Context())
	is.NoErr(err)
	is.Equal(topics, []string{"wide"})
}

func TestKafkaRecordRoundTrip(t *testing.T) {
	is := is.New(t)
	m := Message{Topic: "t", Key: "k", Headers: map[string]string{"b": "2", "a": "1"}, Value: []byte("v")}
	r := toRecord(m)
	is.Equal(r.Headers[0].Key, "a") // deterministic header order
	got := fromRecord(r)
	is.Equal(got.Topic, m.Topic)
	is.Equal(got.Key, m.Key)
	is.Equal(got.Headers, m.Headers)
	is.Equal(string(got.Value), "v")
	is.Equal(toRecord(Message{Topic: "t"}).Key, nil) // no key: no key, so partitioning stays sticky
}

func TestKafkaSharedGroupSplitsTopics(t *testing.T) {
	is := is.New(t)
	k := newTestKafka(t, testKafkaOptions(newTestCluster(t)))
	var mu sync.Mutex
	per := map[string]int{}
	member := func(name string) Handler {
		return func(context.Context, Message) error {
			mu.Lock()
			per[name]++
			mu.Unlock()
			return nil
		}
	}
	subscribe(t, k, "g", []string{"split.*"}, member("a"))
	subscribe(t, k, "g", []string{"split.*"}, member("b"))
	// Keep publishing to four single-partition topics until the group has
	// settled with each member owning some of them.
	waitUntil(t, "both members to get work", func() bool {
		for i := range 4 {
			is.NoErr(k.Publish(t.Context(), msgs(fmt.Sprintf("split.%d", i), "x")...))
		}
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return per["a"] > 0 && per["b"] > 0
	})
}
