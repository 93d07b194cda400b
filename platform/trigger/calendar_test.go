package trigger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestParseCalendarAccepts(t *testing.T) {
	for _, expr := range []string{
		"* * * * *",
		"0 9 * * 1-5",
		"*/15 * * * *",
		"0-30/5 0,12 * * *",
		"05 09 1 1 *",
		"0 0 29 2 *",
		"59 23 31 12 *",
		"0 0 * * 0,6",
		"  1\t2 * * *  ",
		"0 " + strings.Repeat("1,", 31) + "2 * * *", // 32 terms
		"*/99 * * * *",
	} {
		if _, err := ParseCalendar(expr); err != nil {
			t.Errorf("%q: %v", expr, err)
		}
	}
}

func TestParseCalendarRefuses(t *testing.T) {
	cases := []struct{ expr, field, kind string }{
		{"", "", "empty"},
		{"   ", "", "empty"},
		{strings.Repeat(" ", 250) + "* * * * *", "", "too_long"},
		{"@daily", "", "macro"},
		{"TZ=Europe/Paris 0 9 * * *", "", "time_zone"},
		{"CRON_TZ=UTC 0 9 * * *", "", "time_zone"},
		{"0 0 9 * * *", "", "field_count"},
		{"0 0 9 * * * 2027", "", "field_count"},
		{"0 9 * *", "", "field_count"},
		{"0 9 * JAN *", FieldMonth, "name"},
		{"0 9 * * MON-FRI", FieldDayOfWeek, "name"},
		{"0 9 * * WED", FieldDayOfWeek, "name"},
		{"0 9 ? * *", FieldDayOfMonth, "question_mark"},
		{"0 9 L * *", FieldDayOfMonth, "last"},
		{"0 9 15W * *", FieldDayOfMonth, "weekday"},
		{"0 9 * * 1#2", FieldDayOfWeek, "hash"},
		{"H 9 * * *", FieldMinute, "random"},
		{"0 R * * *", FieldHour, "random"},
		{"0~30 9 * * *", FieldMinute, "random"},
		{"0 9 1 * 1", FieldDayOfWeek, "both_days"},
		{"0 0 31 4,6,9,11 *", FieldDayOfMonth, "never"},
		{"0 0 30,31 2 *", FieldDayOfMonth, "never"},
		{"60 * * * *", FieldMinute, "out_of_range"},
		{"* 24 * * *", FieldHour, "out_of_range"},
		{"* * 0 * *", FieldDayOfMonth, "out_of_range"},
		{"* * * 13 *", FieldMonth, "out_of_range"},
		{"* * * * 7", FieldDayOfWeek, "out_of_range"},
		{"005 * * * *", FieldMinute, "number"},
		{"50-10 * * * *", FieldMinute, "wrapping_range"},
		{"*/0 * * * *", FieldMinute, "step"},
		{"*/100 * * * *", FieldMinute, "step"},
		{"*/ * * * *", FieldMinute, "step"},
		{"5/10 * * * *", FieldMinute, "step_base"},
		{"1,,2 * * * *", FieldMinute, "empty_term"},
		{"0 " + strings.Repeat("1,", 32) + "2 * * *", FieldHour, "list_too_long"},
		{"1-2-3 * * * *", FieldMinute, "number"},
		{"-1 * * * *", FieldMinute, "number"},
		{"0 9 * * *;", FieldDayOfWeek, "character"},
		{"0 9 * * *\n", FieldDayOfWeek, "character"},
	}
	for _, c := range cases {
		_, err := ParseCalendar(c.expr)
		var ce *CalendarError
		if !errors.As(err, &ce) {
			t.Errorf("%q: accepted (%v)", c.expr, err)
			continue
		}
		if ce.Field != c.field || ce.Kind != c.kind || ce.Reason == "" {
			t.Errorf("%q: %+v, want field %q kind %q", c.expr, ce, c.field, c.kind)
		}
	}
}

func TestCalendarNext(t *testing.T) {
	is := is.New(t)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		is.NoErr(err)
		return v
	}
	cases := []struct {
		expr, from string
		incl       bool
		want       string
	}{
		{"* * * * *", "2026-11-24T08:05:30Z", false, "2026-11-24T08:06:00Z"},
		{"* * * * *", "2026-11-24T08:05:30Z", true, "2026-11-24T08:05:00Z"},
		{"0 9 * * 1-5", "2026-11-27T09:00:00Z", false, "2026-11-30T09:00:00Z"}, // Friday to Monday
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", false, "2028-02-29T00:00:00Z"},
		{"0 0 29 2 *", "2097-03-01T00:00:00Z", false, "2104-02-29T00:00:00Z"}, // 2100 is not a leap year
		{"0-30/10 12 * * *", "2026-01-01T12:25:00Z", false, "2026-01-01T12:30:00Z"},
	}
	for _, c := range cases {
		cal, err := ParseCalendar(c.expr)
		is.NoErr(err)
		next, err := cal.Next(at(c.from), c.incl)
		is.NoErr(err)
		is.Equal(next.Format(time.RFC3339), c.want) // c.expr from c.from
	}
	cal, _ := ParseCalendar("0 0 1 1 *")
	_, err := cal.Next(at("9999-06-01T00:00:00Z"), false)
	is.True(errors.Is(err, ErrNoOccurrence)) // the next one is in year 10000
	prev, err := cal.Prev(at("2026-01-01T00:00:00Z"))
	is.NoErr(err)
	is.Equal(prev.Format(time.RFC3339), "2025-01-01T00:00:00Z") // strictly before
	weekdays, _ := ParseCalendar("0 9 * * 1-5")
	prev, err = weekdays.Prev(at("2026-11-30T08:00:00Z")) // Monday morning
	is.NoErr(err)
	is.Equal(prev.Format(time.RFC3339), "2026-11-27T09:00:00Z")
	up := cal.Upcoming(at("2026-06-01T00:00:00Z"), 5)
	is.Equal(len(up), 5)
	is.Equal(up[4].Format(time.RFC3339), "2031-01-01T00:00:00Z")
}

// FuzzParseCalendar: the parser never panics; an accepted calendar is
// canonical (parsing its String gives the same sets), obeys the grammar's
// bounds, and its next occurrences match it and move forward.
func FuzzParseCalendar(f *testing.F) {
	for _, s := range []string{"* * * * *", "0 9 * * 1-5", "*/15 0-23/2 * 1,6 *", "0 0 29 2 *", "@daily", "0 9 ? * MON#2",
		"50-10 * * * *", "0 0 31 4 *", "1,2,3 4 5 6 *"} {
		f.Add(s)
	}
	from := time.Date(2026, 11, 24, 8, 5, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := ParseCalendar(expr)
		if err != nil {
			var ce *CalendarError
			if !errors.As(err, &ce) || ce.Reason == "" || ce.Kind == "" {
				t.Fatalf("%q: refusal without a reason: %v", expr, err)
			}
			return
		}
		if len(expr) > MaxCronLen {
			t.Fatalf("%q: accepted over %d characters", expr, MaxCronLen)
		}
		parts := strings.Fields(c.String())
		if len(parts) != 5 || (parts[2] != "*" && parts[4] != "*") {
			t.Fatalf("%q: accepted as %q", expr, c.String())
		}
		again, err := ParseCalendar(c.String())
		if err != nil || again.sets != c.sets {
			t.Fatalf("%q: canonical form %q does not parse the same: %v", expr, c.String(), err)
		}
		prev := from
		for range 3 {
			next, err := c.Next(prev, false)
			if err != nil {
				t.Fatalf("%q: an occurring calendar has no next occurrence after %s: %v", expr, prev, err)
			}
			if !next.After(prev) || !c.Matches(next) {
				t.Fatalf("%q: next %s after %s", expr, next, prev)
			}
			prev = next
		}
	})
}
