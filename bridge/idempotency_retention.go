package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Idempotency records of jobs and messages are kept for
// bridge.idempotency-retention (docs/bridge-api.md, "Retention"): Stripe's
// 24 hours by default. Workflow runs keep their key with the run's record.
const (
	DefaultIdempotencyRetention = 24 * time.Hour
	MinIdempotencyRetention     = time.Hour
	MaxIdempotencyRetention     = 365 * 24 * time.Hour
)

// pruneInterval spaces the prunes; an expired record is ignored by replay
// in between, so the interval only decides when its space is reused.
const pruneInterval = 10 * time.Minute

// pruneChunk bounds the rows one write transaction deletes, so a prune
// never holds the shared writer for long.
const pruneChunk = 2000

// pruneLoop deletes expired idempotency records now and every interval.
func (s *Service) pruneLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.pruneIdempotency(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("bridge: idempotency retention failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stopped:
			return
		case <-t.C:
		}
	}
}

// pruneIdempotency deletes the expired idempotency records, a chunk per
// transaction, and reports how many went.
func (s *Service) pruneIdempotency(ctx context.Context) (int64, error) {
	n, err := s.idem.Prune(ctx, s.db, pruneChunk)
	if err != nil {
		return n, fmt.Errorf("prune idempotency records: %w", err)
	}
	return n, nil
}
