package store

import (
	"database/sql"
	"time"
)

// Times in SQLite tables use one of three encodings, each named here so
// that a subsystem picks one rather than writing its own. Whatever the
// encoding, a stored time sorts as the time it stands for, in SQL as in Go
// (mixing encodings in one column is what once started bridge jobs out of
// order).
//
//   - Millis: INTEGER Unix milliseconds, the default (platform, callbacks,
//     factory, ingest expiry). Read back in UTC, so a value read back
//     equals the value served.
//   - Micros: INTEGER Unix microseconds, where milliseconds are too coarse
//     to order by (a callback subscription's active_since).
//   - Text: TEXT in UTC with exactly nine fraction digits
//     ("2006-01-02T15:04:05.000000000Z"), fixed width so that text order is
//     time order (bridge tables, ingest records; the bridge's migration
//     0102 rewrote its older, variable-width rows).

// Millis is t as stored: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis is a stored time in UTC.
func FromMillis(n int64) time.Time { return time.UnixMilli(n).UTC() }

// OptMillis is an optional time as stored: nil (NULL) for none.
func OptMillis(t *time.Time) any {
	if t == nil {
		return nil
	}
	return Millis(*t)
}

// OptFromMillis is a stored optional time: 0 means none.
func OptFromMillis(n int64) *time.Time {
	if n == 0 {
		return nil
	}
	t := FromMillis(n)
	return &t
}

// FromNullMillis is a stored optional time: NULL means none.
func FromNullMillis(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := FromMillis(v.Int64)
	return &t
}

// Micros is t as stored in a microsecond column.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros is a time stored in a microsecond column, in UTC.
func FromMicros(n int64) time.Time { return time.UnixMicro(n).UTC() }

// textLayout is RFC 3339 with a fixed nine-digit fraction; for UTC times
// the zone is always "Z".
const textLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Text is t as stored in a text column.
func Text(t time.Time) string { return t.UTC().Format(textLayout) }

// FromText reads a text column. Any RFC 3339 form is accepted, so rows
// written before a column became fixed-width stay readable; a value that
// is not a time (never written by Text) reads as the zero time.
func FromText(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
