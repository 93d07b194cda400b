package store

import (
	"database/sql"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestMillisRoundTrip(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 11, 24, 10, 0, 0, 123_456_789, time.FixedZone("x", 3600))
	got := FromMillis(Millis(at))
	is.Equal(got, at.UTC().Truncate(time.Millisecond))
	is.Equal(got.Location(), time.UTC)
	is.Equal(OptFromMillis(0), (*time.Time)(nil))
	is.Equal(*OptFromMillis(Millis(at)), got)
}

func TestOptionalMillis(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 11, 24, 10, 0, 0, 123_456_789, time.UTC)
	is.Equal(OptMillis(nil), nil)
	is.Equal(OptMillis(&at), any(at.UnixMilli()))
	is.Equal(FromNullMillis(sql.NullInt64{}), (*time.Time)(nil))
	is.Equal(*FromNullMillis(sql.NullInt64{Int64: Millis(at), Valid: true}), at.Truncate(time.Millisecond))
}

func TestMicrosRoundTrip(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 11, 24, 10, 0, 0, 123_456_789, time.FixedZone("x", -7200))
	got := FromMicros(Micros(at))
	is.Equal(got, at.UTC().Truncate(time.Microsecond))
	is.Equal(got.Location(), time.UTC)
}

// TestTextOrder: text times are fixed-width, so their text order is their
// time order, across zones and whole seconds; older variable-width rows
// still read.
func TestTextOrder(t *testing.T) {
	is := is.New(t)
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	times := []time.Time{
		base,
		base.Add(time.Nanosecond),
		base.Add(100 * time.Millisecond),
		base.Add(time.Second).In(time.FixedZone("x", 3600)),
		base.Add(time.Second + time.Microsecond),
	}
	for i, at := range times {
		s := Text(at)
		is.Equal(len(s), len("2006-01-02T15:04:05.000000000Z"))
		is.Equal(s[len(s)-1], byte('Z'))
		is.True(FromText(s).Equal(at))
		if i > 0 {
			is.True(Text(times[i-1]) < s)
		}
	}
	is.Equal(Text(base), "2026-11-24T10:00:00.000000000Z")
	is.True(FromText("2026-11-24T10:00:00.5Z").Equal(base.Add(500 * time.Millisecond))) // written before fixed width
	is.True(FromText("2026-11-24T11:00:00+01:00").Equal(base))
	is.True(FromText("not a time").IsZero())
}
