package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agentbridge/bridge/store"
)

// Compact event rows (docs/retention.md, "Platform runs"). An accepted
// event's payload and each of its history records repeat what the row
// already holds: the payload starts with the event's seq, time and kind,
// and every record names the event's seq and (nearly always) its time.
// A compact value leaves those out and starts with compactMark, which no
// JSON text (nor a sealed value) starts with; reading puts them back from
// the row's seq, at and kind. A value is stored compact only when putting
// them back gives its JSON byte for byte (checked when it is written), so
// history, records and log lines read exactly as before. Values written
// before, and sealed payloads, are stored whole and read as stored.
const compactMark = '~'

// noIDMark starts records stored compact that also leave out their event
// id: every record names the event it belongs to, whose id the compact
// payload of the same row starts with (payloadEventID), so the records of
// an unsealed event name it once instead of once each.
const noIDMark = '='

// noRunMark starts a compact payload that also leaves out its run id: a
// started event names its run ("run_id" right after its id), which the row
// names too. Reading puts "run_id":"<run>", back after the id.
const noRunMark = '^'

// payloadIDSpan is how many bytes of a stored payload payloadEventID
// reads at most (readers of records select no more of the payload): a
// longer id is not left out of the records.
const payloadIDSpan = 64

// payloadEventID answers the event id a stored payload starts with: a
// compact payload is ~"id":"<id>",... (the kernel encodes the id first
// after seq, time and kind). nil for a whole or sealed payload.
func payloadEventID(stored []byte) []byte {
	const head = `~"id":"`
	if len(stored) == 0 || (stored[0] != compactMark && stored[0] != noRunMark) || !bytes.HasPrefix(stored[1:], []byte(head[1:])) {
		return nil
	}
	end := bytes.IndexByte(stored[len(head):], '"')
	if end <= 0 || len(head)+end+1 > payloadIDSpan || bytes.IndexByte(stored[len(head):len(head)+end], '\\') >= 0 {
		return nil
	}
	return stored[len(head) : len(head)+end]
}

// eventPrefix is how the JSON of an event of seq, time at and kind starts.
func eventPrefix(seq int64, at time.Time, kind string) ([]byte, error) {
	t, err := json.Marshal(at)
	if err != nil {
		return nil, err
	}
	k, err := json.Marshal(kind)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64+len(k))
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"at":`...)
	b = append(b, t...)
	b = append(b, `,"kind":`...)
	b = append(b, k...)
	return append(b, ','), nil
}

// rowTime is the event time as the row keeps it (milliseconds, UTC).
func rowTime(at time.Time) time.Time { return store.FromMillis(store.Millis(at)) }

// runField is the field a started event names its run with.
func runField(run string) []byte { return []byte(`"run_id":"` + run + `",`) }

// compactPayload answers the stored form of the JSON of an event of run.
func compactPayload(full []byte, seq int64, at time.Time, kind, run string) []byte {
	p, err := eventPrefix(seq, rowTime(at), kind)
	if err != nil || !bytes.HasPrefix(full, p) {
		return full
	}
	out := append([]byte{compactMark}, full[len(p):]...)
	if id := payloadEventID(out); id != nil {
		// ~"id":"<id>","run_id":"<run>",rest -> ^"id":"<id>",rest
		cut := len(`~"id":"`) + len(id) + 2
		if rf := runField(run); bytes.HasPrefix(out[cut:], rf) {
			out[0] = noRunMark
			out = append(out[:cut], out[cut+len(rf):]...)
		}
	}
	return out
}

// expandPayload answers the JSON of an event of run from its stored form.
func expandPayload(stored []byte, seq int64, at time.Time, kind, run string) ([]byte, error) {
	if len(stored) == 0 || (stored[0] != compactMark && stored[0] != noRunMark) {
		return stored, nil
	}
	p, err := eventPrefix(seq, at, kind)
	if err != nil {
		return nil, fmt.Errorf("engine: event %d: %w", seq, err)
	}
	if stored[0] == compactMark {
		return append(p, stored[1:]...), nil
	}
	id := payloadEventID(stored)
	if id == nil {
		return nil, fmt.Errorf("engine: event %d: the payload names no event id", seq)
	}
	cut := len(`~"id":"`) + len(id) + 2
	if cut > len(stored) || stored[cut-1] != ',' {
		// Damaged: the id is not followed by another member.
		return nil, fmt.Errorf("engine: event %d: the compact payload ends after its id", seq)
	}
	rf := runField(run)
	out := make([]byte, 0, len(p)+len(stored)+len(rf))
	out = append(append(append(out, p...), stored[1:cut]...), rf...)
	return append(out, stored[cut:]...), nil
}

// recordHead is how a record's JSON starts up to its event id, and the
// fields compact records leave out after it.
func recordFields(seq int64, at time.Time) (seqField, atField []byte, err error) {
	t, err := json.Marshal(at)
	if err != nil {
		return nil, nil, err
	}
	seqField = strconv.AppendInt([]byte(`"seq":`), seq, 10)
	seqField = append(seqField, ',')
	atField = append(append([]byte(`"observed_at":`), t...), ',')
	return seqField, atField, nil
}

// splitRecord cuts a record's JSON as the kernel writes it,
// {"type":T,<seq>"event_id":E,<observed_at>rest, where <seq> is seqField:
// head ends after T's comma, mid after E's comma. ok is false when the
// text does not have that shape. expandRecords finds head and mid in the
// compact record by the same scan over the same bytes, so it puts the two
// fields back where they were.
func splitRecord(r, seqField []byte) (head, mid int, ok bool) {
	const typ, ev = `{"type":"`, `"event_id":"`
	if !bytes.HasPrefix(r, []byte(typ)) {
		return 0, 0, false
	}
	end := bytes.IndexByte(r[len(typ):], '"')
	if end < 0 || len(r) < len(typ)+end+2 || r[len(typ)+end+1] != ',' {
		return 0, 0, false
	}
	head = len(typ) + end + 2
	start := head + len(seqField)
	if !bytes.HasPrefix(r[head:], seqField) || !bytes.HasPrefix(r[start:], []byte(ev)) {
		return 0, 0, false
	}
	start += len(ev)
	end = bytes.IndexByte(r[start:], '"')
	if end < 0 || len(r) < start+end+2 || r[start+end+1] != ',' {
		return 0, 0, false
	}
	return head, start + end + 2, true
}

// compactRecords answers the stored form of an event's records, given
// each record's JSON: each without its seq and observed time when every
// record has them as the event's, else the whole array. eventID is the
// id the event's stored payload starts with (payloadEventID), nil when
// none: when every record names it, they leave it out too (noIDMark).
func compactRecords(recs [][]byte, seq int64, at time.Time, eventID []byte) []byte {
	size := 2 + len(recs)
	for _, r := range recs {
		size += len(r)
	}
	whole := func() []byte {
		out := make([]byte, 0, size)
		out = append(out, '[')
		out = append(out, bytes.Join(recs, []byte(","))...)
		return append(out, ']')
	}
	if len(recs) == 0 {
		return whole()
	}
	seqField, atField, err := recordFields(seq, rowTime(at))
	if err != nil {
		return whole()
	}
	var idField []byte
	if len(eventID) > 0 {
		idField = append(append([]byte(`"event_id":"`), eventID...), '"', ',')
	}
	out := make([]byte, 0, size)
	out = append(out, compactMark, '[')
	noID := idField != nil
	for i, r := range recs {
		head, mid, ok := splitRecord(r, seqField)
		if !ok || !bytes.HasPrefix(r[mid:], atField) {
			return whole()
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r[:head]...)
		out = append(out, r[head+len(seqField):mid]...)
		out = append(out, r[mid+len(atField):]...)
		noID = noID && bytes.Equal(r[head+len(seqField):mid], idField)
	}
	out = append(out, ']')
	if !noID {
		return out
	}
	// Every record names the payload's event: cut "event_id":"<id>", out
	// of each compact record (the scan expandRecords makes finds it).
	short := make([]byte, 0, len(out))
	short = append(short, noIDMark)
	for _, r := range recs {
		head, mid, _ := splitRecord(r, seqField)
		if len(short) > 1 {
			short = append(short, ',')
		} else {
			short = append(short, '[')
		}
		short = append(short, r[:head]...)
		short = append(short, r[mid+len(atField):]...)
	}
	return append(short, ']')
}

// expandRecords answers an event's records (JSON array) from their stored
// form. payload is the event's stored payload (at least its start), which
// names the event id of records stored with noIDMark.
func expandRecords(stored []byte, seq int64, at time.Time, payload []byte) ([]byte, error) {
	if len(stored) == 0 || (stored[0] != compactMark && stored[0] != noIDMark) {
		return stored, nil
	}
	var idField []byte
	if stored[0] == noIDMark {
		id := payloadEventID(payload)
		if id == nil {
			return nil, fmt.Errorf("engine: records of event %d: the payload names no event id", seq)
		}
		idField = append(append([]byte(`"event_id":"`), id...), '"', ',')
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(stored[1:], &recs); err != nil {
		return nil, fmt.Errorf("engine: records of event %d: %w", seq, err)
	}
	seqField, atField, err := recordFields(seq, at)
	if err != nil {
		return nil, fmt.Errorf("engine: records of event %d: %w", seq, err)
	}
	out := make([]byte, 0, len(stored)+len(recs)*(len(seqField)+len(atField)+len(idField)))
	out = append(out, '[')
	for i, r := range recs {
		// The compact record is {"type":T,"event_id":E,rest: head ends
		// after T, mid after E; without its event id, {"type":T,rest.
		const typ, ev = `{"type":"`, `"event_id":"`
		end := bytes.IndexByte(r[min(len(typ), len(r)):], '"')
		if !bytes.HasPrefix(r, []byte(typ)) || end < 0 {
			return nil, fmt.Errorf("engine: records of event %d: record %d is not compact", seq, i)
		}
		head := len(typ) + end + 2
		if idField != nil {
			if head > len(r) {
				return nil, fmt.Errorf("engine: records of event %d: record %d is not compact", seq, i)
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, r[:head]...)
			out = append(out, seqField...)
			out = append(out, idField...)
			out = append(out, atField...)
			out = append(out, r[head:]...)
			continue
		}
		e := bytes.IndexByte(r[min(head+len(ev), len(r)):], '"')
		if head+len(ev) > len(r) || !bytes.HasPrefix(r[head:], []byte(ev)) || e < 0 {
			return nil, fmt.Errorf("engine: records of event %d: record %d is not compact", seq, i)
		}
		mid := head + len(ev) + e + 2
		if mid > len(r) {
			return nil, fmt.Errorf("engine: records of event %d: record %d is not compact", seq, i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r[:head]...)
		out = append(out, seqField...)
		out = append(out, r[head:mid]...)
		out = append(out, atField...)
		out = append(out, r[mid:]...)
	}
	return append(out, ']'), nil
}
