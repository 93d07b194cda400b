package decision

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// evalCell parses src for a column type, converts in and matches it both
// through the general test and through the compiled fast-path check, which
// must agree.
func evalCell(t *testing.T, typ colType, src string, in any) tri {
	t.Helper()
	tst, err := parseUnaryTests(src, typ)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	v, err := convert(in, typ)
	if err != nil {
		t.Fatalf("convert %#v: %v", in, err)
	}
	got := tst.match(&v)
	ch := newCheck(0, tst)
	if fast := ch.matches(&v); fast != (got == triTrue) {
		t.Fatalf("%q on %#v: fast path says %v, general test says %v", src, in, fast, got)
	}
	return got
}

type cellCase struct {
	src  string
	in   any
	want tri
}

func runCells(t *testing.T, typ colType, cases []cellCase) {
	t.Helper()
	for _, tc := range cases {
		if got := evalCell(t, typ, tc.src, tc.in); got != tc.want {
			t.Errorf("%s column: %q on %#v = %v, want %v", typ, tc.src, tc.in, got, tc.want)
		}
	}
}

const (
	T = triTrue
	F = triFalse
	N = triNull
)

func TestNumberTests(t *testing.T) {
	runCells(t, typeNumber, []cellCase{
		{"-", 5.0, T}, {"-", nil, T},
		{"5", 5.0, T}, {"5", 5, T}, {"5", 4.999, F}, {"5", 5.001, F}, {"5", nil, F},
		{"= 5", 5.0, T}, {"=5", 6.0, F},
		{"!= 5", 5.0, F}, {"!= 5", 6.0, T}, {"!= 5", nil, T}, // FEEL: null != 5 is true
		{"< 10", 9.999, T}, {"< 10", 10.0, F}, {"< 10", 10.001, F}, {"< 10", nil, N},
		{"<= 10", 10.0, T}, {"<= 10", 10.0001, F}, {"<= 10", 9.0, T},
		{"> 10", 10.0, F}, {"> 10", 10.0000001, T}, {"> 10", nil, N},
		{">= 10", 10.0, T}, {">= 10", 9.99, F},
		{"[1..5]", 1.0, T}, {"[1..5]", 5.0, T}, {"[1..5]", 0.999, F}, {"[1..5]", 5.001, F}, {"[1..5]", 3, T},
		{"(1..5)", 1.0, F}, {"(1..5)", 5.0, F}, {"(1..5)", 1.0001, T}, {"(1..5)", 4.9999, T},
		{"]1..5[", 1.0, F}, {"]1..5[", 5.0, F}, {"]1..5[", 3.0, T},
		{"[1..5)", 1.0, T}, {"[1..5)", 5.0, F}, {"[1..5[", 5.0, F},
		{"(1..5]", 1.0, F}, {"(1..5]", 5.0, T}, {"]1..5]", 1.0, F}, {"]1..5]", 5.0, T},
		{"[1..5]", nil, N},
		{"1, 3, 5", 3.0, T}, {"1, 3, 5", 2.0, F}, {"1, 3, 5", nil, F},
		{"< 0, > 10", -1.0, T}, {"< 0, > 10", 11.0, T}, {"< 0, > 10", 5.0, F}, {"< 0, > 10", nil, N},
		{"1, < 0", nil, N}, // false or null is null
		{"not(1, 2)", 3.0, T}, {"not(1, 2)", 1.0, F}, {"not(1, 2)", nil, T},
		{"not(< 5)", 6.0, T}, {"not(< 5)", 4.0, F}, {"not(< 5)", nil, N},
		{"not( [1..2] , 7 )", 7.0, F}, {"not( [1..2] , 7 )", 3.0, T},
		{"null", nil, T}, {"null", 0.0, F}, {"= null", nil, T}, {"!= null", nil, F}, {"!= null", 0.0, T},
		{"not(null)", nil, F}, {"not(null)", 1.0, T}, {"null, 5", nil, T},
		{"-5", -5.0, T}, {"< -5", -6.0, T}, {"< -5", -5.0, F}, {"[-5..-1]", -5.0, T}, {"[-5..-1]", -0.5, F},
		{".5", 0.5, T}, {"-.5", -0.5, T}, {"0", -0.0, T},
	})
}

func TestNumberExactness(t *testing.T) {
	is := is.New(t)
	a, b := 0.1, 0.2
	sum := a + b // 0.30000000000000004 at run time (constants would fold exactly)
	runCells(t, typeNumber, []cellCase{
		{"0.1", 0.1, T},                 // float64 0.1 means the decimal 0.1
		{"0.3", sum, F},                 // 0.30000000000000004 is not 0.3
		{"> 0.3", sum, T},               //
		{"0.30000000000000004", sum, T}, // its shortest decimal
		{"9007199254740993", int64(9007199254740993), T},
		{"9007199254740993", int64(9007199254740992), F}, // same float64, different integers
		{"> 9007199254740992", int64(9007199254740993), T},
		{"0.1000000000000000000001", 0.1, F},
		{"< 0.1000000000000000000001", 0.1, T},
		{"> 0.0999999999999999999999", 0.1, T},
		{"[0.1..0.1000000000000000000001)", 0.1, T},
		{"(0.1..0.1000000000000000000001]", 0.1, F},
		{"18446744073709551615", uint64(18446744073709551615), T},
		{"18446744073709551614", uint64(18446744073709551615), F},
		{"0.1", json.Number("0.1"), T},
		{"100", json.Number("1e2"), T},
		{"0.1", json.Number("0.10000000000000000001"), F},
		{"1.5", float32(1.5), T},
		{"0.1", float32(0.1), T}, // float32's own shortest decimal
	})
	// A 400-digit literal still compares exactly (its float64 is +Inf).
	big := "1" + strings.Repeat("0", 400)
	is.Equal(evalCell(t, typeNumber, "< "+big, 1e308), T)
	is.Equal(evalCell(t, typeNumber, big, 1e308), F)
}

func TestStringTests(t *testing.T) {
	runCells(t, typeString, []cellCase{
		{`"DE"`, "DE", T}, {`"DE"`, "de", F}, {`"DE"`, "", F}, {`"DE"`, nil, F},
		{`"DE","AT"`, "AT", T}, {`"DE", "AT"`, "CH", F},
		{`not("DE","AT")`, "CH", T}, {`not("DE","AT")`, "DE", F}, {`not("DE","AT")`, nil, T},
		{`!= "DE"`, "AT", T}, {`!= "DE"`, "DE", F},
		{`< "M"`, "L", T}, {`< "M"`, "M", F}, {`< "M"`, "N", F}, {`<= "M"`, "M", T},
		{`> "M"`, "Ma", T}, {`>= "b"`, "a", F},
		{`["a".."c"]`, "a", T}, {`["a".."c"]`, "b", T}, {`["a".."c"]`, "c", T}, {`["a".."c"]`, "ca", F},
		{`("a".."c")`, "a", F}, {`("a".."c")`, "c", F},
		{`"a\"b"`, `a"b`, T}, {`"\u00e9"`, "é", T}, {`"a\\b"`, `a\b`, T}, {`"tab\there"`, "tab\there", T},
		{`""`, "", T},
		{`"Ä" , "b"`, "Ä", T},
		{`null`, nil, T}, {`"x", null`, nil, T},
	})
}

func TestBooleanTests(t *testing.T) {
	runCells(t, typeBoolean, []cellCase{
		{"true", true, T}, {"true", false, F}, {"true", nil, F},
		{"false", false, T}, {"= false", true, F},
		{"!= true", false, T}, {"!= true", true, F}, {"!= true", nil, T},
		{"true, false", false, T}, {"not(true)", false, T}, {"not(true)", nil, T},
		{"null", nil, T},
	})
}

func TestDateTests(t *testing.T) {
	runCells(t, typeDate, []cellCase{
		{`date("2024-01-02")`, "2024-01-02", T}, {`date("2024-01-02")`, "2024-01-03", F},
		{`date( "2024-01-02" )`, time.Date(2024, 1, 2, 23, 0, 0, 0, time.UTC), T},
		{`< date("2024-01-02")`, "2024-01-01", T}, {`< date("2024-01-02")`, "2024-01-02", F},
		{`<= date("2024-01-02")`, "2024-01-02", T},
		{`[date("2024-01-01")..date("2024-01-31")]`, "2024-01-01", T},
		{`[date("2024-01-01")..date("2024-01-31")]`, "2024-01-31", T},
		{`[date("2024-01-01")..date("2024-01-31")]`, "2023-12-31", F},
		{`[date("2024-01-01")..date("2024-01-31")]`, "2024-02-01", F},
		{`(date("2024-01-01")..date("2024-01-31"))`, "2024-01-01", F},
		{`(date("2024-01-01")..date("2024-01-31"))`, "2024-01-31", F},
		{`@"2024-02-29"`, "2024-02-29", T},
		{`> date("1999-12-31")`, "2000-01-01", T},
		{`> date("0001-01-01")`, "9999-12-31", T},
		{`date("2024-01-02")`, nil, F}, {`< date("2024-01-02")`, nil, N},
	})
}

func TestDateTimeTests(t *testing.T) {
	const ten = `date and time("2024-01-02T10:00:00Z")`
	runCells(t, typeDateTime, []cellCase{
		{ten, "2024-01-02T10:00:00Z", T},
		{ten, "2024-01-02T12:00:00+02:00", T}, // same instant
		{ten, "2024-01-02T10:00:00-00:30", F},
		{ten, time.Date(2024, 1, 2, 11, 0, 0, 0, time.FixedZone("x", 3600)), T},
		{"> " + ten, "2024-01-02T10:00:00.000000001Z", T},
		{"> " + ten, "2024-01-02T10:00:00Z", F},
		{">= " + ten, "2024-01-02T10:00:00Z", T},
		{"< " + ten, "2024-01-02T09:59:59.999Z", T},
		{`[date and time("2024-01-01T00:00:00Z")..date and time("2024-01-02T00:00:00Z"))`, "2024-01-01T00:00:00Z", T},
		{`[date and time("2024-01-01T00:00:00Z")..date and time("2024-01-02T00:00:00Z"))`, "2024-01-02T00:00:00Z", F},
		{`[date and time("2024-01-01T00:00:00Z")..date and time("2024-01-02T00:00:00Z"))`, "2024-01-01T23:59:59.999999999Z", T},
		// Local (no offset) values compare with local values only.
		{`date and time("2024-01-02T10:00:00")`, "2024-01-02T10:00:00", T},
		{`< date and time("2024-01-02T10:00:00")`, "2024-01-02T09:00:00", T},
		{`< date and time("2024-01-02T10:00:00")`, "2024-01-02T09:00:00Z", N},
		{`date and time("2024-01-02T10:00:00")`, "2024-01-02T10:00:00Z", N},
		{`date and time("2024-01-02")`, "2024-01-02T00:00:00", T},
		{`@"2024-01-02T10:00:00Z"`, "2024-01-02T10:00:00Z", T},
		{"< " + ten, nil, N},
	})
}

func TestDurationTests(t *testing.T) {
	runCells(t, typeDuration, []cellCase{
		{`duration("P1D")`, "PT24H", T}, {`duration("P1D")`, "PT23H59M59S", F},
		{`> duration("PT2H")`, "PT2H0.000000001S", T}, {`> duration("PT2H")`, "PT2H", F},
		{`> duration("PT2H")`, 2*time.Hour + time.Nanosecond, T},
		{`>= duration("PT2H")`, "PT120M", T},
		{`< duration("P1Y")`, "P11M", T}, {`< duration("P1Y")`, "P12M", F}, {`< duration("P1Y")`, "P1Y1M", F},
		{`< duration("P1Y")`, "P1D", N}, // years-months vs days-time: not comparable
		{`duration("P1Y")`, "P365D", N},
		{`< duration("-PT1H")`, "-PT2H", T}, {`< duration("-PT1H")`, "-PT1H", F}, {`< duration("-PT1H")`, "PT0S", F},
		{`< duration("-PT1H")`, "-PT1H0.5S", T},
		{`[duration("PT1H")..duration("PT2H")]`, "PT1H", T}, {`[duration("PT1H")..duration("PT2H")]`, "PT2H", T},
		{`[duration("PT1H")..duration("PT2H")]`, "PT2H1S", F}, {`(duration("PT1H")..duration("PT2H")]`, "PT1H", F},
		{`@"P2Y"`, "P24M", T},
		{`@"-P1D"`, "-PT24H", T},
		{`duration("P1D")`, nil, F},
	})
}

func TestUnaryTestSyntaxErrors(t *testing.T) {
	cases := []struct {
		typ    colType
		src    string
		want   string
		offset int
	}{
		{typeNumber, "", "empty test", 0},
		{typeNumber, "   ", "empty test", 0},
		{typeString, "DE", `unknown name "DE" (string literals need double quotes`, 0},
		{typeNumber, "< ", "expected a literal", 2},
		{typeNumber, "[1..5", "closing the interval", 5},
		{typeNumber, "[1 5]", "'..'", 3},
		{typeNumber, "[5..1]", "lower endpoint is greater", 0},
		{typeNumber, "(5..5]", "interval is empty", 0},
		{typeNumber, "[5..5]", "", -1}, // valid: matches 5 only
		{typeNumber, "1,,2", "expected a literal", 2},
		{typeNumber, "1,", "expected a literal", 2},
		{typeNumber, "not(1", "')' closing not(", 5},
		{typeNumber, "not 1", "'(' after not", 4},
		{typeNumber, "not(-)", "unexpected '-'", 4},
		{typeNumber, "not(1) 2", "not(...) must be the whole test", 7},
		{typeNumber, "not(1), 2", "not(...) must be the whole test", 6},
		{typeNumber, "1 2", "',' or end of test", 2},
		{typeNumber, "- 5", "unexpected '-'", 0},
		{typeNumber, "--5", "unexpected '-'", 0},
		{typeNumber, "1.2.3", "malformed number", 0},
		{typeNumber, "1.", "malformed number", 0},
		{typeNumber, "12abc", "malformed number", 0},
		{typeString, `"abc`, "unterminated string", 0},
		{typeString, `"a\qb"`, `unknown escape \q`, 2},
		{typeString, `"\u12"`, `short \u escape`, 1},
		{typeNumber, "< null", "null cannot be used here", 2},
		{typeNumber, "[null..1]", "null cannot be used here", 1},
		{typeNumber, `"DE"`, "string literal does not match the column type number", 0},
		{typeString, "5", "number literal does not match the column type string", 0},
		{typeDate, `date and time("2024-01-02T10:00:00Z")`, "does not match the column type date", 0},
		{typeDateTime, `date("2024-01-02")`, "does not match the column type dateTime", 0},
		{typeDate, `date("2024-02-30")`, "invalid date", 5},
		{typeDate, `date("2023-02-29")`, "invalid date", 5},
		{typeDate, `date(2024)`, "a string argument", 5},
		{typeDate, `date("2024-01-02"`, "')'", 17},
		{typeDateTime, `date and time("2024-01-02T25:00:00Z")`, "invalid date and time", 14},
		{typeDateTime, `date and time("2024-01-02T10:00:00+15:00")`, "invalid date and time", 14},
		{typeDateTime, `date and "x"`, "'time'", 9},
		{typeDuration, `duration("P1Y2D")`, "mixes years/months", 9},
		{typeDuration, `duration("PT")`, "T without time components", 9},
		{typeDuration, `duration("P")`, "no components", 9},
		{typeDuration, `duration("P1H")`, "wrong part", 9},
		{typeDuration, `duration("PT1S2M")`, "out of order", 9},
		{typeDuration, `duration("P1.5D")`, "only seconds", 9},
		{typeDuration, `duration("PT9999999999999S")`, "too large", 9},
		{typeDuration, `[duration("P1Y")..duration("P400D")]`, "not comparable", 0},
		{typeDateTime, `[date and time("2024-01-01T00:00:00")..date and time("2024-01-02T00:00:00Z")]`, "not comparable", 0},
		{typeBoolean, "< true", "boolean values cannot be compared", 0},
		{typeBoolean, "[true..false]", "boolean values cannot form an interval", 0},
		{typeNumber, `time("10:00:00")`, `unknown name "time"`, 0},
		{typeNumber, `not(not(1))`, `unknown name "not"`, 4},
		{typeNumber, `@5`, "string after @", 1},
		{typeNumber, `5 # comment`, "unexpected character", 2},
		{typeNumber, strings.Repeat("1,", 3000) + "1", "longer than 4096 bytes", 0},
	}
	for _, tc := range cases {
		_, err := parseUnaryTests(tc.src, tc.typ)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: unexpected error %v", tc.src, err)
			}
			continue
		}
		var se *syntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q (%s): want syntax error containing %q, got %v", tc.src, tc.typ, tc.want, err)
			continue
		}
		if !strings.Contains(se.msg, tc.want) {
			t.Errorf("%q (%s): error %q does not contain %q", tc.src, tc.typ, se.msg, tc.want)
		}
		if se.off != tc.offset {
			t.Errorf("%q (%s): offset %d, want %d (%s)", tc.src, tc.typ, se.off, tc.offset, se.msg)
		}
	}
}

func TestConvertInputErrors(t *testing.T) {
	cases := []struct {
		typ  colType
		in   any
		want string
	}{
		{typeNumber, "18", `expected number, got string "18"`},
		{typeNumber, true, "expected number, got boolean true"},
		{typeNumber, map[string]any{}, "expected number, got object"},
		{typeNumber, []any{1.0}, "expected number, got array"},
		{typeNumber, json.Number("1x"), "invalid number"},
		{typeString, 5.0, "expected string, got number 5"},
		{typeBoolean, "true", `expected boolean, got string "true"`},
		{typeDate, "2024-1-2", "invalid date"},
		{typeDate, "2024-01-02T00:00:00Z", "invalid date"},
		{typeDate, 20240102.0, "expected date, got number"},
		{typeDateTime, "2024-01-02 10:00:00", "invalid date and time"},
		{typeDateTime, "2024-01-02T10:00:00.1234567891Z", "invalid date and time"},
		{typeDuration, "1 day", "invalid duration"},
		{typeDuration, 3600.0, "expected duration, got number"},
	}
	for _, tc := range cases {
		_, err := convert(tc.in, tc.typ)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("convert(%#v, %s) = %v, want error containing %q", tc.in, tc.typ, err, tc.want)
		}
	}
}

func TestConvertRejectsNonFinite(t *testing.T) {
	is := is.New(t)
	zero := 0.0
	for _, f := range []float64{zero / zero, 1 / zero, -1 / zero} {
		_, err := convert(f, typeNumber)
		is.True(err != nil)
	}
}
