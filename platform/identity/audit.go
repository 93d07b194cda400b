package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	// contexts are the keys of the access contexts stored, read and
	// written by the writer goroutine only, at most maxCachedContexts.
	contexts map[auditContext]int64
	// pruned counts prunes that deleted contexts; the writer forgets its
	// cached keys when it changed (contextsSeen), since a deleted key may
	// be given to another context.
	pruned       atomic.Int64
	contextsSeen int64
	// pending counts decisions recorded and not yet written.
	pending atomic.Int64

	mu     sync.RWMutex
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// NewAuditLog starts the writer.
func NewAuditLog(db *store.DB, log *slog.Logger) *AuditLog {
	a := &AuditLog{db: db, log: log, ch: make(chan api.Decision, auditQueue), contexts: map[auditContext]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
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

// auditRowsPerInsert is how many rows one INSERT statement carries (4
// parameters each, far below SQLite's limit); multi-row inserts cut the
// per-row cost of the audit roughly in half.
const auditRowsPerInsert = 64

// maxCachedContexts bounds the writer's memory of context keys: contexts
// come from request values (a method, scope ids in the path), so a client
// can make many; past the bound the cache starts over and keys are read
// from platform_access_contexts again.
const maxCachedContexts = 4096

// A decision is stored as its time, request id, resource and the key of
// its context in platform_access_contexts (migration
// 0036_access_audit_compact): the rest repeats for every request of a
// principal on a route. platform_access_audit is the view that joins them.
const auditInsert = `INSERT INTO platform_access_decisions(at, request_id, context_id, resource_id) VALUES `

// auditContext is a decision without its time, request id and resource:
// one row of platform_access_contexts.
type auditContext struct {
	method, route, principal, action, capability string
	tenant, project, environment                 string
	allowed                                      bool
	reason, grant                                string
}

func contextOf(d api.Decision) auditContext {
	return auditContext{d.Method, d.Route, d.PrincipalID, d.Action, string(d.Capability),
		d.Scope.Tenant, d.Scope.Project, d.Scope.Environment, d.Allowed, d.Reason, d.GrantID}
}

// contextID answers the key of c, stored in tx if it is new. known holds
// the keys committed before; added those found or stored in this
// transaction, merged into known once it commits.
func contextID(tx *sql.Tx, c auditContext, known, added map[auditContext]int64) (int64, error) {
	if id, ok := known[c]; ok {
		return id, nil
	}
	if id, ok := added[c]; ok {
		return id, nil
	}
	args := []any{c.method, c.route, c.principal, c.action, c.capability, c.tenant, c.project, c.environment, c.allowed, c.reason, c.grant}
	var id int64
	err := tx.QueryRow(`SELECT id FROM platform_access_contexts WHERE method = ? AND route = ? AND principal_id = ? AND action = ?
		AND capability = ? AND tenant_id = ? AND project_id = ? AND environment_id = ? AND allowed = ? AND reason = ? AND grant_id = ?`, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRow(`INSERT INTO platform_access_contexts(method, route, principal_id, action, capability, tenant_id, project_id,
			environment_id, allowed, reason, grant_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, args...).Scan(&id)
	}
	if err != nil {
		return 0, fmt.Errorf("access context: %w", err)
	}
	added[c] = id
	return id, nil
}

func (a *AuditLog) write(batch []api.Decision) {
	var added map[auditContext]int64
	// A background context: decisions are written even while the daemon
	// shuts down (the database closes after every subsystem).
	err := a.db.Write(context.Background(), func(tx *sql.Tx) error {
		added = map[auditContext]int64{} // a retried transaction starts over
		// Prune runs in its own write transaction; writes are serial, so a
		// prune that deleted contexts has committed (or rolled back) when
		// this transaction starts.
		if n := a.pruned.Load(); n != a.contextsSeen {
			clear(a.contexts)
			a.contextsSeen = n
		}
		args := make([]any, 0, auditRowsPerInsert*4)
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
				id, err := contextID(tx, contextOf(d), a.contexts, added)
				if err != nil {
					return err
				}
				args = append(args, store.Millis(d.At), d.RequestID, id, d.Scope.Resource)
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
	if err == nil {
		if len(a.contexts)+len(added) > maxCachedContexts {
			clear(a.contexts)
		}
		maps.Copy(a.contexts, added) // a batch adds fewer than the cap
	}
	a.pending.Add(-int64(len(batch)))
	if err != nil {
		a.log.Error("platform: could not record access decisions", "count", len(batch), "err", fmt.Errorf("audit: %w", err))
	}
}

// auditValues is the VALUES list of n rows.
func auditValues(n int) string {
	const row = "(?, ?, ?, ?)"
	return strings.Repeat(row+", ", n-1) + row
}

// Prune deletes decisions older than cutoff, then the contexts no
// decision refers to any more (platform_access_decisions_context), so the
// audit's retention bounds contexts too (docs/retention.md).
func (a *AuditLog) Prune(ctx context.Context, tx *sql.Tx, cutoff time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM platform_access_decisions WHERE at < ?`, store.Millis(cutoff))
	if err != nil {
		return 0, fmt.Errorf("identity: prune access audit: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	res, err = tx.ExecContext(ctx, `DELETE FROM platform_access_contexts WHERE NOT EXISTS
		(SELECT 1 FROM platform_access_decisions d WHERE d.context_id = platform_access_contexts.id)`)
	if err != nil {
		return 0, fmt.Errorf("identity: prune access contexts: %w", err)
	}
	if gone, err := res.RowsAffected(); err == nil && gone > 0 {
		a.pruned.Add(1)
	}
	return n, nil
}
