package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// logLine is one line of a run's log: a history fact or an engine note.
type logLine struct {
	At      time.Time
	Seq     int64
	Level   string // info (default), warn or error
	Type    string
	Node    string
	Message string
	Data    any
}

// writeLog appends a line to run id's log in tx.
func writeLog(ctx context.Context, tx *sql.Tx, id string, l logLine) error {
	return writeLogs(ctx, tx, id, []logLine{l})
}

// logInsert is the statement that appends logRowsPerInsert lines at most;
// the lines of one event share a statement (fewer statements per
// transition).
const (
	logInsert        = `INSERT INTO platform_run_logs(run_id, at, seq, level, type, node_id, message, data) VALUES `
	logRow           = `(?, ?, ?, ?, ?, ?, ?, ?)`
	logRowsPerInsert = 8
)

// writeLogs appends lines to run id's log in tx, in order.
func writeLogs(ctx context.Context, tx *sql.Tx, id string, lines []logLine) error {
	for len(lines) > 0 {
		n := min(len(lines), logRowsPerInsert)
		args := make([]any, 0, 8*n)
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
			args = append(args, id, store.Millis(l.At), seq, l.Level, l.Type, optional(l.Node), l.Message, data)
		}
		if _, err := tx.ExecContext(ctx, logInsert+strings.Repeat(logRow+", ", n-1)+logRow, args...); err != nil {
			return fmt.Errorf("engine: write run log: %w", err)
		}
		lines = lines[n:]
	}
	return nil
}

// recordLine is the log line of a kernel history record.
func recordLine(r *kernel.Record) logLine {
	return logLine{At: r.ObservedAt, Seq: r.Seq, Level: recordLevel(r.Type), Type: r.Type,
		Node: r.NodeID, Message: recordMessage(r), Data: r}
}

func recordLevel(t string) string {
	switch t {
	case kernel.RecordRunSuspended, kernel.RecordTimedOut:
		return "warn"
	}
	return "info"
}

// recordMessage is a one-line human description of a record; the node is
// the line's own field, so the message names it only through an instance
// suffix ("[2]") inside loops.
func recordMessage(r *kernel.Record) string {
	var b strings.Builder
	switch r.Type {
	case kernel.RecordTaskRetryScheduled:
		fmt.Fprintf(&b, "attempt %d failed; retry scheduled", r.Attempt)
	default:
		b.WriteString(strings.ReplaceAll(r.Type, "_", " "))
		if r.Attempt > 0 {
			fmt.Fprintf(&b, " (attempt %d)", r.Attempt)
		}
	}
	if suffix, ok := strings.CutPrefix(r.Instance, r.NodeID); ok && suffix != "" {
		b.WriteString(" " + suffix)
	}
	if r.Signal != "" {
		b.WriteString(": " + r.Signal)
	}
	if r.Deadline != nil {
		at := "deadline"
		if r.Type == kernel.RecordTaskRetryScheduled {
			at = "at"
		}
		b.WriteString(" (" + at + " " + r.Deadline.UTC().Format(time.RFC3339Nano) + ")")
	}
	if r.Detail != "" {
		b.WriteString(": " + r.Detail)
	}
	return b.String()
}
