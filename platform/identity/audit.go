package identity

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/store"
)

// Audit queue sizing: decisions wait in a bounded queue and are written in
// batches, so recording adds no fsync to a request; a full queue makes
// Record wait (back-pressure) rather than drop a decision.
const (
	auditQueue = 8192
	auditBatch = 512
)

// AuditLog records access decisions in platform_access_audit. One writer
// goroutine drains the queue into group-committed transactions of up to
// auditBatch rows. Close writes everything still queued, so no decision is
// lost on a clean shutdown; a crash may lose the decisions of the last
// moments, never a change's own commit.
type AuditLog struct {
	db  *store.DB
	log *slog.Logger
	ch  chan api.Decision
	// pending counts decisions recorded and not yet written.
	pending atomic.Int64

	mu     sync.RWMutex
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// NewAuditLog starts the writer.
func NewAuditLog(db *store.DB, log *slog.Logger) *AuditLog {
	a := &AuditLog{db: db, log: log, ch: make(chan api.Decision, auditQueue), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// Record queues d. It implements api.Auditor.
func (a *AuditLog) Record(d api.Decision) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.log.Warn("platform: access decision after shutdown not recorded", "request_id", d.RequestID, "action", d.Action)
		return
	}
	a.pending.Add(1)
	a.ch <- d
}

// Flush waits until every decision recorded before the call is written
// (tests and benchmarks use it).
func (a *AuditLog) Flush(ctx context.Context) error {
	for a.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Close stops accepting decisions and writes the queued ones.
func (a *AuditLog) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	<-a.done
	return nil
}

func (a *AuditLog) run() {
	defer close(a.done)
	batch := make([]api.Decision, 0, auditBatch)
	for {
		batch = batch[:0]
		select {
		case d := <-a.ch:
			batch = append(batch, d)
		case <-a.stop:
			a.drain()
			return
		}
		batch = a.fill(batch)
		a.write(batch)
	}
}

func (a *AuditLog) fill(batch []api.Decision) []api.Decision {
	for len(batch) < auditBatch {
		select {
		case d := <-a.ch:
			batch = append(batch, d)
		default:
			return batch
		}
	}
	return batch
}

func (a *AuditLog) drain() {
	for {
		batch := a.fill(make([]api.Decision, 0, auditBatch))
		if len(batch) == 0 {
			return
		}
		a.write(batch)
	}
}

// auditRowsPerInsert is how many rows one INSERT statement carries (14
// parameters each, far below SQLite's limit); multi-row inserts cut the
// per-row cost of the audit roughly in half.
const auditRowsPerInsert = 64

const auditInsert = `INSERT INTO platform_access_audit(at, request_id, method, route, principal_id, action, capability,
	tenant_id, project_id, environment_id, resource_id, allowed, reason, grant_id) VALUES `

func (a *AuditLog) write(batch []api.Decision) {
	// A background context: decisions are written even while the daemon
	// shuts down (the database closes after every subsystem).
	err := a.db.Write(context.Background(), func(tx *sql.Tx) error {
		args := make([]any, 0, auditRowsPerInsert*14)
		var full *sql.Stmt // the statement of a whole chunk, prepared once
		defer func() {
			if full != nil {
				full.Close()
			}
		}()
		for rest := batch; len(rest) > 0; rest = rest[min(len(rest), auditRowsPerInsert):] {
			n := min(len(rest), auditRowsPerInsert)
			args = args[:0]
			for _, d := range rest[:n] {
				args = append(args, store.Millis(d.At), d.RequestID, d.Method, d.Route, d.PrincipalID, d.Action, string(d.Capability),
					d.Scope.Tenant, d.Scope.Project, d.Scope.Environment, d.Scope.Resource, d.Allowed, d.Reason, d.GrantID)
			}
			var err error
			if n == auditRowsPerInsert {
				if full == nil {
					if full, err = tx.Prepare(auditInsert + auditValues(n)); err != nil {
						return err
					}
				}
				_, err = full.Exec(args...)
			} else {
				_, err = tx.Exec(auditInsert+auditValues(n), args...)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	a.pending.Add(-int64(len(batch)))
	if err != nil {
		a.log.Error("platform: could not record access decisions", "count", len(batch), "err", fmt.Errorf("audit: %w", err))
	}
}

// auditValues is the VALUES list of n rows.
func auditValues(n int) string {
	const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	return strings.Repeat(row+", ", n-1) + row
}

// PruneAudit deletes decisions older than cutoff.
func PruneAudit(ctx context.Context, tx *sql.Tx, cutoff time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM platform_access_audit WHERE at < ?`, store.Millis(cutoff))
	if err != nil {
		return 0, fmt.Errorf("identity: prune access audit: %w", err)
	}
	return res.RowsAffected()
}
