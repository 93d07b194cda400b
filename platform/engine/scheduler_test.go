package engine

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/store"
)

// schedulerDB has just the columns the scheduler's picks read.
func schedulerDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), []store.Migration{{Version: 1, Name: "0001_runs", SQL: `
		CREATE TABLE platform_runs (id TEXT PRIMARY KEY, tenant_id TEXT, environment_id TEXT, needs_work INTEGER, paused INTEGER, updated_at INTEGER);
		CREATE TABLE platform_run_timers (run_id TEXT, timer_id TEXT, due_at INTEGER);
		CREATE TABLE platform_worker_tasks (task_id TEXT, run_id TEXT, status TEXT, deadline_at INTEGER, lease_expires_at INTEGER);`}}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSchedulerServesTenantsFairly(t *testing.T) {
	is := is.New(t)
	db := schedulerDB(t)
	ctx := context.Background()
	is.NoErr(db.Write(ctx, func(tx *sql.Tx) error {
		add := func(id, tenant, env string, work, paused bool, at int64) {
			if _, err := tx.Exec(`INSERT INTO platform_runs VALUES (?, ?, ?, ?, ?, ?)`, id, tenant, env, work, paused, at); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO platform_run_timers VALUES (?, 't', ?)`, id, at); err != nil {
				t.Fatal(err)
			}
		}
		// Tenant "big" has a backlog of 50 old runs in env b1 and newer
		// ones in b2; 20 other tenants have one newer run each.
		for i := range 50 {
			add(fmt.Sprintf("big-%02d", i), "big", "b1", true, false, int64(i))
		}
		add("big-b2", "big", "b2", true, false, 60)
		for i := range 20 {
			add(fmt.Sprintf("t%02d", i), fmt.Sprintf("tenant-%02d", i), "e"+fmt.Sprint(i), true, false, int64(100+i))
		}
		add("paused", "tenant-00", "e0", true, true, 1)
		add("idle", "tenant-01", "e1", false, false, 1)
		return nil
	}))
	for _, q := range []struct {
		name  string
		query string
		args  []any
	}{
		{"work", workQuery, []any{MaxTenantsPerTurn, BatchSize}},
		{"due", dueQuery, []any{int64(1000), MaxTenantsPerTurn, BatchSize}},
	} {
		ids, err := idsWhere(ctx, db.Reader(), q.query, q.args...)
		is.NoErr(err)
		// 10 of the backlog (one environment of "big"; b2 waits), then the
		// runs of 15 other tenants, in time order: 16 tenants in all; the
		// paused run never. Only timers: "idle" (no work, a due timer) is
		// picked, in its tenant's environment.
		want := []string{}
		for i := range BatchSize {
			want = append(want, fmt.Sprintf("big-%02d", i))
		}
		if q.name == "due" {
			want = append(want[:2], append([]string{"idle"}, want[2:]...)...)
		}
		for i := range MaxTenantsPerTurn - 1 {
			want = append(want, fmt.Sprintf("t%02d", i))
		}
		is.Equal(ids, want)
	}
}

func TestLoopSleepsUntilTheNextDueTime(t *testing.T) {
	is := is.New(t)
	db := schedulerDB(t)
	ctx := context.Background()
	s, err := New(Options{DB: db, Box: testBox(t)})
	is.NoErr(err)
	exec := func(q string, args ...any) {
		is.NoErr(db.Write(ctx, func(tx *sql.Tx) error { _, err := tx.Exec(q, args...); return err }))
	}
	is.Equal(s.untilNextDue(ctx), PollInterval) // nothing due
	now := time.Now()
	// A paused run's past timer does not count.
	exec(`INSERT INTO platform_runs VALUES ('p', 't', 'e', 0, 1, 0)`)
	exec(`INSERT INTO platform_run_timers VALUES ('p', 'x', ?)`, now.Add(-time.Hour).UnixMilli())
	is.Equal(s.untilNextDue(ctx), PollInterval)
	// A timer 80 ms ahead wakes the loop then, not a poll later.
	exec(`INSERT INTO platform_runs VALUES ('r', 't', 'e', 0, 0, 0)`)
	exec(`INSERT INTO platform_run_timers VALUES ('r', 'x', ?)`, now.Add(80*time.Millisecond).UnixMilli())
	d := s.untilNextDue(ctx)
	is.True(d > 0 && d <= 80*time.Millisecond)
	// The passed claim deadline of a paused run's task does not count (the
	// loop leaves it alone until the run resumes); a claim deadline or a
	// lease expiry of other runs counts.
	exec(`INSERT INTO platform_worker_tasks VALUES ('w0', 'p', 'ready', ?, NULL)`, now.Add(-time.Hour).UnixMilli())
	d = s.untilNextDue(ctx)
	is.True(d > 0 && d <= 80*time.Millisecond)
	exec(`INSERT INTO platform_worker_tasks VALUES ('w1', 'r', 'ready', ?, NULL)`, now.Add(30*time.Millisecond).UnixMilli())
	is.True(s.untilNextDue(ctx) <= 30*time.Millisecond)
	exec(`INSERT INTO platform_worker_tasks VALUES ('w2', 'r', 'leased', NULL, ?)`, now.Add(-time.Second).UnixMilli())
	is.Equal(s.untilNextDue(ctx), pastDueRetry) // due already: look again soon, no spin
}
