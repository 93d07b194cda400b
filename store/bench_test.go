package store

import (
	"context"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"
)

// The two benchmarks below are the pair BENCHMARKS.md compares: 64 concurrent
// writers, durable commits (WAL + synchronous=FULL), with and without group commit.

func benchWrites(b *testing.B, single bool) {
	db, _ := openTest(b, testMigs)
	ctx := context.Background()
	insert := func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO notes(body) VALUES ('benchmark payload')`)
		return err
	}
	var n atomic.Int64
	b.SetParallelism(32) // x GOMAXPROCS(2) = 64 writers
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var err error
			if single {
				err = db.WriteSingle(ctx, insert)
			} else {
				err = db.Write(ctx, insert)
			}
			if err != nil {
				b.Error(err)
				return
			}
			n.Add(1)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "writes/s")
}

func BenchmarkWriteGroupCommit64(b *testing.B)  { benchWrites(b, false) }
func BenchmarkWriteSingleCommit64(b *testing.B) { benchWrites(b, true) }
