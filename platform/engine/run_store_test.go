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

// TestInsertManyRows appends more events and outbox events in one call
// than one statement may carry (SQLite refuses more than 32,766
// variables; an event row has 6, an outbox row 5): every row is stored,
// in order.
func TestInsertManyRows(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	_, err := store.Migrate(ctx, path, Migrations())
	is.NoErr(err)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(0)") // the platform's tables the run refers to are not here
	is.NoErr(err)
	defer db.Close()
	const run = "01a21c20-e2c8-72e3-b907-c170ec150f2f"
	const nEvents, nOutbox = 32766/6 + 100, 32766/5 + 100
	at := time.UnixMilli(1_800_000_000_000)
	events := make([]eventEntry, nEvents)
	for i := range events {
		events[i] = eventEntry{seq: int64(i + 1), kind: "k", payload: fmt.Sprintf(`{"i":%d}`, i), records: "[]", at: at}
	}
	outbox := make([]outboxEntry, nOutbox)
	for i := range outbox {
		outbox[i] = outboxEntry{id: fmt.Sprintf("ev-%06d", i), typ: "run.updated", payload: []byte(`{}`), at: at}
	}
	tx, err := db.Begin()
	is.NoErr(err)
	is.NoErr(insertRun(ctx, tx, &runRow{ID: run, Tenant: "t", Project: "p", Environment: "e", ActivationID: "a", CreatedBy: "u"}))
	is.NoErr(insertKeyedEvents(ctx, tx, run, 0, events))
	is.NoErr(insertOutbox(ctx, tx, run, outbox))
	is.NoErr(tx.Commit())

	var n, minSeq, maxSeq int64
	var first, last string
	is.NoErr(db.QueryRow(`SELECT count(*), min(seq), max(seq) FROM platform_run_events`).Scan(&n, &minSeq, &maxSeq))
	is.Equal([]int64{n, minSeq, maxSeq}, []int64{nEvents, 1, nEvents})
	// Rows keep their order: seq follows the insertion order (rowid).
	is.NoErr(db.QueryRow(`SELECT count(*) FROM platform_run_events a JOIN platform_run_events b ON b.rowid = a.rowid + 1 WHERE b.seq <> a.seq + 1`).Scan(&n))
	is.Equal(n, int64(0))
	is.NoErr(db.QueryRow(`SELECT count(*), min(event_id), max(event_id) FROM platform_outbox WHERE run_id = ?`, run).Scan(&n, &first, &last))
	is.Equal(n, int64(nOutbox))
	is.Equal(first, "ev-000000")
	is.Equal(last, fmt.Sprintf("ev-%06d", nOutbox-1))
	is.NoErr(db.QueryRow(`SELECT count(*) FROM platform_outbox a JOIN platform_outbox b ON b.id = a.id + 1 WHERE b.event_id <= a.event_id`).Scan(&n))
	is.Equal(n, int64(0))
}
