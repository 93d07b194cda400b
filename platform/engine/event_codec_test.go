package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/kernel"
)

// Compact payloads and records read back byte for byte, and values that
// cannot be put back exactly are stored whole.
func TestCompactEventValues(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 11, 27, 8, 30, 46, 984e6, time.UTC)
	enc := func(v any) []byte {
		raw, err := json.Marshal(v)
		is.NoErr(err)
		return raw
	}
	ev := kernel.Event{Seq: 2, At: at, Kind: kernel.EventTaskCompleted, ID: "01a21c20-e2c8-797f-a4fe-14d8ce83bf6e",
		TaskID: "ded7fad6-eed8-508b-9684-e1a754a3b32a", Output: json.RawMessage(`{"name":"<ada> & \"b\""}`)}
	const run = "01a21c20-e2c8-72e3-b907-c170ec150f2d"
	started := kernel.Event{Seq: 1, At: at, Kind: kernel.EventStarted, ID: ev.ID, RunID: run, Input: json.RawMessage(`{"name":"ada"}`)}
	otherRun := started
	otherRun.RunID = "01a21c20-e2c8-72e3-b907-c170ec150f2e"
	rec := func(typ string, seq int64, id string, obs time.Time, node string) *kernel.Record {
		return &kernel.Record{Type: typ, Seq: seq, EventID: id, ObservedAt: obs, NodeID: node, Instance: node, Generation: 1, Detail: "x\u2028<y>"}
	}
	for _, c := range []struct {
		name    string
		event   kernel.Event
		records []*kernel.Record
		payload bool // the payload is stored compact
		recs    bool // the records are stored compact
		noID    bool // ... and without their event id
	}{
		{"usual", ev, []*kernel.Record{rec("step_completed", 2, ev.ID, at, "greet"), rec("step_started", 2, ev.ID, at, "nothing")}, true, true, true},
		{"no records", ev, []*kernel.Record{}, true, false, false},
		{"a started event: its run id is the row's", started, []*kernel.Record{rec("step_started", 1, ev.ID, at, "greet")}, true, true, true},
		{"a started event of another run id", otherRun, nil, true, false, false},
		{"a record observed at another time", ev, []*kernel.Record{rec("step_started", 2, ev.ID, at, "a"), rec("signal_buffered", 2, ev.ID, at.Add(-time.Second), "b")}, true, false, false},
		{"a record of another event", ev, []*kernel.Record{rec("step_started", 1, ev.ID, at, "a")}, true, false, false},
		{"a record without event id", ev, []*kernel.Record{rec("step_started", 2, "", at, "a")}, true, false, false},
		{"a record naming another event id", ev, []*kernel.Record{rec("step_started", 2, ev.ID, at, "a"), rec("step_started", 2, "01a21c20-e2c8-797f-a4fe-14d8ce83bf6f", at, "b")}, true, true, false},
		{"a time finer than the row's milliseconds", kernel.Event{Seq: 2, At: at.Add(time.Microsecond), Kind: kernel.EventTaskCompleted, ID: "e"},
			[]*kernel.Record{rec("step_started", 2, "e", at.Add(time.Microsecond), "a")}, false, false, false},
		{"a time in another zone", kernel.Event{Seq: 2, At: at.In(time.FixedZone("x", 3600)), Kind: kernel.EventTaskCompleted, ID: "e"}, nil, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			full := enc(c.event)
			rowAt := rowTime(c.event.At)
			stored := compactPayload(full, c.event.Seq, c.event.At, string(c.event.Kind), run)
			is.Equal(stored[0] == compactMark || stored[0] == noRunMark, c.payload)
			is.Equal(stored[0] == noRunMark, c.event.RunID == run && c.payload)
			if c.payload {
				is.True(len(stored) < len(full)-40)
			}
			back, err := expandPayload(stored, c.event.Seq, rowAt, string(c.event.Kind), run)
			is.NoErr(err)
			is.Equal(string(back), string(full))
			if c.records == nil {
				return
			}
			fullRecs := enc(c.records)
			var parts [][]byte
			for _, r := range c.records {
				parts = append(parts, enc(r))
			}
			storedRecs := compactRecords(parts, c.event.Seq, c.event.At, nil)
			is.Equal(storedRecs[0] == compactMark, c.recs)
			back, err = expandRecords(storedRecs, c.event.Seq, rowAt, nil)
			is.NoErr(err)
			is.Equal(string(back), string(fullRecs))
			// With the payload's event id, records that all name it leave
			// it out; the payload's start is enough to put it back.
			id := payloadEventID(stored)
			is.Equal(id != nil, c.payload)
			storedRecs = compactRecords(parts, c.event.Seq, c.event.At, id)
			is.Equal(storedRecs[0] == noIDMark, c.noID)
			if c.noID {
				is.True(!bytes.Contains(storedRecs, []byte(c.event.ID)))
			}
			back, err = expandRecords(storedRecs, c.event.Seq, rowAt, stored[:min(len(stored), payloadIDSpan)])
			is.NoErr(err)
			is.Equal(string(back), string(fullRecs))
		})
	}
	// Records without their event id need the payload that names it.
	_, err := expandRecords([]byte(`=[{"type":"x","node_id":"a"}]`), 2, at, []byte(`{"seq":2}`))
	is.True(err != nil)
	back, err := expandRecords([]byte(`=[{"type":"x","node_id":"a"}]`), 2, at, []byte(`~"id":"e1","task_id":"t"}`))
	is.NoErr(err)
	is.Equal(string(back), `[{"type":"x","seq":2,"event_id":"e1","observed_at":"2026-11-27T08:30:46.984Z","node_id":"a"}]`)
	// An id too long for the span readers select stays in the records.
	long := []byte(`~"id":"` + strings.Repeat("a", payloadIDSpan) + `"}`)
	is.Equal(payloadEventID(long), nil)
	is.Equal(payloadEventID([]byte(`~"id":"a\"b","x":1}`)), nil)
	// Whole values stored before compaction read as stored.
	old := enc([]*kernel.Record{rec("step_started", 2, ev.ID, at, "a")})
	back, err = expandRecords(old, 2, at, nil)
	is.NoErr(err)
	is.Equal(string(back), string(old))
	// A damaged compact value is an error, not a wrong answer.
	_, err = expandRecords([]byte(`~[{"type":"x"}]`), 2, at, nil)
	is.True(err != nil)
	_, err = expandRecords([]byte(`~[{"type":"x","event_id":"e"`), 2, at, nil)
	is.True(err != nil)
	// A payload without its run that ends at its id, or whose id is not
	// followed by another member, is an error too (not a panic).
	for _, damaged := range []string{`^"id":"x"`, `^"id":"x"}`, `^"id":"x"]`} {
		_, err = expandPayload([]byte(damaged), 2, at, "started", "run-1")
		is.True(err != nil) // damaged
	}
}
