package store

import "time"

// Times of the callbacks and factory tables are stored as Unix milliseconds
// and served in UTC, so a value read back equals the value served.

// Millis is t as stored: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis is a stored time in UTC.
func FromMillis(n int64) time.Time { return time.UnixMilli(n).UTC() }

// OptFromMillis is a stored optional time: 0 means none.
func OptFromMillis(n int64) *time.Time {
	if n == 0 {
		return nil
	}
	t := FromMillis(n)
	return &t
}
