package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// runStatuses are the values of the status filter.
var runStatuses = []kernel.Status{kernel.StatusRunning, kernel.StatusWaiting, kernel.StatusSuspended, kernel.StatusSucceeded,
	kernel.StatusFailed, kernel.StatusCancelled, kernel.StatusTimedOut}

// logLevels orders the log levels; the level filter is a minimum.
var logLevels = []string{"info", "warn", "error"}

// badCursor answers a cursor that verified but holds no valid position.
func badCursor() error {
	return api.InvalidParameter(api.CodeValidation, "cursor", "the cursor is invalid, or was issued for another list, scope or filters")
}

// placeholders answers "?, ?, ..." for n values and the values as args.
func placeholders[T ~string](vals []T) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = string(v)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", "), args
}

// listRuns serves GET E/runs (run_summaries.list): newest first.
func (s *Service) listRuns(c *api.Call) error {
	lq := newListQuery(c)
	statuses := lq.list("status", "statuses are running, waiting, suspended, succeeded, failed, cancelled and timed_out",
		func(v string) bool { return slices.Contains(runStatuses, kernel.Status(v)) })
	paused, pausedV := lq.flag("paused")
	activation := lq.one("activation_id")
	if activation != "" && !auth.IsCanonicalUUID(activation) && lq.err == nil {
		lq.err = api.InvalidParameter(api.CodeValidation, "activation_id", "activation_id must be a canonical lowercase UUID")
	}
	workflow := lq.text("workflow")
	wfID, wfVersion, ok := parseWorkflowFilter(workflow)
	if !ok && lq.err == nil {
		lq.err = api.InvalidParameter(api.CodeValidation, "workflow", "workflow is a workflow id, or id@version with a positive version")
	}
	corr, biz := lq.text("correlation_key"), lq.text("business_key")
	after, before := lq.time("created_after"), lq.time("created_before")
	lq.span("created_after", after, "created_before", before)
	includeTest, _ := lq.flag("include_test")
	includeArchived, _ := lq.flag("include_archived")
	if lq.err != nil {
		return lq.err
	}
	q, err := c.PageQuery("run-summaries", map[string]string{"order": "created_at desc, id desc",
		"status": strings.Join(statuses, ","), "paused": pausedV, "activation_id": activation, "workflow": workflow,
		"correlation_key": corr, "business_key": biz, "created_after": stamp(after), "created_before": stamp(before),
		"include_test": strconv.FormatBool(includeTest), "include_archived": strconv.FormatBool(includeArchived)})
	if err != nil {
		return err
	}
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	where := []string{"r.environment_id = ?"}
	args := []any{sc.Environment}
	add := func(cond string, vals ...any) {
		where = append(where, cond)
		args = append(args, vals...)
	}
	if q.After != "" {
		ms, id, ok := strings.Cut(q.After, "/")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			return badCursor()
		}
		add("(r.created_at < ? OR (r.created_at = ? AND r.id < ?))", n, n, id)
	}
	if len(statuses) > 0 {
		ph, vals := placeholders(statuses)
		add("r.status IN ("+ph+")", vals...)
	}
	if pausedV != "" {
		add("r.paused = ?", paused)
	}
	if activation != "" {
		add("r.activation_id = ?", activation)
	}
	if wfID != "" {
		add("v.definition_id = ?", wfID)
		if wfVersion > 0 {
			add("v.version = ?", wfVersion)
		}
	}
	if corr != "" {
		add("r.correlation_key = ?", corr)
	}
	if biz != "" {
		add("r.business_key = ?", biz)
	}
	if after != nil {
		add("r.created_at > ?", floorMs(*after))
	}
	if before != nil {
		add("r.created_at < ?", ceilMs(*before))
	}
	if !includeTest {
		add("r.test = 0")
	}
	if !includeArchived {
		add("r.archived_at IS NULL")
	}
	items := []RunSummary{}
	err = eachRow(ctx, rd, "list runs", `SELECT r.id, r.activation_id, v.definition_id, v.version, r.status, r.paused, r.test,
		r.parent_run_id, r.caller_run_id, r.correlation_key, r.business_key, r.created_at, r.updated_at, r.archived_at IS NOT NULL
		FROM platform_runs r JOIN platform_activations a ON a.id = r.activation_id
		JOIN platform_definition_versions v ON v.id = COALESCE(r.published_version_id, a.published_version_id)
		WHERE `+strings.Join(where, " AND ")+` ORDER BY r.created_at DESC, r.id DESC LIMIT ?`, append(args, q.Fetch()),
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
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(r RunSummary) string { return fmt.Sprintf("%d/%s", r.CreatedAt.UnixMilli(), r.ID) })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// parseWorkflowFilter splits "id" or "id@version" ("" is no filter).
func parseWorkflowFilter(v string) (id string, version int, ok bool) {
	if v == "" {
		return "", 0, true
	}
	id, ver, found := strings.Cut(v, "@")
	if id == "" || strings.TrimSpace(id) != id {
		return "", 0, false
	}
	if !found {
		return id, 0, true
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 || strconv.Itoa(n) != ver {
		return "", 0, false
	}
	return id, n, true
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

// requireRun answers 404 unless the path's environment has run id; it
// reads no state (the log follower polls it).
func (s *Service) requireRun(c *api.Call, id string) error {
	ctx, rd, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, rd, sc); err != nil {
		return err
	}
	var n int
	if err := rd.QueryRowContext(ctx, `SELECT count(*) FROM platform_runs WHERE id = ? AND environment_id = ?`, id, sc.Environment).Scan(&n); err != nil {
		return fmt.Errorf("engine: read run: %w", err)
	}
	if n == 0 {
		return api.NotFound("run")
	}
	return nil
}

// runSteps serves GET E/runs/{run}/steps (runs.steps).
func (s *Service) runSteps(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	q, err := limitedPage(c, "run-steps", map[string]string{"run": id, "order": "started"}, DefaultStepLogLimit, MaxStepLogLimit)
	if err != nil {
		return err
	}
	var from stepPos
	if q.After != "" {
		var ok bool
		if from, ok = parseStepPos(q.After); !ok {
			return badCursor()
		}
	}
	ctx, rd := c.Context(), s.db.Reader()
	r, _, err := s.read(c, rd)
	if err != nil {
		return err
	}
	if err := refuseArchived(ctx, rd, r.ID); err != nil {
		return err
	}
	kinds, err := nodeKinds(ctx, rd, r.PublishedVersionID)
	if err != nil {
		return err
	}
	facts := newStepFacts(kinds)
	if err := scanRecords(ctx, rd, r.ID, r.State.Seq, facts.event); err != nil {
		return err
	}
	var items []*stepFact
	for _, st := range facts.finish(&r.State) {
		if len(items) < q.Fetch() && (q.After == "" || st.pos.after(from)) {
			items = append(items, st)
		}
	}
	page, err := api.MakePage(q, items, func(st *stepFact) string { return st.pos.String() })
	if err != nil {
		return err
	}
	out := api.Page[Step]{Items: make([]Step, len(page.Items)), NextCursor: page.NextCursor}
	for i, st := range page.Items {
		out.Items[i] = st.Step
	}
	return c.OK(out)
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
	return eachRow(ctx, q, "read run records", `SELECT records, CASE WHEN kind = ? THEN payload ELSE '' END FROM platform_run_events
		WHERE run_id = ? AND seq <= ? AND records <> '[]' ORDER BY seq`, []any{string(kernel.EventTaskFailed), id, upTo},
		func(rows *sql.Rows) error {
			var records, payload string
			if err := rows.Scan(&records, &payload); err != nil {
				return err
			}
			var recs []kernel.Record
			if err := json.Unmarshal([]byte(records), &recs); err != nil {
				return fmt.Errorf("stored records of run %s: %w", id, err)
			}
			var e kernel.Event
			if payload != "" {
				if err := json.Unmarshal([]byte(payload), &e); err != nil {
					return fmt.Errorf("stored event of run %s: %w", id, err)
				}
			}
			fn(recs, e.TaskID, e.Error)
			return nil
		})
}

// runLogs serves GET E/runs/{run}/logs (runs.logs): lines in id order.
func (s *Service) runLogs(c *api.Call) error {
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	lq := newListQuery(c)
	level := lq.one("level")
	if level == "" {
		level = logLevels[0]
	}
	minLevel := slices.Index(logLevels, level)
	if minLevel < 0 && lq.err == nil {
		lq.err = api.InvalidParameter(api.CodeValidation, "level", "level is info, warn or error")
	}
	types := lq.list("type", "a type is 1 to 200 characters", func(v string) bool { return v != "" && len([]rune(v)) <= maxFilterLen })
	since, until := lq.time("since"), lq.time("until")
	lq.span("since", since, "until", until)
	afterRaw := lq.one("after")
	var after int64
	if afterRaw != "" && lq.err == nil {
		if after, err = strconv.ParseInt(afterRaw, 10, 64); err != nil || after < 0 || strings.TrimLeft(afterRaw, "0123456789") != "" {
			lq.err = api.InvalidParameter(api.CodeValidation, "after", "after is a log line id, a whole number from 0")
		}
	}
	if lq.err != nil {
		return lq.err
	}
	if _, ok := c.R.URL.Query()["cursor"]; ok && afterRaw != "" {
		return filterError("after and cursor are alternatives; send one of them", "after", "cursor")
	}
	q, err := limitedPage(c, "run-logs", map[string]string{"run": id, "order": "id", "level": level,
		"type": strings.Join(types, ","), "since": stamp(since), "until": stamp(until)}, DefaultStepLogLimit, MaxStepLogLimit)
	if err != nil {
		return err
	}
	if q.After != "" {
		if after, err = strconv.ParseInt(q.After, 10, 64); err != nil {
			return badCursor()
		}
	}
	if err := s.requireRun(c, id); err != nil {
		return err
	}
	if err := refuseArchived(c.Context(), s.db.Reader(), id); err != nil {
		return err
	}
	where := "run_id = ? AND id > ?"
	args := []any{id, after}
	if minLevel > 0 {
		ph, vals := placeholders(logLevels[minLevel:])
		where += " AND level IN (" + ph + ")"
		args = append(args, vals...)
	}
	if len(types) > 0 {
		ph, vals := placeholders(types)
		where += " AND type IN (" + ph + ")"
		args = append(args, vals...)
	}
	if since != nil {
		where += " AND at >= ?"
		args = append(args, ceilMs(*since))
	}
	if until != nil {
		where += " AND at < ?"
		args = append(args, ceilMs(*until))
	}
	items := []LogEntry{}
	err = eachRow(c.Context(), s.db.Reader(), "list run logs", `SELECT id, at, seq, level, type, node_id, message, data
		FROM platform_run_logs WHERE `+where+` ORDER BY id LIMIT ?`, append(args, q.Fetch()),
		func(rows *sql.Rows) error {
			var l LogEntry
			var at int64
			var seq sql.NullInt64
			var node, data sql.NullString
			if err := rows.Scan(&l.ID, &at, &seq, &l.Level, &l.Type, &node, &l.Message, &data); err != nil {
				return err
			}
			l.At, l.NodeID = store.FromMillis(at), nullable(node)
			if seq.Valid {
				l.Seq = &seq.Int64
			}
			if data.Valid {
				l.Data = json.RawMessage(data.String)
			}
			items = append(items, l)
			return nil
		})
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(l LogEntry) string { return strconv.FormatInt(l.ID, 10) })
	if err != nil {
		return err
	}
	return c.OK(page)
}
