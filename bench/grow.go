package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/store/broker"
)

// grow makes dir a data directory holding n completed 3-step runs and n
// stored 1 KiB webhooks, quickly: one real run and one real webhook go
// through the daemon, then their rows (the run, its events and log lines,
// its idempotency record and access decisions) and the broker message are
// copied n-1 times straight into bridge.db and events.bolt, with the
// daemon stopped. The copies differ in their ids and times only, which is
// all the indexes see.
func grow(dir string, n int, progress func(string)) error {
	o, err := startOursChild(dir, "grow", "")
	if err != nil {
		return err
	}
	if err := o.start(context.Background(), 0); err != nil {
		_ = o.close()
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if done, _ := o.ended(); done >= 1 {
			break
		}
		if time.Now().After(deadline) {
			_ = o.close()
			return fmt.Errorf("grow: the template run did not end")
		}
	}
	if res := load(o.services+"/api/v1/webhook/bench", 1, 50*time.Millisecond); res.reqs == 0 {
		_ = o.close()
		return fmt.Errorf("grow: the template webhook was not accepted (errors %d)", res.errors)
	}
	if err := o.close(); err != nil {
		return err
	}
	t0 := time.Now()
	if err := growRuns(dir, n-1, progress); err != nil {
		return err
	}
	progress(fmt.Sprintf("%d runs copied in %s", n-1, time.Since(t0).Round(time.Second)))
	t0 = time.Now()
	if err := growWebhooks(dir, n-1, progress); err != nil {
		return err
	}
	progress(fmt.Sprintf("%d webhooks copied in %s", n-1, time.Since(t0).Round(time.Second)))
	return nil
}

// growRuns copies the directory's one run n times, 20,000 per transaction.
func growRuns(dir string, n int, progress func(string)) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "bridge.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var run, key string
	if err := db.QueryRow(`SELECT id FROM platform_runs LIMIT 1`).Scan(&run); err != nil {
		return fmt.Errorf("grow: template run: %w", err)
	}
	if err := db.QueryRow(`SELECT key FROM platform_idempotency WHERE key LIKE 'run-%' LIMIT 1`).Scan(&key); err != nil {
		return fmt.Errorf("grow: template idempotency record: %w", err)
	}
	cols := func(table string) ([]string, error) {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, rows.Err()
	}
	// id(i) is the canonical UUID of copy i; times go back i ms so the
	// copies spread over the time indexes as real runs would.
	const id = `printf('%08x-0000-7000-8000-%012x', n.i, n.i)`
	// runKey(i) is its run_key (migration 0037_run_keys), above the keys of
	// the directory's own runs.
	const runKey = `1000000000 + n.i`
	copies := []struct {
		table, where string
		set          map[string]string
	}{
		{"platform_runs", "t.id = ?1", map[string]string{"id": id, "run_key": runKey, "created_at": "t.created_at - n.i", "updated_at": "t.updated_at - n.i"}},
		{"platform_run_events", "t.run_key = (SELECT run_key FROM platform_runs WHERE id = ?1)", map[string]string{"run_key": runKey, "at": "t.at - n.i"}},
		{"platform_run_logs", "t.run_key = (SELECT run_key FROM platform_runs WHERE id = ?1)", map[string]string{"id": "NULL", "run_key": runKey, "at": "t.at - n.i"}},
		{"platform_idempotency", "t.key = ?4", map[string]string{"id": "randomblob(16)", "key": "t.key || '-' || n.i", "created_at": "t.created_at - n.i"}},
		{"platform_access_decisions", "t.seq = (SELECT max(seq) FROM platform_access_audit WHERE method = 'POST')",
			map[string]string{"seq": "NULL", "request_id": "t.request_id || n.i", "at": "t.at - n.i"}},
	}
	queries := make([]string, len(copies))
	for k, c := range copies {
		names, err := cols(c.table)
		if err != nil {
			return err
		}
		exprs := make([]string, len(names))
		for i, name := range names {
			exprs[i] = "t." + name
			if e, ok := c.set[name]; ok {
				exprs[i] = e
			}
		}
		queries[k] = fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM n WHERE i < ?3)
			INSERT INTO %s(%s) SELECT %s FROM n, %s t WHERE %s`, c.table, strings.Join(names, ", "), strings.Join(exprs, ", "), c.table, c.where)
	}
	const batch = 20000
	for from := 1; from <= n; from += batch {
		to := min(from+batch-1, n)
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		for k, q := range queries {
			if _, err := tx.Exec(q, run, from, to, key); err != nil {
				_ = tx.Rollback()
				return fmt.Errorf("grow: copy %s: %w", copies[k].table, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if to%200000 == 0 || to == n {
			progress(fmt.Sprintf("runs: %d of %d", to, n))
		}
	}
	_, err = db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// growWebhooks publishes n copies of the directory's one webhook message
// to its topic, 5,000 per commit.
func growWebhooks(dir string, n int, progress func(string)) error {
	bdb, err := bolt.Open(filepath.Join(dir, "events.bolt"), 0o600, &bolt.Options{Timeout: 5 * time.Second, NoSync: true})
	if err != nil {
		return err
	}
	defer bdb.Close()
	b, err := broker.NewBolt(bdb, broker.BoltOptions{})
	if err != nil {
		return err
	}
	defer b.Close()
	ctx := context.Background()
	topics, err := b.Topics(ctx)
	if err != nil {
		return err
	}
	var tmpl broker.Message
	for _, t := range topics {
		if !strings.HasPrefix(t, "bench") {
			continue
		}
		msgs, err := b.Read(ctx, t, 0, 1)
		if err != nil {
			return err
		}
		if len(msgs) > 0 {
			tmpl = msgs[0]
			break
		}
	}
	if tmpl.Topic == "" {
		return fmt.Errorf("grow: no webhook message among topics %v", topics)
	}
	const batch = 5000
	msgs := make([]broker.Message, 0, batch)
	for i := 1; i <= n; i++ {
		m := broker.Message{Topic: tmpl.Topic, Key: fmt.Sprint(tmpl.Key, "-", i), Headers: tmpl.Headers, Value: tmpl.Value}
		msgs = append(msgs, m)
		if len(msgs) == batch || i == n {
			if err := b.Publish(ctx, msgs...); err != nil {
				return err
			}
			msgs = msgs[:0]
		}
		if i%200000 == 0 {
			progress(fmt.Sprintf("webhooks: %d of %d", i, n))
		}
	}
	// The stored webhooks of a running daemon have been processed: the
	// copies are acknowledged for the ingest processor's group (ingest's
	// default "webhooks-processor"), so the grown daemon does not spend its
	// windows working through a backlog the fresh one does not have.
	var acked atomic.Int64
	all := make(chan struct{})
	sub, err := b.Subscribe(ctx, "webhooks-processor", []string{tmpl.Topic}, func(context.Context, broker.Message) error {
		if acked.Add(1) == int64(n) {
			close(all)
		}
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
	}
	if err := sub.Close(); err != nil {
		return err
	}
	progress(fmt.Sprintf("webhooks: %d acknowledged for webhooks-processor", acked.Load()))
	if err := b.Close(); err != nil {
		return err
	}
	return bdb.Sync()
}

// fileSize is the size of dir/name, or 0.
func fileSize(dir, name string) int64 {
	st, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	return st.Size()
}
