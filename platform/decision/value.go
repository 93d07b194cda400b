package decision

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// colType is the declared type of an input or output column.
type colType uint8

const (
	typeAny colType = iota // outputs only: untyped scalar
	typeNumber
	typeString
	typeBoolean
	typeDate
	typeDateTime
	typeDuration
)

// colTypeNames maps the format's type names to column types (immutable).
var colTypeNames = map[string]colType{
	"number":   typeNumber,
	"string":   typeString,
	"boolean":  typeBoolean,
	"date":     typeDate,
	"dateTime": typeDateTime,
	"duration": typeDuration,
}

func (t colType) String() string {
	switch t {
	case typeNumber:
		return "number"
	case typeString:
		return "string"
	case typeBoolean:
		return "boolean"
	case typeDate:
		return "date"
	case typeDateTime:
		return "dateTime"
	case typeDuration:
		return "duration"
	default:
		return "any"
	}
}

// ordered reports whether values of the type support < and intervals.
func (t colType) ordered() bool {
	return t != typeBoolean && t != typeAny
}

// kind is the runtime kind of a value.
type kind uint8

const (
	kNull kind = iota
	kNumber
	kString
	kBool
	kDate       // i = days since 1970-01-01
	kDateTime   // i = seconds since the epoch (wall clock read as UTC when !zoned), n = nanoseconds
	kYMDuration // i = months
	kDTDuration // i = seconds, n = nanoseconds (same sign as i)
)

func (k kind) String() string {
	switch k {
	case kNull:
		return "null"
	case kNumber:
		return "number"
	case kString:
		return "string"
	case kBool:
		return "boolean"
	case kDate:
		return "date"
	case kDateTime:
		return "dateTime"
	case kYMDuration:
		return "years-and-months duration"
	case kDTDuration:
		return "days-and-time duration"
	}
	return "unknown"
}

// fits reports whether a value of kind k belongs to column type t.
func (k kind) fits(t colType) bool {
	switch t {
	case typeNumber:
		return k == kNumber
	case typeString:
		return k == kString
	case typeBoolean:
		return k == kBool
	case typeDate:
		return k == kDate
	case typeDateTime:
		return k == kDateTime
	case typeDuration:
		return k == kYMDuration || k == kDTDuration
	case typeAny:
		return true
	}
	return false
}

// value is a typed FEEL value. It is a plain struct (no interface boxing) so
// that converting inputs and matching tests does not allocate.
//
// Numbers: f is the value rounded to the nearest float64. When r is nil the
// value is "float-safe": its exact decimal value is the shortest decimal that
// round-trips f (strconv 'g', -1), so comparing two float-safe values by f is
// exact. Otherwise r holds the exact value. Because rounding to float64 is
// monotonic, differing f values order exactly; only ties fall back to r.
type value struct {
	k     kind
	zoned bool // kDateTime: has a UTC offset
	b     bool
	n     int32
	i     int64
	f     float64
	r     *big.Rat
	s     string
}

func numberFromFloat(f float64) value { return value{k: kNumber, f: f} }

func numberFromInt(v int64) value {
	const maxExact = 1 << 53
	if v >= -maxExact && v <= maxExact {
		return value{k: kNumber, f: float64(v)}
	}
	return value{k: kNumber, f: float64(v), r: new(big.Rat).SetInt64(v)}
}

func numberFromUint(v uint64) value {
	if v <= 1<<53 {
		return value{k: kNumber, f: float64(v)}
	}
	return value{k: kNumber, f: float64(v), r: new(big.Rat).SetUint64(v)}
}

// numberFromDecimal parses decimal text exactly. allowExp permits an
// exponent (JSON numbers); FEEL literals have none.
func numberFromDecimal(s string, allowExp bool) (value, error) {
	if !validDecimal(s, allowExp) {
		return value{}, fmt.Errorf("invalid number %q", clip(s))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return value{}, fmt.Errorf("invalid number %q", clip(s))
	}
	f, _ := strconv.ParseFloat(s, 64) // range errors still yield ±Inf/0, which keep monotonic order
	v := value{k: kNumber, f: f, r: r}
	if sr := shortestRat(f); sr != nil && sr.Cmp(r) == 0 {
		v.r = nil
	}
	return v, nil
}

// validDecimal accepts [-]digits[.digits] | [-].digits, plus [eE][+-]digits when allowExp.
func validDecimal(s string, allowExp bool) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			frac++
		}
		if frac == 0 {
			return false
		}
		digits += frac
	}
	if digits == 0 {
		return false
	}
	if allowExp && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			exp++
		}
		if exp == 0 || exp > 3 {
			return false
		}
	}
	return i == len(s)
}

// shortestRat is the exact value of the shortest decimal that round-trips f.
func shortestRat(f float64) *big.Rat {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return nil
	}
	return r
}

// rat returns the exact value of a number (allocates for float-safe values).
func (v *value) rat() *big.Rat {
	if v.r != nil {
		return v.r
	}
	if r := shortestRat(v.f); r != nil {
		return r
	}
	return new(big.Rat)
}

func cmpNumber(a, b *value) int {
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	case a.r == nil && b.r == nil:
		return 0
	}
	return a.rat().Cmp(b.rat())
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compare orders two non-null values; ok is false when FEEL leaves the
// comparison undefined (null): booleans, mixed duration kinds, or a zoned
// date-time against a local one.
func compare(a, b *value) (c int, ok bool) {
	if a.k != b.k {
		return 0, false
	}
	switch a.k {
	case kNumber:
		return cmpNumber(a, b), true
	case kString:
		return strings.Compare(a.s, b.s), true
	case kDate, kYMDuration:
		return cmpInt(a.i, b.i), true
	case kDateTime:
		if a.zoned != b.zoned {
			return 0, false
		}
		if c := cmpInt(a.i, b.i); c != 0 {
			return c, true
		}
		return cmpInt(int64(a.n), int64(b.n)), true
	case kDTDuration:
		if c := cmpInt(a.i, b.i); c != 0 {
			return c, true
		}
		return cmpInt(int64(a.n), int64(b.n)), true
	}
	return 0, false
}

// equal is FEEL equality for two values; null equals only null. ok is false
// when the values are not comparable (the FEEL result would be null).
func equal(a, b *value) (eq, ok bool) {
	if a.k == kNull || b.k == kNull {
		return a.k == b.k, true
	}
	if a.k == kBool && b.k == kBool {
		return a.b == b.b, true
	}
	c, ok := compare(a, b)
	return ok && c == 0, ok
}

// ---- dates, date-times and durations ----

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// atoiN parses exactly n ASCII digits at s[i:].
func atoiN(s string, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	v := 0
	for j := i; j < i+n; j++ {
		if !isDigit(s[j]) {
			return 0, false
		}
		v = v*10 + int(s[j]-'0')
	}
	return v, true
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil converts a proleptic Gregorian date to days since 1970-01-01
// (H. Hinnant's algorithm), avoiding time.Time so parsing stays allocation-free.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// parseDatePart parses YYYY-MM-DD at the start of s (years 0001-9999).
func parseDatePart(s string) (days int64, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := atoiN(s, 0, 4)
	m, ok2 := atoiN(s, 5, 2)
	d, ok3 := atoiN(s, 8, 2)
	if !ok1 || !ok2 || !ok3 || y < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

func parseDate(s string) (value, error) {
	days, ok := parseDatePart(s)
	if !ok || len(s) != 10 {
		return value{}, fmt.Errorf("invalid date %q (want YYYY-MM-DD)", clip(s))
	}
	return value{k: kDate, i: days}, nil
}

// parseDateTime parses YYYY-MM-DDThh:mm:ss[.fffffffff][Z|±hh:mm]. Without an
// offset the value is a local (unzoned) date-time; a bare date means midnight local.
func parseDateTime(s string) (value, error) {
	bad := func() (value, error) {
		return value{}, fmt.Errorf("invalid date and time %q (want YYYY-MM-DDThh:mm:ss[.f][Z|±hh:mm])", clip(s))
	}
	days, ok := parseDatePart(s)
	if !ok {
		return bad()
	}
	if len(s) == 10 {
		return value{k: kDateTime, i: days * 86400}, nil
	}
	if len(s) < 19 || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return bad()
	}
	hh, ok1 := atoiN(s, 11, 2)
	mm, ok2 := atoiN(s, 14, 2)
	ss, ok3 := atoiN(s, 17, 2)
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
		return bad()
	}
	i := 19
	nanos := 0
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			if i-start < 9 {
				nanos = nanos*10 + int(s[i]-'0')
			} else {
				return bad() // more precision than nanoseconds
			}
			i++
		}
		if i == start {
			return bad()
		}
		for k := i - start; k < 9; k++ {
			nanos *= 10
		}
	}
	v := value{k: kDateTime, i: days*86400 + int64(hh*3600+mm*60+ss), n: int32(nanos)}
	switch {
	case i == len(s):
		return v, nil
	case s[i] == 'Z' && i+1 == len(s):
		v.zoned = true
		return v, nil
	case (s[i] == '+' || s[i] == '-') && len(s) == i+6 && s[i+3] == ':':
		oh, ok1 := atoiN(s, i+1, 2)
		om, ok2 := atoiN(s, i+4, 2)
		if !ok1 || !ok2 || om > 59 || oh*60+om > 14*60 {
			return bad()
		}
		off := int64(oh*3600 + om*60)
		if s[i] == '-' {
			off = -off
		}
		v.i -= off
		v.zoned = true
		return v, nil
	}
	return bad()
}

// maxDurationDigits bounds each duration component so the sums cannot overflow int64.
const maxDurationDigits = 12

// parseDuration parses an ISO 8601 / XML Schema duration. FEEL distinguishes
// years-and-months durations (P1Y2M) from days-and-time durations
// (P1DT2H3M4.5S); a literal mixing both is rejected because the two kinds are
// not comparable.
func parseDuration(s string) (value, error) {
	bad := func(why string) (value, error) {
		return value{}, fmt.Errorf("invalid duration %q: %s", clip(s), why)
	}
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	if i >= len(s) || s[i] != 'P' {
		return bad("must start with P")
	}
	i++
	var years, months, days, hours, mins, secs int64
	nanos := 0
	seenYM, seenDT, inTime, sawComponent := false, false, false, false
	last := byte(0) // enforces designator order
	order := "YMDHmS"
	for i < len(s) {
		if s[i] == 'T' {
			if inTime {
				return bad("repeated T")
			}
			inTime = true
			i++
			if i == len(s) {
				return bad("T without time components")
			}
			continue
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return bad("expected a number")
		}
		if i-start > maxDurationDigits {
			return bad("component too large")
		}
		n, _ := strconv.ParseInt(s[start:i], 10, 64)
		frac := -1
		if i < len(s) && s[i] == '.' {
			i++
			fs := i
			f := 0
			for i < len(s) && isDigit(s[i]) {
				if i-fs >= 9 {
					return bad("more than nanosecond precision")
				}
				f = f*10 + int(s[i]-'0')
				i++
			}
			if i == fs {
				return bad("expected fraction digits")
			}
			for k := i - fs; k < 9; k++ {
				f *= 10
			}
			frac = f
		}
		if i >= len(s) {
			return bad("missing designator")
		}
		d := s[i]
		i++
		if d == 'M' && inTime {
			d = 'm'
		}
		if !inTime && (d == 'H' || d == 'S') || inTime && (d == 'Y' || d == 'D') {
			return bad("designator in the wrong part")
		}
		pos := strings.IndexByte(order, d)
		if pos < 0 {
			return bad(fmt.Sprintf("unknown designator %q", d))
		}
		if last != 0 && pos <= strings.IndexByte(order, last) {
			return bad("designators out of order or repeated")
		}
		last = d
		if frac >= 0 && d != 'S' {
			return bad("only seconds may have a fraction")
		}
		sawComponent = true
		switch d {
		case 'Y':
			years, seenYM = n, true
		case 'M':
			months, seenYM = n, true
		case 'D':
			days, seenDT = n, true
		case 'H':
			hours, seenDT = n, true
		case 'm':
			mins, seenDT = n, true
		case 'S':
			secs, seenDT = n, true
			if frac > 0 {
				nanos = frac
			}
		}
	}
	if !sawComponent {
		return bad("no components")
	}
	if seenYM && seenDT {
		return bad("mixes years/months with days/time (FEEL keeps the two duration kinds apart)")
	}
	if seenYM {
		m := years*12 + months
		if neg {
			m = -m
		}
		return value{k: kYMDuration, i: m}, nil
	}
	total := days*86400 + hours*3600 + mins*60 + secs
	n32 := int32(nanos)
	if neg {
		total, n32 = -total, -n32
	}
	return value{k: kDTDuration, i: total, n: n32}, nil
}

func durationFromGo(d time.Duration) value {
	return value{k: kDTDuration, i: int64(d / time.Second), n: int32(d % time.Second)}
}

func dateFromTime(t time.Time) value {
	y, m, d := t.Date()
	return value{k: kDate, i: daysFromCivil(y, int(m), d)}
}

func dateTimeFromTime(t time.Time) value {
	return value{k: kDateTime, i: t.Unix(), n: int32(t.Nanosecond()), zoned: true}
}

// ---- converting Go values ----

// convert turns a JSON-like Go value into a typed value for a column.
// A nil value is null. Errors describe the mismatch without echoing large data.
func convert(raw any, t colType) (value, error) {
	if raw == nil {
		return value{}, nil
	}
	switch t {
	case typeNumber:
		switch x := raw.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return value{}, fmt.Errorf("expected a finite number, got %v", x)
			}
			return numberFromFloat(x), nil
		case float32:
			f := float64(x)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return value{}, fmt.Errorf("expected a finite number, got %v", x)
			}
			// Use the float32's own shortest decimal, not its widened binary value.
			return numberFromDecimal(strconv.FormatFloat(f, 'f', -1, 32), false)
		case int:
			return numberFromInt(int64(x)), nil
		case int8:
			return numberFromInt(int64(x)), nil
		case int16:
			return numberFromInt(int64(x)), nil
		case int32:
			return numberFromInt(int64(x)), nil
		case int64:
			return numberFromInt(x), nil
		case uint:
			return numberFromUint(uint64(x)), nil
		case uint8:
			return numberFromUint(uint64(x)), nil
		case uint16:
			return numberFromUint(uint64(x)), nil
		case uint32:
			return numberFromUint(uint64(x)), nil
		case uint64:
			return numberFromUint(x), nil
		case json.Number:
			return numberFromDecimal(string(x), true)
		}
	case typeString:
		if s, ok := raw.(string); ok {
			return value{k: kString, s: s}, nil
		}
	case typeBoolean:
		if b, ok := raw.(bool); ok {
			return value{k: kBool, b: b}, nil
		}
	case typeDate:
		switch x := raw.(type) {
		case string:
			return parseDate(x)
		case time.Time:
			return dateFromTime(x), nil
		}
	case typeDateTime:
		switch x := raw.(type) {
		case string:
			return parseDateTime(x)
		case time.Time:
			return dateTimeFromTime(x), nil
		}
	case typeDuration:
		switch x := raw.(type) {
		case string:
			return parseDuration(x)
		case time.Duration:
			return durationFromGo(x), nil
		}
	}
	return value{}, fmt.Errorf("expected %s, got %s", t, describe(raw))
}

// describe names a Go value's JSON-ish type for error messages.
func describe(raw any) string {
	switch x := raw.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", clip(x))
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return fmt.Sprintf("number %v", x)
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case time.Time:
		return "time " + x.Format(time.RFC3339Nano)
	case time.Duration:
		return "duration " + x.String()
	}
	return fmt.Sprintf("%T", raw)
}

// clip shortens user text quoted in error messages.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
