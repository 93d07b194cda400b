package file

import (
	"context"
	"database/sql"
	"time"

	"github.com/agentbridge/bridge/store"
)

// SweepInterval spaces the sweeper's passes (by the service's clock).
const SweepInterval = time.Minute

// sweepBatch bounds the files one pass reclaims of each kind; a full
// batch makes the next pass come at once.
const sweepBatch = 100

// Sweep is the "reclaim files" phase of the engine's loop (see
// engine.Service.AddPhase): at most once per SweepInterval it removes
// uploads whose time ran out (row first, then bytes) and deleted files
// that no live run needs any more (row, then the blob unless another file
// shares it). It answers whether a batch was full.
func (s *Service) Sweep(ctx context.Context) (bool, error) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	now := s.now()
	if now.Before(s.nextSweep) {
		return false, nil
	}
	expired, err := expiredUploads(ctx, s.db.Reader(), now, sweepBatch)
	if err != nil {
		return false, err
	}
	released, err := releasedFiles(ctx, s.db.Reader(), sweepBatch)
	if err != nil {
		return false, err
	}
	for _, x := range expired {
		if err := s.reclaim(ctx, x, now); err != nil {
			return false, err
		}
	}
	for _, x := range released {
		if err := s.reclaim(ctx, x, now); err != nil {
			return false, err
		}
	}
	full := len(expired) == sweepBatch || len(released) == sweepBatch
	if !full {
		s.nextSweep = now.Add(SweepInterval)
	}
	if n := len(expired) + len(released); n > 0 {
		s.log.Info("file: reclaimed files", "expired_uploads", len(expired), "released", len(released))
	}
	return full, nil
}

// reclaim removes one expired upload or released file, checking under its
// lock that it still is one.
func (s *Service) reclaim(ctx context.Context, x idDigest, now time.Time) error {
	unlock := s.locks.lock(x.ID)
	defer unlock()
	gone := false
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		var q string
		switch x.Status {
		case StatusUploading:
			q = `DELETE FROM platform_files WHERE id = ? AND status = 'uploading' AND expires_at <= ?`
		default:
			q = `DELETE FROM platform_files WHERE id = ? AND status = 'deleted' AND ? > 0 AND NOT EXISTS (
				SELECT 1 FROM platform_file_refs x JOIN platform_runs r ON r.id = x.run_id
				WHERE x.file_id = platform_files.id AND NOT r.` + terminalRun + `)`
		}
		res, err := tx.ExecContext(ctx, q, x.ID, store.Millis(now))
		ok, err := affected(res, err, "reclaim file")
		gone = ok
		return err
	})
	if err != nil || !gone {
		return err
	}
	if x.Status == StatusUploading {
		return s.blobs.removePart(x.ID)
	}
	return s.releaseBlob(ctx, x.SHA256)
}
