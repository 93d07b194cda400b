package broker

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// benchBolt opens a broker on a fresh file with production defaults
// (fsync on every commit).
func benchBolt(b *testing.B) *Bolt {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "events.bolt"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	br, err := NewBolt(db, BoltOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = br.Close()
		_ = db.Close()
	})
	return br
}

// benchValue is a typical small event payload.
var benchValue = []byte(`{"type":"webhook.received","provider":"github","delivery":"5f0c6d2e-8a4b-4c7e-9d3a-0b1c2d3e4f50","size":1234}`)

// reportRate reports throughput and, for publish benchmarks (br != nil), how
// many messages each group commit carried on average.
func reportRate(b *testing.B, br *Bolt, msgs int64) {
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
	if br != nil && br.commits.Load() > 0 {
		b.ReportMetric(float64(msgs)/float64(br.commits.Load()), "msgs/commit")
	}
}

// BenchmarkBoltPublishBatched: one publisher, 100 messages per durable Publish.
func BenchmarkBoltPublishBatched(b *testing.B) {
	br := benchBolt(b)
	batch := make([]Message, 100)
	for i := range batch {
		batch[i] = Message{Topic: "bench", Key: fmt.Sprint(i), Value: benchValue}
	}
	ctx := context.Background()
	for b.Loop() {
		if err := br.Publish(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, br, int64(b.N)*int64(len(batch)))
}

// BenchmarkBoltPublishBatchedParallel: 8 publishers per CPU, 100 messages per Publish.
func BenchmarkBoltPublishBatchedParallel(b *testing.B) {
	br := benchBolt(b)
	batch := make([]Message, 100)
	for i := range batch {
		batch[i] = Message{Topic: "bench", Key: fmt.Sprint(i), Value: benchValue}
	}
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := br.Publish(context.Background(), batch...); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, br, int64(b.N)*int64(len(batch)))
}

// BenchmarkBoltPublishUnbatched: 64 publishers per CPU, one durable message
// per Publish; group commit shares each fsync among them.
func BenchmarkBoltPublishUnbatched(b *testing.B) {
	br := benchBolt(b)
	b.SetParallelism(64)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		topic := fmt.Sprintf("bench.%d", next.Add(1)%8) // a few topics, as in the daemon
		m := Message{Topic: topic, Value: benchValue}
		for pb.Next() {
			if err := br.Publish(context.Background(), m); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, br, int64(b.N))
}

// BenchmarkBoltConsume: one subscription with default options draining
// b.N messages published beforehand.
func BenchmarkBoltConsume(b *testing.B) {
	br := benchBolt(b)
	ctx := context.Background()
	batch := make([]Message, 0, 1000)
	for i := range b.N {
		batch = append(batch, Message{Topic: "bench", Value: benchValue})
		if len(batch) == cap(batch) || i == b.N-1 {
			if err := br.Publish(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var n atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	s, err := br.Subscribe(ctx, "bench", []string{"bench"}, func(context.Context, Message) error {
		if n.Add(1) == int64(b.N) {
			close(done)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	_ = s.Close()
	reportRate(b, nil, int64(b.N))
}
