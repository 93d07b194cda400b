package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// placeholders answers "?, ?, ..." for n values and the values as args.
func placeholders[T ~string](vals []T) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = string(v)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", "), args
}

// floorMs and ceilMs convert a time to the stored milliseconds, rounding
// down or up, so that comparisons with sub-millisecond bounds are exact.
func floorMs(t time.Time) int64 { return store.Millis(t) }

func ceilMs(t time.Time) int64 {
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return store.Millis(t) + 1
	}
	return store.Millis(t)
}

// eachRow runs query and hands each row to fn; what names the read in
// errors.
func eachRow(ctx context.Context, q store.Querier, what, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("engine: %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("engine: %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("engine: %s: %w", what, err)
	}
	return nil
}

// runPosition is where a run list resumes: behind the run created at ms
// with id (newest first).
type runPosition struct {
	ms int64
	id string
}

// listRunSummaries reads the runs of f.Scope's environment that match f,
// behind pos when set, newest first.
func listRunSummaries(ctx context.Context, q store.Querier, f RunFilter, pos *runPosition) ([]RunSummary, error) {
	where := []string{"r.environment_id = ?"}
	args := []any{f.Scope.Environment}
	add := func(cond string, vals ...any) {
		where = append(where, cond)
		args = append(args, vals...)
	}
	if pos != nil {
		add("(r.created_at < ? OR (r.created_at = ? AND r.id < ?))", pos.ms, pos.ms, pos.id)
	}
	if len(f.Statuses) > 0 {
		ph, vals := placeholders(f.Statuses)
		add("r.status IN ("+ph+")", vals...)
	}
	if f.Paused != nil {
		add("r.paused = ?", *f.Paused)
	}
	if f.ActivationID != "" {
		add("r.activation_id = ?", f.ActivationID)
	}
	if f.WorkflowID != "" {
		add("v.definition_id = ?", f.WorkflowID)
		if f.WorkflowVersion > 0 {
			add("v.version = ?", f.WorkflowVersion)
		}
	}
	if f.CorrelationKey != "" {
		add("r.correlation_key = ?", f.CorrelationKey)
	}
	if f.BusinessKey != "" {
		add("r.business_key = ?", f.BusinessKey)
	}
	if f.CreatedAfter != nil {
		add("r.created_at > ?", floorMs(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		add("r.created_at < ?", ceilMs(*f.CreatedBefore))
	}
	if !f.IncludeTest {
		add("r.test = 0")
	}
	if !f.IncludeArchived {
		add("r.archived_at IS NULL")
	}
	items := []RunSummary{}
	err := eachRow(ctx, q, "list runs", `SELECT r.id, r.activation_id, v.definition_id, v.version, r.status, r.paused, r.test,
		r.parent_run_id, r.caller_run_id, r.correlation_key, r.business_key, r.created_at, r.updated_at, r.archived_at IS NOT NULL
		FROM platform_runs r JOIN platform_activations a ON a.id = r.activation_id
		JOIN platform_definition_versions v ON v.id = COALESCE(r.published_version_id, a.published_version_id)
		WHERE `+strings.Join(where, " AND ")+` ORDER BY r.created_at DESC, r.id DESC LIMIT ?`, append(args, f.Limit),
		func(rows *sql.Rows) error {
			var r RunSummary
			var wf string
			var version int
			var parent, caller, corr, biz sql.NullString
			var created, updated int64
			if err := rows.Scan(&r.ID, &r.ActivationID, &wf, &version, &r.Status, &r.Paused, &r.Test, &parent, &caller, &corr, &biz,
				&created, &updated, &r.Archived); err != nil {
				return err
			}
			r.Workflow = fmt.Sprintf("%s@%d", wf, version)
			r.ParentRunID, r.CallerRunID, r.CorrelationKey, r.BusinessKey = nullable(parent), nullable(caller), nullable(corr), nullable(biz)
			r.CreatedAt, r.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
			if kernel.Status(r.Status).Terminal() {
				r.EndedAt = timePtr(r.UpdatedAt)
			}
			items = append(items, r)
			return nil
		})
	return items, err
}

// runExists answers whether environment sc has run id; it reads no state
// (the log follower polls it).
func runExists(ctx context.Context, q store.Querier, sc auth.Scope, id string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM platform_runs WHERE id = ? AND environment_id = ?`, id, sc.Environment).Scan(&n); err != nil {
		return false, fmt.Errorf("engine: read run: %w", err)
	}
	return n > 0, nil
}

// nodeKinds maps the node ids of a published workflow version to their
// step kinds (from its artifact).
func nodeKinds(ctx context.Context, q store.Querier, versionID string) (map[string]string, error) {
	kinds := map[string]string{}
	err := eachRow(ctx, q, "read step kinds", `SELECT json_extract(n.value, '$.id'), json_extract(n.value, '$.kind')
		FROM platform_definition_versions v, json_each(v.artifact, '$.nodes') n WHERE v.id = ?`, []any{versionID},
		func(rows *sql.Rows) error {
			var id, kind sql.NullString
			if err := rows.Scan(&id, &kind); err != nil {
				return err
			}
			kinds[id.String] = kind.String
			return nil
		})
	return kinds, err
}

// scanRecords feeds the history records of run id's events up to seq, in
// seq order, to fn with the task and error of a task_failed event.
func scanRecords(ctx context.Context, q store.Querier, id string, upTo int64, fn func([]kernel.Record, string, *kernel.TaskError)) error {
	return eachRow(ctx, q, "read run records", `SELECT seq, kind, at, records, CASE WHEN kind = ? THEN payload ELSE substr(payload, 1, ?) END FROM platform_run_events
		WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?) AND seq <= ? AND records <> '[]' ORDER BY seq`, []any{string(kernel.EventTaskFailed), payloadIDSpan, id, upTo},
		func(rows *sql.Rows) error {
			var records, payload, kind string
			var seq, at int64
			if err := rows.Scan(&seq, &kind, &at, &records, &payload); err != nil {
				return err
			}
			full, err := expandRecords([]byte(records), seq, store.FromMillis(at), []byte(payload))
			if err != nil {
				return err
			}
			var recs []kernel.Record
			if err := json.Unmarshal(full, &recs); err != nil {
				return fmt.Errorf("stored records of run %s: %w", id, err)
			}
			var e kernel.Event
			if kind == string(kernel.EventTaskFailed) {
				plain, err := expandPayload([]byte(payload), seq, store.FromMillis(at), kind, id)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(plain, &e); err != nil {
					return fmt.Errorf("stored event of run %s: %w", id, err)
				}
			}
			fn(recs, e.TaskID, e.Error)
			return nil
		})
}

// listLogLines reads the log lines of run f.RunID that match f, behind
// f.After, in id order. The run's row maps its id to the run_key its lines
// are stored under (platform_runs primary key, then platform_run_logs_run). A line stored as a reference to its event's record
// (migration 0033) gets that record, byte for byte, as its data.
func listLogLines(ctx context.Context, q store.Querier, f LogQuery) ([]LogEntry, error) {
	where := "r.id = ? AND l.id > ?"
	args := []any{f.RunID, f.After}
	if i := slices.Index(logLevels, f.MinLevel); i > 0 {
		ph, vals := placeholders(logLevels[i:])
		where += " AND l.level IN (" + ph + ")"
		args = append(args, vals...)
	}
	if len(f.Types) > 0 {
		ph, vals := placeholders(f.Types)
		where += " AND l.type IN (" + ph + ")"
		args = append(args, vals...)
	}
	if f.Since != nil {
		where += " AND l.at >= ?"
		args = append(args, ceilMs(*f.Since))
	}
	if f.Until != nil {
		where += " AND l.at < ?"
		args = append(args, ceilMs(*f.Until))
	}
	items := []LogEntry{}
	var recs eventRecordCache
	err := eachRow(ctx, q, "list run logs", `SELECT l.id, l.at, l.seq, l.level, l.type, l.node_id, l.message, l.data, l.record, e.records, e.at, substr(e.payload, 1, ?)
		FROM platform_runs r JOIN platform_run_logs l ON l.run_key = r.run_key
		LEFT JOIN platform_run_events e ON l.record IS NOT NULL AND e.run_key = r.run_key AND e.seq = l.seq
		WHERE `+where+` ORDER BY l.id LIMIT ?`, append(append([]any{payloadIDSpan}, args...), f.Limit),
		func(rows *sql.Rows) error {
			var l LogEntry
			var at int64
			var seq, record, eventAt sql.NullInt64
			var node, data, records sql.NullString
			var payload []byte
			if err := rows.Scan(&l.ID, &at, &seq, &l.Level, &l.Type, &node, &l.Message, &data, &record, &records, &eventAt, &payload); err != nil {
				return err
			}
			l.At, l.NodeID = store.FromMillis(at), nullable(node)
			if seq.Valid {
				l.Seq = &seq.Int64
			}
			if data.Valid {
				l.Data = json.RawMessage(data.String)
			}
			if record.Valid {
				rec, err := recs.record(seq.Int64, store.FromMillis(eventAt.Int64), records.String, payload, record.Int64)
				if err != nil {
					return fmt.Errorf("log line %d of run %s: %w", l.ID, f.RunID, err)
				}
				l.Data = rec
			}
			items = append(items, l)
			return nil
		})
	return items, err
}

// eventRecordCache splits an event's stored records once for the log
// lines that refer to them (consecutive lines share their event).
type eventRecordCache struct {
	seq  int64
	recs []json.RawMessage
}

// record answers record index of event seq (at), whose stored records
// are text and whose stored payload starts with payload.
func (c *eventRecordCache) record(seq int64, at time.Time, text string, payload []byte, index int64) (json.RawMessage, error) {
	if c.recs == nil || c.seq != seq {
		c.seq, c.recs = seq, nil
		full, err := expandRecords([]byte(text), seq, at, payload)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(full, &c.recs); err != nil {
			return nil, fmt.Errorf("records of event %d: %w", seq, err)
		}
	}
	if index < 0 || index >= int64(len(c.recs)) {
		return nil, fmt.Errorf("event %d has no record %d", seq, index)
	}
	return c.recs[index], nil
}
