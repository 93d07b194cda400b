package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

// writeLog appends a line to run id's log in tx.
func writeLog(ctx context.Context, tx *sql.Tx, id string, l logLine) error {
	return writeLogs(ctx, tx, id, []logLine{l})
}

// logInsert is the statement that appends logRowsPerInsert lines at most;
// the lines of one event share a statement (fewer statements per
// transition). A line names its run by the run's run_key (migration
// 0037_run_keys), bound if known, else looked up by id (runKeyExpr): the
// run's row is stored first.
const (
	logInsert        = `INSERT INTO platform_run_logs(run_key, at, seq, level, type, node_id, message, data, record) VALUES `
	logRowRest       = `, ?, ?, ?, ?, ?, ?, ?, ?)`
	logRowsPerInsert = 8
)

// addLogs appends lines to run id's log in tx, or adds them to rows (see
// perform).
func addLogs(ctx context.Context, tx *sql.Tx, id string, lines []logLine, rows *pendingRows) error {
	if rows != nil {
		rows.logs = append(rows.logs, lines...)
		return nil
	}
	return writeLogs(ctx, tx, id, lines)
}

// writeLogs appends lines to run id's log in tx, in order.
func writeLogs(ctx context.Context, tx *sql.Tx, id string, lines []logLine) error {
	return writeKeyedLogs(ctx, tx, id, 0, lines)
}

// writeKeyedLogs is writeLogs with the run's run_key if known (runRow.Key),
// else 0.
func writeKeyedLogs(ctx context.Context, tx *sql.Tx, id string, key int64, lines []logLine) error {
	row, ref := `(`+runKeyExpr(key)+logRowRest, runKeyArg(id, key)
	for len(lines) > 0 {
		n := min(len(lines), logRowsPerInsert)
		args := make([]any, 0, 9*n)
		for _, l := range lines[:n] {
			if l.Level == "" {
				l.Level = "info"
			}
			var data *string
			if l.Data != nil {
				raw, err := json.Marshal(l.Data)
				if err != nil {
					return fmt.Errorf("engine: encode log data: %w", err)
				}
				s := string(raw)
				data = &s
			}
			var seq *int64
			if l.Seq > 0 {
				seq = &l.Seq
			}
			args = append(args, ref, store.Millis(l.At), seq, l.Level, l.Type, optional(l.Node), l.Message, data, l.Record)
		}
		if _, err := tx.ExecContext(ctx, logInsert+rowsText(row, n), args...); err != nil {
			return fmt.Errorf("engine: write run log: %w", err)
		}
		lines = lines[n:]
	}
	return nil
}
