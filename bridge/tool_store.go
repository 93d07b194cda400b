package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"github.com/agentbridge/bridge/store"
	"time"
)

// The SQL of tool observations (table bridge_tools).

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
	t.StartedAt = store.FromText(started)
	if finished.Valid {
		f := store.FromText(finished.String)
		t.FinishedAt = &f
		d := f.Sub(t.StartedAt).Milliseconds()
		t.DurationMS = &d
	}
	return t, nil
}

// toolsAfter reads up to limit observations of a job after seq, in order;
// filesOnly keeps those that touched files.
func (s *Service) toolsAfter(ctx context.Context, jobID string, after int64, limit int, filesOnly bool) ([]Tool, error) {
	cond := ""
	if filesOnly {
		cond = " AND has_files = 1"
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+toolColumns+` FROM bridge_tools WHERE job_id = ? AND seq > ?`+cond+` ORDER BY seq LIMIT ?`, jobID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tools := []Tool{}
	for rows.Next() {
		t, err := scanTool(rows)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, rows.Err()
}

// toolBySeq reads one observation; sql.ErrNoRows when there is none.
func (s *Service) toolBySeq(ctx context.Context, jobID string, seq uint64) (Tool, error) {
	return scanTool(s.db.Reader().QueryRowContext(ctx, `SELECT `+toolColumns+` FROM bridge_tools WHERE job_id = ? AND seq = ?`, jobID, seq))
}

// lastToolSeq is the job's highest tool seq (0 without any).
func lastToolSeq(ctx context.Context, q store.Querier, jobID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM bridge_tools WHERE job_id = ?`, jobID).Scan(&n)
	return n, err
}

// insertTool records a tool call the agent started; parent is the call id
// of the subagent it runs in, or empty.
func insertTool(tx *sql.Tx, j Job, seq int, callID, name, input string, files []string, started time.Time, parent string) error {
	_, err := tx.Exec(`INSERT INTO bridge_tools(job_id, seq, attempt, call_id, name, input, status, files, has_files, started_at, parent_call_id) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)`,
		j.ID, seq, j.Attempt, callID, name, input, mustJSON(files), len(files) > 0, store.Text(started), sql.NullString{String: parent, Valid: parent != ""})
	return err
}

// finishTool records a tool call's result; files, when any, replace the
// call's.
func finishTool(tx *sql.Tx, jobID string, seq int, output, status string, errText *string, files []string, finished time.Time) error {
	q := `UPDATE bridge_tools SET output = ?, status = ?, error = ?, finished_at = ?`
	args := []any{output, status, errText, store.Text(finished)}
	if len(files) > 0 {
		q += `, files = ?, has_files = 1`
		args = append(args, mustJSON(files))
	}
	args = append(args, jobID, seq)
	_, err := tx.Exec(q+` WHERE job_id = ? AND seq = ?`, args...)
	return err
}

// abandonTools marks the calls of j's attempt that never got a result.
func abandonTools(tx *sql.Tx, j Job, now time.Time) error {
	_, err := tx.Exec(`UPDATE bridge_tools SET status = 'abandoned', finished_at = ? WHERE job_id = ? AND attempt = ? AND status = 'running'`,
		store.Text(now), j.ID, j.Attempt)
	return err
}

// abandonAllTools marks every running call of a job abandoned (a daemon
// restart found the job running).
func abandonAllTools(tx *sql.Tx, jobID string, now time.Time) error {
	_, err := tx.Exec(`UPDATE bridge_tools SET status = 'abandoned', finished_at = ? WHERE job_id = ? AND status = 'running'`, store.Text(now), jobID)
	return err
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func ptr[T any](v T) *T { return &v }
