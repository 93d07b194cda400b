package trigger

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/adhocore/gronx"
)

// Calendar grammar limits (docs/platform-api.md, "Generic rules" and "Limits").
const (
	MaxCronLen   = 256
	MaxListTerms = 32
	// maxYear is the last year an occurrence can have: later times have
	// no RFC 3339 form, so such a calendar has no representable future
	// occurrence (PF-SCHEDULE-RANGE).
	maxYear = 9999
)

// Calendar field names, as diagnostics name them.
const (
	FieldMinute     = "minute"
	FieldHour       = "hour"
	FieldDayOfMonth = "day_of_month"
	FieldMonth      = "month"
	FieldDayOfWeek  = "day_of_week"
)

// field is one position of a five-field expression.
type field struct {
	name     string
	min, max int
}

var fields = [5]field{
	{FieldMinute, 0, 59}, {FieldHour, 0, 23}, {FieldDayOfMonth, 1, 31}, {FieldMonth, 1, 12}, {FieldDayOfWeek, 0, 6},
}

// CalendarError says which field of a calendar is refused and why. Field
// is "" when the refusal concerns the whole expression. Kind is a stable
// identifier (diagnostic code) for clients.
type CalendarError struct {
	Field  string
	Kind   string
	Reason string
}

func (e *CalendarError) Error() string {
	if e.Field == "" {
		return "cron: " + e.Reason
	}
	return "cron " + e.Field + ": " + e.Reason
}

func calErr(f, kind, format string, args ...any) *CalendarError {
	return &CalendarError{Field: f, Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// Calendar is a parsed five-field UTC calendar (see docs/platform-api.md,
// "Schedules"): the canonical expression and the set of values of each
// field.
type Calendar struct {
	expr string
	sets [5]uint64
}

// String is the canonical expression: the fields joined by one space.
func (c Calendar) String() string { return c.expr }

// ParseCalendar checks expr against the calendar grammar of docs/platform-api.md before
// anything else reads it: five fields (minute 0-59, hour 0-23, day of
// month 1-31, month 1-12, day of week 0-6, Sunday 0), UTC only, at least
// one of the day fields "*", numbers of at most two digits, non-wrapping
// ranges, lists of at most 32 terms, positive steps on "*" or a range.
// Names, macros, seconds or year fields, "?", "L", "W", "#", random
// syntax, time zone prefixes, calendars that never occur and expressions
// over 256 characters are refused with a *CalendarError naming the field.
func ParseCalendar(expr string) (Calendar, error) {
	if len(expr) > MaxCronLen {
		return Calendar{}, calErr("", "too_long", "the expression has %d characters; at most %d are accepted", len(expr), MaxCronLen)
	}
	if strings.TrimSpace(expr) == "" {
		return Calendar{}, calErr("", "empty", "the expression is empty")
	}
	if err := checkAlphabet(expr); err != nil {
		return Calendar{}, err
	}
	parts := strings.FieldsFunc(expr, func(r rune) bool { return r == ' ' || r == '\t' })
	switch {
	case len(parts) == 6 || len(parts) == 7:
		return Calendar{}, calErr("", "field_count", "%d fields: seconds and year fields are not accepted; send exactly five fields (minute hour day-of-month month day-of-week)", len(parts))
	case len(parts) != 5:
		return Calendar{}, calErr("", "field_count", "%d fields; send exactly five (minute hour day-of-month month day-of-week)", len(parts))
	}
	var c Calendar
	for i, p := range parts {
		set, err := parseField(fields[i], p)
		if err != nil {
			return Calendar{}, err
		}
		c.sets[i] = set
	}
	if parts[2] != "*" && parts[4] != "*" {
		return Calendar{}, calErr(FieldDayOfWeek, "both_days", "day_of_month and day_of_week are both restricted; at least one of them must be *")
	}
	if !occurs(c.sets[2], c.sets[3]) {
		return Calendar{}, calErr(FieldDayOfMonth, "never", "no month of the calendar has any of its days of the month: the calendar never occurs")
	}
	c.expr = strings.Join(parts, " ")
	return c, nil
}

// checkAlphabet refuses every character outside digits, "*", ",", "-",
// "/", space and tab, naming the syntax it most likely belongs to.
func checkAlphabet(expr string) error {
	if strings.HasPrefix(expr, "@") {
		return calErr("", "macro", "macros such as @daily are not accepted; write the five fields")
	}
	up := strings.ToUpper(expr)
	if strings.HasPrefix(up, "TZ=") || strings.HasPrefix(up, "CRON_TZ=") {
		return calErr("", "time_zone", "calendars are in UTC only; time zone prefixes are not accepted")
	}
	for i := 0; i < len(expr); i++ {
		ch := expr[i]
		switch {
		case ch >= '0' && ch <= '9', ch == '*', ch == ',', ch == '-', ch == '/', ch == ' ', ch == '\t':
			continue
		case ch == '?':
			return calErr(fieldAt(expr, i), "question_mark", "? is not accepted; use *")
		case ch == '#':
			return calErr(fieldAt(expr, i), "hash", "# (nth weekday of the month) is not accepted")
		case ch == 'L' && !letterAround(expr, i):
			return calErr(fieldAt(expr, i), "last", "L (last day) is not accepted")
		case ch == 'W' && !letterAround(expr, i):
			return calErr(fieldAt(expr, i), "weekday", "W (nearest weekday) is not accepted")
		case (ch == 'H' || ch == 'R') && !letterAround(expr, i), ch == '~':
			return calErr(fieldAt(expr, i), "random", "random syntax (H, R, ~) is not accepted")
		case (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'):
			return calErr(fieldAt(expr, i), "name", "names of months and days are not accepted; use numbers")
		default:
			return calErr(fieldAt(expr, i), "character", "the character %q is not accepted", rune(ch))
		}
	}
	return nil
}

// letterAround reports whether the byte at i is part of a longer word
// (a name such as "WED" rather than the single letter "W").
func letterAround(s string, i int) bool {
	isLetter := func(j int) bool {
		return j >= 0 && j < len(s) && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))
	}
	return isLetter(i-1) || isLetter(i+1)
}

// fieldAt names the field holding byte i ("" past the fifth).
func fieldAt(expr string, i int) string {
	n, in := -1, false
	for j := 0; j <= i && j < len(expr); j++ {
		sp := expr[j] == ' ' || expr[j] == '\t'
		if !sp && !in {
			n++
		}
		in = !sp
	}
	if n < 0 || n >= len(fields) {
		return ""
	}
	return fields[n].name
}

// parseField parses one field into the set of its values (bit v set for
// value v).
func parseField(f field, s string) (uint64, error) {
	terms := strings.Split(s, ",")
	if len(terms) > MaxListTerms {
		return 0, calErr(f.name, "list_too_long", "a list has at most %d terms; this one has %d", MaxListTerms, len(terms))
	}
	var set uint64
	for _, t := range terms {
		v, err := parseTerm(f, t)
		if err != nil {
			return 0, err
		}
		set |= v
	}
	return set, nil
}

func parseTerm(f field, t string) (uint64, error) {
	if t == "" {
		return 0, calErr(f.name, "empty_term", "a list has an empty term")
	}
	base, stepText, hasStep := strings.Cut(t, "/")
	lo, hi := f.min, f.max
	switch {
	case base == "*":
	case strings.Contains(base, "-"):
		a, b, _ := strings.Cut(base, "-")
		var err error
		if lo, err = number(f, a); err != nil {
			return 0, err
		}
		if hi, err = number(f, b); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, calErr(f.name, "wrapping_range", "the range %s wraps around; write it as two ranges (%d-%d,%d-%d)", base, lo, f.max, f.min, hi)
		}
	default:
		if hasStep {
			return 0, calErr(f.name, "step_base", "a step applies to * or a range, not to the number %s", base)
		}
		n, err := number(f, base)
		if err != nil {
			return 0, err
		}
		lo, hi = n, n
	}
	step := 1
	if hasStep {
		if stepText == "" || len(stepText) > 2 || strings.Trim(stepText, "0123456789") != "" {
			return 0, calErr(f.name, "step", "the step %q must be a whole number of one or two digits", stepText)
		}
		step, _ = strconv.Atoi(stepText)
		if step <= 0 {
			return 0, calErr(f.name, "step", "the step must be positive")
		}
	}
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << uint(v)
	}
	return set, nil
}

// number parses one value of f: one or two digits within its bounds.
func number(f field, s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, calErr(f.name, "number", "%q is not a number", s)
	}
	if len(s) > 2 {
		return 0, calErr(f.name, "number", "%s has more than two digits", s)
	}
	n, _ := strconv.Atoi(s)
	if n < f.min || n > f.max {
		return 0, calErr(f.name, "out_of_range", "%d is outside %d-%d", n, f.min, f.max)
	}
	return n, nil
}

// daysIn is the longest length of each month (February in a leap year).
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// occurs reports whether some month of the calendar has one of its days
// of the month.
func occurs(days, months uint64) bool {
	for m := 1; m <= 12; m++ {
		if months&(1<<uint(m)) == 0 {
			continue
		}
		for d := 1; d <= daysIn[m]; d++ {
			if days&(1<<uint(d)) != 0 {
				return true
			}
		}
	}
	return false
}

// Matches reports whether the minute of t (UTC) is an occurrence.
func (c Calendar) Matches(t time.Time) bool {
	t = t.UTC()
	has := func(i, v int) bool { return c.sets[i]&(1<<uint(v)) != 0 }
	return has(0, t.Minute()) && has(1, t.Hour()) && has(2, t.Day()) && has(3, int(t.Month())) && has(4, int(t.Weekday()))
}

// ErrNoOccurrence: the calendar has no representable occurrence after the
// given time (the next one would fall after the year 9999).
var ErrNoOccurrence = errors.New("the calendar has no representable future occurrence")

// Next is the first occurrence at or after t (inclusive) or strictly after
// the minute of t (exclusive), computed by gronx and checked against the
// parsed fields.
func (c Calendar) Next(t time.Time, inclusive bool) (time.Time, error) {
	t = t.UTC().Truncate(time.Minute)
	if t.Year() > maxYear {
		return time.Time{}, ErrNoOccurrence
	}
	next, err := gronx.NextTickAfter(c.expr, t, inclusive)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrNoOccurrence, err)
	}
	next = next.UTC()
	if next.Year() > maxYear {
		return time.Time{}, ErrNoOccurrence
	}
	if next.Before(t) || (!inclusive && !next.After(t)) || !c.Matches(next) || next.Second() != 0 {
		return time.Time{}, fmt.Errorf("%w: the computed occurrence %s does not fit the calendar", ErrNoOccurrence, next.Format(time.RFC3339))
	}
	return next, nil
}

// Upcoming lists up to n occurrences strictly after the minute of t.
func (c Calendar) Upcoming(t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		next, err := c.Next(t, false)
		if err != nil {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// Prev is the last occurrence strictly before the minute of t.
func (c Calendar) Prev(t time.Time) (time.Time, error) {
	t = t.UTC().Truncate(time.Minute)
	prev, err := gronx.PrevTickBefore(c.expr, t, false)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrNoOccurrence, err)
	}
	prev = prev.UTC()
	if !prev.Before(t) || !c.Matches(prev) || prev.Second() != 0 {
		return time.Time{}, fmt.Errorf("%w: the computed occurrence %s does not fit the calendar", ErrNoOccurrence, prev.Format(time.RFC3339))
	}
	return prev, nil
}
