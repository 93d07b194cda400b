package bridge

import (
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

// maxAuditPage is where a page with payloads stops growing ("about 4 MB").
// A page always holds at least one whole entry, however large.
const maxAuditPage = 4 << 20

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (s *Service) handleAudit(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	q := parseQuery(r, "after", "limit", "through", "includePayloads")
	after := q.intRange("after", 0, 0, 1<<62)
	limit := q.intRange("limit", 100, 1, 200)
	through := q.intRange("through", -1, 0, 1<<62)
	payloads := q.boolean("includePayloads")
	if q.err != nil {
		return q.err
	}
	job, err := s.jobFor(r, p, ps)
	if err != nil {
		return err
	}
	ctx := r.Context()
	db := s.db.Reader()
	if through < 0 {
		// The first page fixes how far this export reaches; the log is
		// append-only, so pages that keep the same through never change.
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM bridge_audit WHERE job_id = ?`, job.ID).Scan(&through); err != nil {
			return err
		}
	}
	cols := "seq, attempt, kind, summary, created_at, NULL"
	if payloads {
		cols = "seq, attempt, kind, summary, created_at, payload"
	}
	rows, err := db.QueryContext(ctx, `SELECT `+cols+` FROM bridge_audit WHERE job_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
		job.ID, after, through, limit+1)
	if err != nil {
		return err
	}
	defer rows.Close()
	entries := []AuditEntry{}
	size, more := 0, false
	for rows.Next() {
		var e AuditEntry
		var summary, created string
		var payload sql.NullString
		if err := rows.Scan(&e.Seq, &e.Attempt, &e.Kind, &summary, &created, &payload); err != nil {
			return err
		}
		e.Summary = json.RawMessage(summary)
		if payload.Valid {
			e.Payload = json.RawMessage(payload.String)
		}
		e.CreatedAt = parseTime(created)
		n := len(summary) + len(payload.String) + 128
		if len(entries) == int(limit) || (len(entries) > 0 && size+n > maxAuditPage) {
			more = true
			break
		}
		size += n
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var next *int
	if more {
		next = &entries[len(entries)-1].Seq
	}
	return respond(w, http.StatusOK, map[string]any{"jobId": job.ID, "through": through, "entries": entries, "nextAfter": next, "hasMore": more})
}

const toolColumns = `seq, attempt, call_id, name, input, output, status, error, files, started_at, finished_at, parent_call_id`

func scanTool(row scanner) (Tool, error) {
	var t Tool
	var input, output, errS, finished, parent sql.NullString
	var files, started string
	if err := row.Scan(&t.Seq, &t.Attempt, &t.CallID, &t.Name, &input, &output, &t.Status, &errS, &files, &started, &finished, &parent); err != nil {
		return t, err
	}
	t.ParentCallID = parent.String
	t.Input = json.RawMessage("null")
	if input.Valid && input.String != "" {
		t.Input = json.RawMessage(input.String)
	}
	if output.Valid {
		t.Output = &output.String
	}
	if errS.Valid {
		t.Error = &errS.String
	}
	_ = json.Unmarshal([]byte(files), &t.Files)
	if t.Files == nil {
		t.Files = []string{}
	}
	t.StartedAt = parseTime(started)
	if finished.Valid {
		f := parseTime(finished.String)
		t.FinishedAt = &f
		d := f.Sub(t.StartedAt).Milliseconds()
		t.DurationMS = &d
	}
	return t, nil
}

func (s *Service) handleTools(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	q := parseQuery(r, "after", "limit", "filesOnly")
	after := q.intRange("after", 0, 0, 1<<62)
	limit := q.intRange("limit", 100, 1, 200)
	filesOnly := q.boolean("filesOnly")
	if q.err != nil {
		return q.err
	}
	job, err := s.jobFor(r, p, ps)
	if err != nil {
		return err
	}
	cond := ""
	if filesOnly {
		cond = " AND has_files = 1"
	}
	rows, err := s.db.Reader().QueryContext(r.Context(), `SELECT `+toolColumns+` FROM bridge_tools WHERE job_id = ? AND seq > ?`+cond+` ORDER BY seq LIMIT ?`, job.ID, after, limit+1)
	if err != nil {
		return err
	}
	defer rows.Close()
	tools := []Tool{}
	for rows.Next() {
		t, err := scanTool(rows)
		if err != nil {
			return err
		}
		tools = append(tools, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	more := len(tools) > int(limit)
	var next *int
	if more {
		tools = tools[:limit]
		next = &tools[len(tools)-1].Seq
	}
	return respond(w, http.StatusOK, map[string]any{"jobId": job.ID, "tools": tools, "nextAfter": next, "hasMore": more})
}

func (s *Service) handleTool(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	n, err := parseUint(ps.ByName("tool"))
	if err != nil || n < 1 || n > 1<<31 {
		return errf(CodeInvalidParameter, "tool must be an integer >= 1")
	}
	job, err := s.jobFor(r, p, ps)
	if err != nil {
		return err
	}
	t, err := scanTool(s.db.Reader().QueryRowContext(r.Context(), `SELECT `+toolColumns+` FROM bridge_tools WHERE job_id = ? AND seq = ?`, job.ID, n))
	if errors.Is(err, sql.ErrNoRows) {
		return errf(CodeNotFound, "job %s has no tool observation %s", job.ID, strconv.FormatUint(n, 10))
	}
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, t)
}
