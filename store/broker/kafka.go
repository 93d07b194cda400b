package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaOptions configure a Kafka broker. Zero values select the defaults.
type KafkaOptions struct {
	// Brokers are the bootstrap servers (host:port), e.g. from
	// PLATFORM_KAFKA_BOOTSTRAP_SERVERS via ParseBootstrapServers. Required.
	Brokers []string

	DeliveryOptions

	// Partitions and ReplicationFactor are used for topics Publish creates.
	// Default 1 partition, which keeps a topic totally ordered and gives it
	// one offset sequence (Read and Latest need that), and the cluster's
	// default replication factor.
	Partitions        int32
	ReplicationFactor int16

	// MetadataMaxAge is how often clients refresh metadata, which bounds how
	// long a subscription takes to notice a matching topic created elsewhere.
	// Topics created through this broker are noticed at once. Default 10s.
	MetadataMaxAge time.Duration
	// SessionTimeout, HeartbeatInterval and RebalanceTimeout tune consumer
	// group membership; zero keeps franz-go's defaults (45s, 3s, 60s).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	// FetchMaxWait is how long a fetch waits for new records. It also bounds
	// how long a subscription takes to start on a partition newly assigned to
	// it (e.g. a topic just created), so it is lower than Kafka's 5s. Default 1s.
	FetchMaxWait time.Duration
	// MaxPollRecords bounds the records handled between two offset commits. Default 500.
	MaxPollRecords int
	// ReadTimeout bounds how long Read waits for records it knows exist. Default 10s.
	ReadTimeout time.Duration

	// ClientOptions are appended to every franz-go client the broker creates:
	// TLS, SASL, logging, tuning.
	ClientOptions []kgo.Opt
	// Logger receives operational errors from background work. Default slog.Default().
	Logger *slog.Logger
}

func (o KafkaOptions) withDefaults() KafkaOptions {
	o.DeliveryOptions = o.DeliveryOptions.withDefaults()
	if o.Partitions <= 0 {
		o.Partitions = 1
	}
	if o.ReplicationFactor <= 0 {
		o.ReplicationFactor = -1
	}
	if o.MetadataMaxAge <= 0 {
		o.MetadataMaxAge = 10 * time.Second
	}
	if o.FetchMaxWait <= 0 {
		o.FetchMaxWait = time.Second
	}
	if o.MaxPollRecords <= 0 {
		o.MaxPollRecords = 500
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ParseBootstrapServers splits a comma-separated server list such as the
// value of PLATFORM_KAFKA_BOOTSTRAP_SERVERS, dropping blanks. An empty result
// means Kafka is not configured.
func ParseBootstrapServers(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Kafka is the broker on an external Kafka cluster, via franz-go.
//
// Publish produces synchronously with acks=all (and franz-go's idempotent
// producer), creating missing topics first. Each subscription is its own
// consumer group member consuming the topics matching its patterns by
// regular expression; a record's offset is committed only after the handler
// returned nil for it and every earlier record of its partition. A failing
// record is retried in place, with backoff, so a partition is delivered in
// order; a handler exceeding RedeliveryTimeout is abandoned and the record
// retried. Rebalances wait until the records of the current poll are handled
// and committed, so in steady state no record is delivered twice. The flip
// side: a record that keeps failing holds up its partition and the group's
// rebalances (until RebalanceTimeout evicts the member, whose records are then
// redelivered elsewhere); handlers should dead-letter poison messages using
// Attempt. Work is shared between members per partition, so with the default
// single partition per topic a group spreads topics, not messages, over members.
type Kafka struct {
	opts   KafkaOptions
	cl     *kgo.Client // producer and admin requests
	closed atomic.Bool

	mu    sync.Mutex
	known map[string]bool // topics known to exist (or that we tried to create)
	subs  map[*kafkaSub]struct{}
}

// NewKafka connects to the cluster and checks it is reachable.
func NewKafka(ctx context.Context, opts KafkaOptions) (*Kafka, error) {
	if len(opts.Brokers) == 0 {
		return nil, fmt.Errorf("broker: new kafka: %w: no bootstrap servers", ErrInvalidArgument)
	}
	k := &Kafka{opts: opts.withDefaults(), known: make(map[string]bool), subs: make(map[*kafkaSub]struct{})}
	cl, err := kgo.NewClient(k.clientOpts(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), // Publish is synchronous: waiting to batch only adds latency
	)...)
	if err != nil {
		return nil, fmt.Errorf("broker: new kafka: %w", err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("broker: new kafka: ping %v: %w", opts.Brokers, err)
	}
	k.cl = cl
	return k, nil
}

// clientOpts are the options shared by every client, then extra, then the
// caller's ClientOptions (which win).
func (k *Kafka) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(k.opts.Brokers...),
		kgo.MetadataMaxAge(k.opts.MetadataMaxAge),
		kgo.MetadataMinAge(min(k.opts.MetadataMaxAge, time.Second)),
		kgo.FetchMaxWait(k.opts.FetchMaxWait),
	}
	opts = append(opts, extra...)
	return append(opts, k.opts.ClientOptions...)
}

// Publish produces msgs and waits until the cluster acknowledged all of
// them from all in-sync replicas.
func (k *Kafka) Publish(ctx context.Context, msgs ...Message) error {
	if k.closed.Load() {
		return fmt.Errorf("broker: publish: %w", ErrClosed)
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("broker: publish: %w", err)
	}
	recs := make([]*kgo.Record, len(msgs))
	topics := make(map[string]bool)
	for i, m := range msgs {
		if err := ValidateTopic(m.Topic); err != nil {
			return fmt.Errorf("broker: publish: %w", err)
		}
		topics[m.Topic] = true
		recs[i] = toRecord(m)
	}
	if err := k.ensureTopics(ctx, slices.Sorted(maps.Keys(topics))); err != nil {
		return fmt.Errorf("broker: publish: %w", err)
	}
	if err := k.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("broker: publish: %w", err)
	}
	return nil
}

// ensureTopics creates the topics this broker has not seen yet, so Publish
// works on clusters that disable auto-creation, and tells subscriptions to
// look for them now rather than at the next metadata refresh.
func (k *Kafka) ensureTopics(ctx context.Context, topics []string) error {
	k.mu.Lock()
	var missing []string
	for _, t := range topics {
		if !k.known[t] {
			missing = append(missing, t)
		}
	}
	k.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	for _, t := range missing {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = t
		rt.NumPartitions = k.opts.Partitions
		rt.ReplicationFactor = k.opts.ReplicationFactor
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", missing, err)
	}
	created := false
	for _, rt := range resp.Topics {
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case err == nil:
			created = true
		case errors.Is(err, kerr.TopicAlreadyExists):
		default:
			// Not fatal: the principal may lack CREATE but the topic may exist
			// or be auto-created; producing reports the real problem.
			k.opts.Logger.Debug("broker: create topic", "topic", rt.Topic, "err", err)
		}
	}
	k.mu.Lock()
	for _, t := range missing {
		k.known[t] = true
	}
	subs := slices.Collect(maps.Keys(k.subs))
	k.mu.Unlock()
	if created {
		for _, s := range subs {
			s.cl.ForceMetadataRefresh()
		}
	}
	return nil
}

// Topics lists the non-internal topics holding at least one message (ever
// produced; retention may have removed them since), sorted.
func (k *Kafka) Topics(ctx context.Context) ([]string, error) {
	if k.closed.Load() {
		return nil, fmt.Errorf("broker: topics: %w", ErrClosed)
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, k.cl)
	if err != nil {
		return nil, fmt.Errorf("broker: topics: %w", err)
	}
	parts := make(map[string][]int32)
	for _, t := range meta.Topics {
		if t.Topic == nil || t.IsInternal || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			parts[*t.Topic] = append(parts[*t.Topic], p.Partition)
		}
	}
	ends, err := k.endOffsets(ctx, parts)
	if err != nil {
		return nil, fmt.Errorf("broker: topics: %w", err)
	}
	var out []string
	for topic, pends := range ends {
		for _, end := range pends {
			if end > 0 {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// endOffsets lists the log end offset of each given partition.
func (k *Kafka) endOffsets(ctx context.Context, parts map[string][]int32) (map[string]map[int32]int64, error) {
	out := make(map[string]map[int32]int64)
	if len(parts) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	for topic, ps := range parts {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = -1 // latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets %s/%d: %w", rt.Topic, rp.Partition, err)
			}
			if out[rt.Topic] == nil {
				out[rt.Topic] = make(map[int32]int64)
			}
			out[rt.Topic][rp.Partition] = rp.Offset
		}
	}
	return out, nil
}

// partitionCount returns how many partitions topic has, 0 if it does not exist.
func (k *Kafka) partitionCount(ctx context.Context, topic string) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return 0, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return 0, nil
		case err != nil:
			return 0, err
		}
		return len(t.Partitions), nil
	}
	return 0, nil
}

// singlePartition checks topic can be read as one log; exists is false for an unknown topic.
func (k *Kafka) singlePartition(ctx context.Context, topic string) (exists bool, err error) {
	n, err := k.partitionCount(ctx, topic)
	switch {
	case err != nil:
		return false, err
	case n > 1:
		return false, fmt.Errorf("%w: topic has %d partitions, Read and Latest need 1", ErrUnsupported, n)
	}
	return n == 1, nil
}

// Latest implements Reader for single-partition topics.
func (k *Kafka) Latest(ctx context.Context, topic string) (int64, error) {
	if k.closed.Load() {
		return 0, fmt.Errorf("broker: latest %s: %w", topic, ErrClosed)
	}
	if err := ValidateTopic(topic); err != nil {
		return 0, fmt.Errorf("broker: latest: %w", err)
	}
	exists, err := k.singlePartition(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("broker: latest %s: %w", topic, err)
	}
	if !exists {
		return 0, nil
	}
	ends, err := k.endOffsets(ctx, map[string][]int32{topic: {0}})
	if err != nil {
		return 0, fmt.Errorf("broker: latest %s: %w", topic, err)
	}
	return ends[topic][0], nil
}

// Read implements Reader for single-partition topics, with a short-lived
// consumer that joins no group.
func (k *Kafka) Read(ctx context.Context, topic string, fromOffset int64, limit int) ([]Message, error) {
	if k.closed.Load() {
		return nil, fmt.Errorf("broker: read %s: %w", topic, ErrClosed)
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("broker: read: %w", err)
	}
	if limit <= 0 || limit > maxReadLimit {
		return nil, fmt.Errorf("broker: read %s: %w: limit %d not in 1..%d", topic, ErrInvalidArgument, limit, maxReadLimit)
	}
	end, err := k.Latest(ctx, topic)
	if err != nil || fromOffset >= end {
		return nil, err
	}
	cl, err := kgo.NewClient(k.clientOpts(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(max(fromOffset, 0))}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), // fromOffset already trimmed: start at the oldest
	)...)
	if err != nil {
		return nil, fmt.Errorf("broker: read %s: %w", topic, err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, k.opts.ReadTimeout)
	defer cancel()
	var out []Message
	for len(out) < limit {
		fs := cl.PollRecords(rctx, limit-len(out))
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("broker: read %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = cmp.Or(ferr, err)
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("broker: read %s: %w", topic, ferr)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if len(out) < limit {
				out = append(out, fromRecord(r))
			}
			done = done || r.Offset >= end-1
		})
		// A deadline means the log has a gap at its end (e.g. a transaction
		// marker): return what exists.
		if done || rctx.Err() != nil {
			break
		}
	}
	return out, nil
}

// Close stops every subscription (waiting for in-flight handlers) and the
// producer. Calling Close again returns nil.
func (k *Kafka) Close() error {
	if !k.closed.CompareAndSwap(false, true) {
		return nil
	}
	k.mu.Lock()
	subs := slices.Collect(maps.Keys(k.subs))
	k.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	k.cl.Close()
	return nil
}

func toRecord(m Message) *kgo.Record {
	r := &kgo.Record{Topic: m.Topic, Value: m.Value}
	if m.Key != "" {
		r.Key = []byte(m.Key)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Headers)) {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: name, Value: []byte(m.Headers[name])})
	}
	return r
}

func fromRecord(r *kgo.Record) Message {
	m := Message{Topic: r.Topic, Key: string(r.Key), Value: r.Value, Offset: r.Offset, Timestamp: r.Timestamp}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			m.Headers[h.Key] = string(h.Value)
		}
	}
	return m
}
