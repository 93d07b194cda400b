package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// migrationsUpTo are the engine's migrations up to version v: the schema of
// an older data directory.
func migrationsUpTo(v int) []store.Migration {
	var out []store.Migration
	for _, m := range Migrations() {
		if m.Version <= v {
			out = append(out, m)
		}
	}
	return out
}

// oldDataDir writes bridge.db with the engine's schema up to version v and
// runs fill on it with foreign keys off (the platform's other tables, which
// the rows would refer to, are not part of the engine's migrations).
func oldDataDir(t *testing.T, v int, fill func(db *sql.DB)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bridge.db")
	if _, err := store.Migrate(context.Background(), path, migrationsUpTo(v)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fill(db)
	return path
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestLogRecordsMigration opens a data directory whose record log lines
// repeat their event's records (as written before migration 0033) and reads
// the log back after migrating: every line answers the data it had, and
// the lines that repeated a record keep a reference to it instead.
func TestLogRecordsMigration(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 11, 27, 8, 30, 46, 984e6, time.UTC)
	run := "01a21c20-e2c8-72e3-b907-c170ec150f2d"
	recs := []*kernel.Record{
		{Type: kernel.RecordStepStarted, Seq: 2, EventID: "01a21c20-e2c8-797f-a4fe-14d8ce83bf6e", ObservedAt: at, NodeID: "greet", Instance: "greet", Generation: 1},
		// Go escapes <, > and & in JSON text; the conversion must keep
		// the stored bytes, whatever SQLite's JSON functions render.
		{Type: kernel.RecordTaskRetryScheduled, Seq: 2, ObservedAt: at, NodeID: "n", Instance: "n", Attempt: 2, Detail: "a <b> & \"c\" é \u2028"},
	}
	enc := func(v any) string {
		raw, err := json.Marshal(v)
		is.NoErr(err)
		return string(raw)
	}
	type old struct {
		seq  any
		typ  string
		data any
	}
	lines := []old{
		{2, recs[0].Type, enc(recs[0])},
		{2, recs[1].Type, enc(recs[1])},
		{2, "run_note", `{"not":"a record"}`},
		{2, "step_started", `{"type":"step_started"}`}, // not one of the records: kept
		{nil, "task_call", enc(recs[0])},               // no event: kept
		{3, "step_started", enc(recs[0])},              // event 3's records do not parse: kept
		{2, "run_succeeded", nil},
	}
	path := oldDataDir(t, 32, func(db *sql.DB) {
		mustExec(t, db, `INSERT INTO platform_runs(id, tenant_id, project_id, environment_id, activation_id, status, state, seq, created_at, updated_at, created_by)
			VALUES (?, 't', 'p', 'e', 'a', 'succeeded', '{}', 3, 1, 1, 'u')`, run)
		mustExec(t, db, `INSERT INTO platform_run_events(run_id, seq, kind, payload, records, at) VALUES (?, 2, 'task_completed', '{}', ?, 1), (?, 3, 'task_completed', '{}', '[{broken', 1)`,
			run, enc(recs), run)
		for _, l := range lines {
			mustExec(t, db, `INSERT INTO platform_run_logs(run_id, at, seq, level, type, node_id, message, data) VALUES (?, 1, ?, 'info', ?, NULL, 'm', ?)`,
				run, l.seq, l.typ, l.data)
		}
	})
	applied, err := store.Migrate(context.Background(), path, Migrations())
	is.NoErr(err)
	is.Equal(applied[0].Name, "0033_run_log_records")
	db, err := store.Open(context.Background(), path, Migrations(), store.Options{})
	is.NoErr(err)
	defer db.Close()

	got, err := listLogLines(context.Background(), db.Reader(), LogQuery{RunID: run, Limit: 100})
	is.NoErr(err)
	is.Equal(len(got), len(lines))
	for i, l := range lines {
		want := "null"
		if l.data != nil {
			want = l.data.(string)
		}
		data, err := json.Marshal(got[i].Data)
		is.NoErr(err)
		is.Equal(string(data), want) // the line's data, byte for byte
	}
	// The first two lines now refer to records 0 and 1 of event 2; the
	// others keep what they had.
	var refs []string
	err = eachRow(context.Background(), db.Reader(), "read", `SELECT coalesce(record, -1), data IS NULL FROM platform_run_logs ORDER BY id`, nil,
		func(rows *sql.Rows) error {
			var rec int
			var null bool
			if err := rows.Scan(&rec, &null); err != nil {
				return err
			}
			refs = append(refs, map[bool]string{true: "null", false: "data"}[null]+":"+string(rune('0'+rec+1)))
			return nil
		})
	is.NoErr(err)
	is.Equal(refs, []string{"null:1", "null:2", "data:0", "data:0", "data:0", "data:0", "null:0"})
	// A type filter and a resume point work on converted lines too.
	got, err = listLogLines(context.Background(), db.Reader(), LogQuery{RunID: run, Types: []string{recs[1].Type}, After: got[0].ID, Limit: 10})
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(string(got[0].Data), enc(recs[1]))
}

// TestRunKeysMigration opens a data directory whose log lines name their
// run by its id: after 0037_run_keys they name its run_key, read back the
// same (ids, order, filters, cursor), and the log's id sequence continues
// where it was (a deleted line's id is not given again).
func TestRunKeysMigration(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	runs := []string{"01a21c20-e2c8-72e3-b907-c170ec150f2d", "01a21c20-e2c8-72e3-b907-c170ec150f2e"}
	path := oldDataDir(t, 36, func(db *sql.DB) {
		for _, run := range runs {
			mustExec(t, db, `INSERT INTO platform_runs(id, tenant_id, project_id, environment_id, activation_id, status, state, seq, created_at, updated_at, created_by)
				VALUES (?, 't', 'p', 'e', 'a', 'succeeded', '{}', 2, 1, 1, 'u')`, run)
		}
		mustExec(t, db, `INSERT INTO platform_run_events(run_id, seq, kind, payload, records, at) VALUES (?, 2, 'task_completed', '{}', '[{"type":"step_started","seq":2}]', 5)`, runs[0])
		for i := range 7 {
			mustExec(t, db, `INSERT INTO platform_run_logs(run_id, at, seq, level, type, node_id, message, data, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				runs[i%2], 10+i, map[bool]any{true: 2, false: nil}[i == 0], map[bool]string{true: "warn", false: "info"}[i == 3],
				fmt.Sprintf("type_%d", i%3), map[bool]any{true: "n", false: nil}[i%2 == 1], fmt.Sprintf("line %d", i),
				map[bool]any{true: `{"x":1}`, false: nil}[i == 2], map[bool]any{true: 0, false: nil}[i == 0])
		}
		mustExec(t, db, `DELETE FROM platform_run_logs WHERE id = 7`)
	})
	read := func(db store.Querier, q LogQuery) string {
		lines, err := listLogLines(ctx, db, q)
		is.NoErr(err)
		raw, err := json.Marshal(lines)
		is.NoErr(err)
		return string(raw)
	}
	applied, err := store.Migrate(ctx, path, Migrations())
	is.NoErr(err)
	is.Equal(applied[0].Name, "0037_run_keys")
	db, err := store.Open(ctx, path, Migrations(), store.Options{})
	is.NoErr(err)
	is.Equal(read(db.Reader(), LogQuery{RunID: runs[0], Limit: 10}),
		`[{"id":1,"at":"1970-01-01T00:00:00.01Z","seq":2,"level":"info","type":"type_0","node_id":null,"message":"line 0","data":{"type":"step_started","seq":2}},`+
			`{"id":3,"at":"1970-01-01T00:00:00.012Z","seq":null,"level":"info","type":"type_2","node_id":null,"message":"line 2","data":{"x":1}},`+
			`{"id":5,"at":"1970-01-01T00:00:00.014Z","seq":null,"level":"info","type":"type_1","node_id":null,"message":"line 4","data":null}]`)
	is.Equal(read(db.Reader(), LogQuery{RunID: runs[1], Limit: 10}),
		`[{"id":2,"at":"1970-01-01T00:00:00.011Z","seq":null,"level":"info","type":"type_1","node_id":"n","message":"line 1","data":null},`+
			`{"id":4,"at":"1970-01-01T00:00:00.013Z","seq":null,"level":"warn","type":"type_0","node_id":"n","message":"line 3","data":null},`+
			`{"id":6,"at":"1970-01-01T00:00:00.015Z","seq":null,"level":"info","type":"type_2","node_id":"n","message":"line 5","data":null}]`)
	is.Equal(read(db.Reader(), LogQuery{RunID: runs[1], After: 2, MinLevel: "warn", Limit: 10}),
		`[{"id":4,"at":"1970-01-01T00:00:00.013Z","seq":null,"level":"warn","type":"type_0","node_id":"n","message":"line 3","data":null}]`)
	// The events were converted too (0038_run_event_keys), as stored, and
	// stay append-only.
	var recs []kernel.Record
	is.NoErr(scanRecords(ctx, db.Reader(), runs[0], 10, func(r []kernel.Record, _ string, _ *kernel.TaskError) { recs = append(recs, r...) }))
	is.Equal(len(recs), 1)
	is.Equal(recs[0].Type, "step_started")
	err = db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM platform_run_events`)
		return err
	})
	is.True(err != nil && strings.Contains(err.Error(), "append-only"))
	// A new line continues the sequence past the deleted line 7; a new
	// run gets the next key.
	is.NoErr(db.Close())
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(0)") // the platform's tables the run refers to are not here
	is.NoErr(err)
	defer raw.Close()
	tx, err := raw.Begin()
	is.NoErr(err)
	added := runRow{ID: "01a21c20-e2c8-72e3-b907-c170ec150f2f", Tenant: "t", Project: "p", Environment: "e", ActivationID: "a", CreatedBy: "u"}
	is.NoErr(insertRun(ctx, tx, &added))
	is.Equal(added.Key, int64(3)) // answered to the caller, as stored
	is.NoErr(writeLog(ctx, tx, runs[0], logLine{At: time.UnixMilli(20), Type: "later", Message: "m"}))
	is.NoErr(tx.Commit())
	var id, key int64
	is.NoErr(raw.QueryRow(`SELECT max(id) FROM platform_run_logs`).Scan(&id))
	is.Equal(id, int64(8))
	is.NoErr(raw.QueryRow(`SELECT run_key FROM platform_runs WHERE id = '01a21c20-e2c8-72e3-b907-c170ec150f2f'`).Scan(&key))
	is.Equal(key, int64(3))
}
