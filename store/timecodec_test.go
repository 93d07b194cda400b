package store

import (
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
