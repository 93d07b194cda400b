package api_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
)

func TestParseIfMatch(t *testing.T) {
	ok := map[string]int64{`"1"`: 1, `1`: 1, `"42"`: 42, ` "7" `: 7, "\t9": 9, `"999999999999999999"`: 999999999999999999}
	for in, want := range ok {
		got, err := api.ParseIfMatch([]string{in})
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		`W/"1"`: "weak", `w/"1"`: "weak", `*`: "wildcard", `"1", "2"`: "multiple", `1,2`: "multiple",
		`"0"`: "zero", `0`: "zero", `+1`: "signed", `-1`: "signed", `"+1"`: "signed", `"-1"`: "signed",
		`01`: "zero_padded", `"007"`: "zero_padded", ``: "empty", `""`: "empty", `"`: "malformed", `"1`: "malformed",
		`1"`: "malformed", `" 1"`: "malformed", `1e3`: "malformed", `0x1`: "malformed", `١`: "malformed",
		`"9999999999999999999"`: "too_large", `1.5`: "malformed",
	}
	for in, kind := range bad {
		_, err := api.ParseIfMatch([]string{in})
		var e *api.Error
		if !errors.As(err, &e) || e.Status() != 422 || e.Code != "PF-ETAG" || e.Diagnostics[0].Code != kind {
			t.Errorf("%q: %v, want 422 PF-ETAG %s", in, err, kind)
		}
	}
	for _, vals := range [][]string{nil, {}, {`"1"`, `"1"`}} {
		if _, err := api.ParseIfMatch(vals); err == nil {
			t.Errorf("%q accepted", vals)
		}
	}
}

func TestCheckRevision(t *testing.T) {
	is := is.New(t)
	is.NoErr(api.CheckRevision(0, 5))
	is.NoErr(api.CheckRevision(5, 5))
	var e *api.Error
	is.True(errors.As(api.CheckRevision(4, 5), &e))
	is.Equal(e.Status(), 412)
	is.Equal(e.Headers["ETag"], `"5"`)
	is.Equal(api.FormatETag(12), `"12"`)
}

// FuzzParseIfMatch: never panics; an accepted value is a positive revision
// whose canonical forms (quoted and bare) parse back to it.
func FuzzParseIfMatch(f *testing.F) {
	for _, s := range []string{`"1"`, `W/"1"`, `*`, `01`, `-1`, `"1","2"`, "", `"`, "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := api.ParseIfMatch([]string{s})
		if err != nil {
			return
		}
		if n <= 0 {
			t.Fatalf("%q gave %d", s, n)
		}
		for _, form := range []string{api.FormatETag(n), strconv.FormatInt(n, 10)} {
			m, err := api.ParseIfMatch([]string{form})
			if err != nil || m != n {
				t.Fatalf("%q round trip: %d %v", form, m, err)
			}
		}
	})
}
