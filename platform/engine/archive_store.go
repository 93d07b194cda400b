package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/bridge/store"
)

// The SQL of archiving, restoring and purging runs (archive.go).

// archiveFacts is what the archive operations read of a run.
type archiveFacts struct {
	ID, Environment, Status string
	Seq                     int64
	ArchivedAt              *time.Time
	// Busy: the engine still has work for the run (inline work, held
	// events, a dispatched call or a worker task in flight).
	Busy bool
}

// readArchiveFacts reads run id of environment env (errNotFound when absent).
func readArchiveFacts(ctx context.Context, q store.Querier, env, id string) (archiveFacts, error) {
	var f archiveFacts
	var archived sql.NullInt64
	var busy int
	err := q.QueryRowContext(ctx, `SELECT r.id, r.environment_id, r.status, r.seq, r.archived_at,
		r.needs_work
		 + EXISTS (SELECT 1 FROM platform_run_inbox WHERE run_id = r.id)
		 + EXISTS (SELECT 1 FROM platform_task_dispatches WHERE run_id = r.id)
		 + EXISTS (SELECT 1 FROM platform_worker_tasks WHERE run_id = r.id)
		FROM platform_runs r WHERE r.id = ? AND r.environment_id = ?`, id, env).
		Scan(&f.ID, &f.Environment, &f.Status, &f.Seq, &archived, &busy)
	if errors.Is(err, sql.ErrNoRows) {
		return f, errNotFound
	}
	if err != nil {
		return f, fmt.Errorf("engine: read run %s for archiving: %w", id, err)
	}
	if archived.Valid {
		t := store.FromMillis(archived.Int64)
		f.ArchivedAt = &t
	}
	f.Busy = busy > 0
	return f, nil
}

// archivedEvent and archivedLog are the rows kept in an archive, their
// stored text unchanged (a sealed payload stays sealed).
type archivedEvent struct {
	Seq     int64  `json:"s"`
	Kind    string `json:"k"`
	Payload string `json:"p"`
	Records string `json:"r"`
	At      int64  `json:"a"`
}

type archivedLog struct {
	ID      int64   `json:"i"`
	At      int64   `json:"a"`
	Seq     *int64  `json:"s,omitempty"`
	Level   string  `json:"l"`
	Type    string  `json:"t"`
	Node    *string `json:"n,omitempty"`
	Message string  `json:"m"`
	Data    *string `json:"d,omitempty"`
	// Record: the line's data is, byte for byte, record Record of event
	// Seq's records (a history fact's log line), so it is not kept twice.
	Record *int `json:"r,omitempty"`
}

// eventRecords splits each event's records into their stored texts, by
// sequence number (records that do not parse are left out: their log
// lines keep their data).
func eventRecords(evs []archivedEvent) map[int64][]json.RawMessage {
	out := make(map[int64][]json.RawMessage, len(evs))
	for _, e := range evs {
		var recs []json.RawMessage
		if json.Unmarshal([]byte(e.Records), &recs) == nil {
			out[e.Seq] = recs
		}
	}
	return out
}

// maxArchiveBytes bounds the unpacked history of one archive: store.Unpack
// refuses more than 64 MiB, so a larger history stays live.
const maxArchiveBytes = 60 << 20

// errTooLarge: the run's history is over maxArchiveBytes.
var errTooLarge = errors.New("engine: history too large to archive")

// archivedHistory is an archive's content: one document, so that one zstd
// frame compresses the ids and names events and log lines share.
type archivedHistory struct {
	Events []archivedEvent `json:"e"`
	Logs   []archivedLog   `json:"l"`
}

// packHistory reads run id's events and log lines and answers them packed.
func packHistory(ctx context.Context, tx *sql.Tx, id string) (packed []byte, nEvents, nLogs int, err error) {
	evs := []archivedEvent{}
	if err := eachRow(ctx, tx, "archive events", `SELECT seq, kind, payload, records, at FROM platform_run_events
		WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?) ORDER BY seq`,
		[]any{id}, func(rows *sql.Rows) error {
			var e archivedEvent
			if err := rows.Scan(&e.Seq, &e.Kind, &e.Payload, &e.Records, &e.At); err != nil {
				return err
			}
			// The archive keeps whole values (compact ones expanded,
			// event_codec.go); one zstd frame compresses their repeats.
			at := store.FromMillis(e.At)
			payload, err := expandPayload([]byte(e.Payload), e.Seq, at, e.Kind, id)
			if err != nil {
				return err
			}
			records, err := expandRecords([]byte(e.Records), e.Seq, at, []byte(e.Payload))
			if err != nil {
				return err
			}
			e.Payload, e.Records = string(payload), string(records)
			evs = append(evs, e)
			return nil
		}); err != nil {
		return nil, 0, 0, err
	}
	lines := []archivedLog{}
	if err := eachRow(ctx, tx, "archive logs", `SELECT id, at, seq, level, type, node_id, message, data, record FROM platform_run_logs
		WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?) ORDER BY id`,
		[]any{id}, func(rows *sql.Rows) error {
			var l archivedLog
			var seq, record sql.NullInt64
			var node, data sql.NullString
			if err := rows.Scan(&l.ID, &l.At, &seq, &l.Level, &l.Type, &node, &l.Message, &data, &record); err != nil {
				return err
			}
			if seq.Valid {
				l.Seq = &seq.Int64
			}
			if record.Valid {
				r := int(record.Int64)
				l.Record = &r
			}
			l.Node, l.Data = nullable(node), nullable(data)
			lines = append(lines, l)
			return nil
		}); err != nil {
		return nil, 0, 0, err
	}
	recs := eventRecords(evs)
	for i := range lines {
		l := &lines[i]
		if l.Seq == nil || l.Data == nil {
			continue
		}
		for j, r := range recs[*l.Seq] {
			if string(r) == *l.Data {
				l.Record, l.Data = &j, nil
				break
			}
		}
	}
	doc, err := json.Marshal(archivedHistory{Events: evs, Logs: lines})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("engine: encode archived history: %w", err)
	}
	if len(doc) > maxArchiveBytes {
		return nil, 0, 0, errTooLarge
	}
	return store.Pack(doc), len(evs), len(lines), nil
}

// storeArchive moves run id's history into its archive row: the row is
// written first, since the events' delete trigger allows deleting only the
// events of an archived run.
func storeArchive(ctx context.Context, tx *sql.Tx, id string, packed []byte, nEvents, nLogs int, at time.Time) error {
	for _, st := range []struct {
		what, sql string
		args      []any
	}{
		{"insert archive", `INSERT INTO platform_run_archives(run_id, history, event_count, log_count, archived_at) VALUES (?, ?, ?, ?, ?)`,
			[]any{id, packed, nEvents, nLogs, store.Millis(at)}},
		{"delete archived events", `DELETE FROM platform_run_events WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)`, []any{id}},
		{"delete archived logs", `DELETE FROM platform_run_logs WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)`, []any{id}},
		{"mark archived", `UPDATE platform_runs SET archived_at = ? WHERE id = ?`, []any{store.Millis(at), id}},
	} {
		if _, err := tx.ExecContext(ctx, st.sql, st.args...); err != nil {
			return fmt.Errorf("engine: %s of run %s: %w", st.what, id, err)
		}
	}
	return nil
}

// restoreArchive puts run id's archived history back, with its sequence
// numbers and log ids (cursors into the history and the log stay valid),
// and drops the archive row. It answers the counts restored.
func restoreArchive(ctx context.Context, tx *sql.Tx, id string) (int, int, error) {
	var packed []byte
	if err := tx.QueryRowContext(ctx, `SELECT history FROM platform_run_archives WHERE run_id = ?`, id).Scan(&packed); err != nil {
		return 0, 0, fmt.Errorf("engine: read archive of run %s: %w", id, err)
	}
	raw, err := store.Unpack(packed)
	if err != nil {
		return 0, 0, fmt.Errorf("engine: archive of run %s: %w", id, err)
	}
	var h archivedHistory
	if err := json.Unmarshal(raw, &h); err != nil {
		return 0, 0, fmt.Errorf("engine: archive of run %s: %w", id, err)
	}
	evs, lines := h.Events, h.Logs
	for _, e := range evs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_events(run_key, seq, kind, payload, records, at)
			VALUES ((SELECT run_key FROM platform_runs WHERE id = ?), ?, ?, ?, ?, ?)`,
			id, e.Seq, e.Kind, e.Payload, e.Records, e.At); err != nil {
			return 0, 0, fmt.Errorf("engine: restore event %d of run %s: %w", e.Seq, id, err)
		}
	}
	recs := eventRecords(evs)
	for _, l := range lines {
		// A line referring to its event's record is restored as such
		// (listLogLines reads the record from the event).
		if l.Record != nil {
			if l.Seq == nil || *l.Record < 0 || *l.Record >= len(recs[*l.Seq]) {
				return 0, 0, fmt.Errorf("engine: archive of run %s: log line %d names a record that is not there", id, l.ID)
			}
			l.Data = nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_run_logs(id, run_key, at, seq, level, type, node_id, message, data, record)
			VALUES (?, (SELECT run_key FROM platform_runs WHERE id = ?), ?, ?, ?, ?, ?, ?, ?, ?)`,
			l.ID, id, l.At, l.Seq, l.Level, l.Type, l.Node, l.Message, l.Data, l.Record); err != nil {
			return 0, 0, fmt.Errorf("engine: restore log line %d of run %s: %w", l.ID, id, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform_run_archives WHERE run_id = ?`, id); err != nil {
		return 0, 0, fmt.Errorf("engine: drop archive of run %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET archived_at = NULL WHERE id = ?`, id); err != nil {
		return 0, 0, fmt.Errorf("engine: unmark archived run %s: %w", id, err)
	}
	return len(evs), len(lines), nil
}

// purgeBlocker names what still refers to run id ("" when nothing does):
// another run (a retry's parent, a child's caller) or a step test.
func purgeBlocker(ctx context.Context, q store.Querier, id string) (string, error) {
	var what string
	err := q.QueryRowContext(ctx, `SELECT what FROM (
		SELECT 'run ' || id AS what FROM platform_runs WHERE parent_run_id = ?1 OR caller_run_id = ?1
		UNION ALL SELECT 'step test ' || id FROM platform_step_tests WHERE run_id = ?1
		UNION ALL SELECT 'test delivery of ' || run_id FROM platform_test_deliveries WHERE run_id = ?1) LIMIT 1`, id).Scan(&what)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("engine: references to run %s: %w", id, err)
	}
	return what, nil
}

// deleteRun deletes run id and every row that belongs to it. The archive
// row goes last: the events' delete trigger needs it.
func deleteRun(ctx context.Context, tx *sql.Tx, id string) error {
	for _, st := range []struct{ what, sql string }{
		{"incident receipts", `DELETE FROM platform_incident_receipts WHERE incident_id IN (SELECT incident_id FROM platform_run_incidents WHERE run_id = ?)`},
		{"incidents", `DELETE FROM platform_run_incidents WHERE run_id = ?`},
		{"worker task ends", `DELETE FROM platform_worker_task_ends WHERE run_id = ?`},
		{"worker tasks", `DELETE FROM platform_worker_tasks WHERE run_id = ?`},
		{"human tasks", `DELETE FROM platform_human_tasks WHERE run_id = ?`},
		{"dispatches", `DELETE FROM platform_task_dispatches WHERE run_id = ?`},
		{"timers", `DELETE FROM platform_run_timers WHERE run_id = ?`},
		{"inbox", `DELETE FROM platform_run_inbox WHERE run_id = ?`},
		{"file references", `DELETE FROM platform_file_refs WHERE run_id = ?`},
		{"events", `DELETE FROM platform_run_events WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)`},
		{"logs", `DELETE FROM platform_run_logs WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)`},
		{"archive", `DELETE FROM platform_run_archives WHERE run_id = ?`},
		{"run", `DELETE FROM platform_runs WHERE id = ?`},
	} {
		if _, err := tx.ExecContext(ctx, st.sql, id); err != nil {
			return fmt.Errorf("engine: purge %s of run %s: %w", st.what, id, err)
		}
	}
	return nil
}

// runRef is a run of a retention queue: its id, environment and place in
// the queue (the time it is ordered by, then its rowid).
type runRef struct {
	ID, Environment string
	At, RowID       int64
}

// dueFunc answers at most limit runs of a retention queue due before
// cutoff, after the cursor, in queue order.
type dueFunc func(ctx context.Context, q store.Querier, cutoff time.Time, after retentionCursor, limit int) ([]runRef, error)

// dueForArchive is the archiving queue: ended runs, not archived, by the
// time of their last event (index platform_runs_unarchived).
func dueForArchive(ctx context.Context, q store.Querier, cutoff time.Time, after retentionCursor, limit int) ([]runRef, error) {
	return runRefs(ctx, q, "runs due for archiving", `SELECT id, environment_id, updated_at, rowid FROM platform_runs
		WHERE archived_at IS NULL AND updated_at < ? AND (updated_at > ? OR (updated_at = ? AND rowid > ?))
		AND status IN ('succeeded', 'failed', 'cancelled', 'timed_out')
		ORDER BY updated_at, rowid LIMIT ?`, store.Millis(cutoff), after.at, after.at, after.rowid, limit)
}

// dueForPurge is the purging queue: archived runs by archive time (index
// platform_runs_archived).
func dueForPurge(ctx context.Context, q store.Querier, cutoff time.Time, after retentionCursor, limit int) ([]runRef, error) {
	return runRefs(ctx, q, "runs due for purging", `SELECT id, environment_id, archived_at, rowid FROM platform_runs
		WHERE archived_at IS NOT NULL AND archived_at < ? AND (archived_at > ? OR (archived_at = ? AND rowid > ?))
		ORDER BY archived_at, rowid LIMIT ?`, store.Millis(cutoff), after.at, after.at, after.rowid, limit)
}

func runRefs(ctx context.Context, q store.Querier, what, query string, args ...any) ([]runRef, error) {
	var out []runRef
	err := eachRow(ctx, q, what, query, args, func(rows *sql.Rows) error {
		var r runRef
		if err := rows.Scan(&r.ID, &r.Environment, &r.At, &r.RowID); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// archiveCounts reads how many events and log lines archived run id holds.
func archiveCounts(ctx context.Context, q store.Querier, id string) (events, logs int, err error) {
	err = q.QueryRowContext(ctx, `SELECT event_count, log_count FROM platform_run_archives WHERE run_id = ?`, id).Scan(&events, &logs)
	if err != nil {
		return 0, 0, fmt.Errorf("engine: read archive of run %s: %w", id, err)
	}
	return events, logs, nil
}

// isArchived tells whether run id is archived (a missing run is not).
func isArchived(ctx context.Context, q store.Querier, id string) (bool, error) {
	var archived sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT archived_at FROM platform_runs WHERE id = ?`, id).Scan(&archived)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("engine: read run %s: %w", id, err)
	}
	return archived.Valid, nil
}

// savepoint runs one of the retention pass's SAVEPOINT / ROLLBACK TO /
// RELEASE statements, so a refused run leaves the batch's others applied.
func savepoint(ctx context.Context, tx *sql.Tx, stmt string) error {
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("engine: %s: %w", stmt, err)
	}
	return nil
}
