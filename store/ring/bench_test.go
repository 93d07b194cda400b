package ring

import (
	"context"
	"path/filepath"
	"testing"
)

// benchPayload is a typical small event (a JSON job-state change is ~100-200 B).
var benchPayload = make([]byte, 128)

func reportEventsPerSec(b *testing.B, events int) {
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendBatched appends 1,000 payloads per call, durably, into a ring
// that is full, so every commit also trims.
func BenchmarkAppendBatched(b *testing.B) {
	const batch = 1000
	r := openRing(b, openDB(b, filepath.Join(b.TempDir(), "events.bolt")), "bench", 50_000)
	ps := make([][]byte, batch)
	for i := range ps {
		ps[i] = benchPayload
	}
	ctx := context.Background()
	for range 60 { // fill past capacity so trimming is part of the measurement
		if _, err := r.Append(ctx, ps...); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(batch * int64(len(benchPayload)))
	n := 0
	for b.Loop() {
		if _, err := r.Append(ctx, ps...); err != nil {
			b.Fatal(err)
		}
		n += batch
	}
	reportEventsPerSec(b, n)
}

// BenchmarkAppendOneDurable has 64 goroutines per CPU each append one payload
// per call and wait for its fsync: the throughput comes from group commit.
func BenchmarkAppendOneDurable(b *testing.B) {
	r := openRing(b, openDB(b, filepath.Join(b.TempDir(), "events.bolt")), "bench", 50_000)
	ctx := context.Background()
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Append(ctx, benchPayload); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportEventsPerSec(b, b.N)
	b.ReportMetric(float64(r.committedReqs.Load())/float64(r.commits.Load()), "appends/commit")
}

// BenchmarkReadAfter1000 reads 1,000 retained events from the middle of a
// full ring (one op = one ReadAfter of 1,000 entries).
func BenchmarkReadAfter1000(b *testing.B) {
	const total, limit = 20_000, 1000
	r := openRing(b, openDB(b, filepath.Join(b.TempDir(), "events.bolt")), "bench", total)
	ps := make([][]byte, 1000)
	for i := range ps {
		ps[i] = benchPayload
	}
	for range total / len(ps) {
		if _, err := r.Append(context.Background(), ps...); err != nil {
			b.Fatal(err)
		}
	}
	var after uint64
	n := 0
	for b.Loop() {
		es, err := r.ReadAfter(after, limit)
		if err != nil || len(es) != limit {
			b.Fatalf("read %d entries, err %v", len(es), err)
		}
		after = (after + 7919) % (total - limit) // move around the ring
		n += limit
	}
	reportEventsPerSec(b, n)
}
