package engine

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// Archiving, restoring and purging runs (docs/platform-api.md, "Archiving,
// restoring and purging runs"; docs/retention.md): an archived run keeps
// its row (status, state, keys: GET E/runs/{run} and retries work) while
// its events and log lines are packed into one row; run lists leave it out
// unless include_archived=true, and its history, steps, logs and replay
// answer 409 PF-RUNTIME-STATE until it is restored. Only an archived run
// can be purged, which deletes it for good.

// RunArchive answers the archive and restore operations.
type RunArchive struct {
	RunID      string     `json:"run_id" format:"uuid"`
	Status     string     `json:"status" doc:"the run's status (an ended one)"`
	Archived   bool       `json:"archived"`
	ArchivedAt *time.Time `json:"archived_at,omitempty" doc:"when the run was archived (absent once restored)"`
	Events     int        `json:"events" doc:"the accepted events packed into the archive, or restored from it"`
	Logs       int        `json:"logs" doc:"the log lines packed into the archive, or restored from it"`
}

// RunPurged answers the purge operation.
type RunPurged struct {
	RunID  string `json:"run_id" format:"uuid"`
	Purged bool   `json:"purged" doc:"always true: the run and everything recorded for it are deleted"`
}

// ArchiveRun archives run id of environment env in tx: it must have ended
// and the engine must have no work left for it. Archiving an archived run
// answers it unchanged.
func (s *Service) ArchiveRun(ctx context.Context, tx *sql.Tx, env, id string) (RunArchive, error) {
	f, err := readArchiveFacts(ctx, tx, env, id)
	if err != nil {
		return RunArchive{}, notFoundRun(err)
	}
	if f.ArchivedAt != nil {
		n, l, err := archiveCounts(ctx, tx, id)
		if err != nil {
			return RunArchive{}, err
		}
		return RunArchive{RunID: id, Status: f.Status, Archived: true, ArchivedAt: f.ArchivedAt, Events: n, Logs: l}, nil
	}
	if !kernel.Status(f.Status).Terminal() {
		return RunArchive{}, refused(CodeRuntimeState, "run %s has not ended (status %s); only an ended run can be archived", id, f.Status)
	}
	if f.Busy {
		return RunArchive{}, refused(CodeRuntimeState, "run %s still has work in flight (held events, a call or a worker task); archive it once that has finished", id)
	}
	packed, n, l, err := packHistory(ctx, tx, id)
	if errors.Is(err, errTooLarge) {
		return RunArchive{}, refused(CodeRuntimeState, "run %s has over %d MiB of history; it stays live", id, maxArchiveBytes>>20)
	}
	if err != nil {
		return RunArchive{}, err
	}
	at := s.timestamp()
	if err := storeArchive(ctx, tx, id, packed, n, l, at); err != nil {
		return RunArchive{}, err
	}
	return RunArchive{RunID: id, Status: f.Status, Archived: true, ArchivedAt: &at, Events: n, Logs: l}, nil
}

// RestoreRun puts the history of archived run id back; restoring a run
// that is not archived answers it unchanged.
func (s *Service) RestoreRun(ctx context.Context, tx *sql.Tx, env, id string) (RunArchive, error) {
	f, err := readArchiveFacts(ctx, tx, env, id)
	if err != nil {
		return RunArchive{}, notFoundRun(err)
	}
	if f.ArchivedAt == nil {
		return RunArchive{RunID: id, Status: f.Status}, nil
	}
	n, l, err := restoreArchive(ctx, tx, id)
	if err != nil {
		return RunArchive{}, err
	}
	return RunArchive{RunID: id, Status: f.Status, Events: n, Logs: l}, nil
}

// PurgeRun deletes archived run id and everything recorded for it. A run
// that is not archived, or that another run or a step test refers to,
// answers 409 PF-RUNTIME-STATE.
func (s *Service) PurgeRun(ctx context.Context, tx *sql.Tx, env, id string) (RunPurged, error) {
	f, err := readArchiveFacts(ctx, tx, env, id)
	if err != nil {
		return RunPurged{}, notFoundRun(err)
	}
	if f.ArchivedAt == nil {
		return RunPurged{}, refused(CodeRuntimeState, "run %s is not archived; archive it before purging it", id)
	}
	by, err := purgeBlocker(ctx, tx, id)
	if err != nil {
		return RunPurged{}, err
	}
	if by != "" {
		return RunPurged{}, refused(CodeRuntimeState, "%s refers to run %s; purge it first", by, id)
	}
	if err := deleteRun(ctx, tx, id); err != nil {
		return RunPurged{}, err
	}
	return RunPurged{RunID: id, Purged: true}, nil
}

// refuseArchived answers 409 when run id is archived: its history, steps,
// logs and replay need it restored.
func refuseArchived(ctx context.Context, q store.Querier, id string) error {
	archived, err := isArchived(ctx, q, id)
	if err != nil {
		return err
	}
	return refuseArchivedRun(runRow{ID: id, Archived: archived})
}

// refuseArchivedRun is refuseArchived for a run already read (its row says
// whether it is archived).
func refuseArchivedRun(r runRow) error {
	if r.Archived {
		return refused(CodeRuntimeState, "run %s is archived; restore it (POST .../runs/%s/restore) to read its history, steps and logs", r.ID, r.ID)
	}
	return nil
}

func notFoundRun(err error) error {
	if errors.Is(err, errNotFound) {
		return notFound("run")
	}
	return err
}

// RunRetention is the automatic policy (platform.runs.* in config.yaml,
// docs/retention.md): ended runs are archived ArchiveAfter after their last
// event, archived runs purged PurgeAfter after their archiving. Zero turns
// either off.
type RunRetention struct {
	ArchiveAfter, PurgeAfter time.Duration
}

// Retention intervals and batch: the policy looks at most once a minute
// and handles retentionBatch runs per transaction, so a backlog (a first
// start with a million ended runs) never holds the writer for long.
const (
	retentionInterval = time.Minute
	retentionBatch    = 100
)

// Retention is the scheduler phase (AddPhase) that applies p. Each queue
// is walked with a cursor, so runs the policy must skip (work in flight, a
// retry that still refers to its parent) do not hold up the others; the
// walk starts again from the oldest once a queue is exhausted.
func (s *Service) Retention(p RunRetention) Phase {
	var mu sync.Mutex
	var next time.Time
	var archived, purged retentionCursor
	return func(ctx context.Context) (bool, error) {
		if p.ArchiveAfter <= 0 && p.PurgeAfter <= 0 {
			return false, nil
		}
		mu.Lock()
		defer mu.Unlock()
		now := s.now()
		if now.Before(next) {
			return false, nil
		}
		full := false
		if p.ArchiveAfter > 0 {
			more, err := s.retire(ctx, &archived, dueForArchive, now.Add(-p.ArchiveAfter), func(ctx context.Context, tx *sql.Tx, env, id string) error {
				_, err := s.ArchiveRun(ctx, tx, env, id)
				return err
			})
			if err != nil {
				return false, err
			}
			full = more
		}
		if p.PurgeAfter > 0 {
			more, err := s.retire(ctx, &purged, dueForPurge, now.Add(-p.PurgeAfter), func(ctx context.Context, tx *sql.Tx, env, id string) error {
				_, err := s.PurgeRun(ctx, tx, env, id)
				return err
			})
			if err != nil {
				return false, err
			}
			full = full || more
		}
		if !full {
			next = now.Add(retentionInterval)
		}
		return full, nil
	}
}

// retentionCursor is where a retention queue's walk goes on from.
type retentionCursor struct{ at, rowid int64 }

// retire applies op to the next runs of a queue that are due before
// cutoff, in one transaction, and answers whether the queue may hold more.
// A run op refuses (busy, still referred to) is skipped and logged, in its
// own savepoint so the others still commit.
func (s *Service) retire(ctx context.Context, cur *retentionCursor, due dueFunc, cutoff time.Time,
	op func(ctx context.Context, tx *sql.Tx, env, id string) error) (bool, error) {
	refs, err := due(ctx, s.db.Reader(), cutoff, *cur, retentionBatch)
	if err != nil {
		return false, err
	}
	if len(refs) < retentionBatch {
		*cur = retentionCursor{}
	} else {
		last := refs[len(refs)-1]
		*cur = retentionCursor{at: last.At, rowid: last.RowID}
	}
	if len(refs) == 0 {
		return false, nil
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		for _, r := range refs {
			if err := savepoint(ctx, tx, "SAVEPOINT retire"); err != nil {
				return err
			}
			err := op(ctx, tx, r.Environment, r.ID)
			var refusal *Error
			if errors.As(err, &refusal) {
				s.log.Debug("engine: run retention skipped a run", "run", r.ID, "reason", refusal.Message)
				if err := savepoint(ctx, tx, "ROLLBACK TO retire"); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
			if err := savepoint(ctx, tx, "RELEASE retire"); err != nil {
				return err
			}
		}
		return nil
	})
	return len(refs) == retentionBatch, err
}
