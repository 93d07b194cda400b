package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/kernel"
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
	// Record, when set, is the index of the line's data among the records
	// of its event (Seq): the line is stored without data and read with
	// the event's record (migration 0033, docs/retention.md).
	Record *int
}

// recordLine is the log line of a kernel history record, the index'th
// record stored with event seq: when the record belongs to that event the
// line refers to it instead of repeating it.
func recordLine(r *kernel.Record, seq int64, index int) logLine {
	l := logLine{At: r.ObservedAt, Seq: r.Seq, Level: recordLevel(r.Type), Type: r.Type,
		Node: r.NodeID, Message: recordMessage(r), Data: r}
	if r.Seq == seq && seq > 0 {
		l.Data, l.Record = nil, &index
	}
	return l
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
