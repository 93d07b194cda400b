package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCheckJSON(t *testing.T) {
	cases := []struct {
		name, body, reason string
	}{
		{"plain object", `{"text":"a","n":1,"o":{"text":"b"},"l":[{"a":1},{"a":2}]}`, ""},
		{"same key in sibling objects", `[{"a":1},{"a":1}]`, ""},
		{"pair of surrogates", `{"e":"\ud83d\ude00"}`, ""},
		{"escaped backslash before u", `{"e":"\\ud800"}`, ""},
		{"other escapes", `{"e":"\n\t\"\u00e9"}`, ""},
		{"syntax left to the decoder", `{"a":`, ""},
		{"duplicate top-level key", `{"text":"a","text":"b"}`, `duplicate key "text"`},
		{"duplicate after nested value", `{"a":{"b":1},"a":2}`, `duplicate key "a"`},
		{"duplicate nested key", `{"o":[{"k":1,"k":2}]}`, `duplicate key "k"`},
		{"duplicate through an escape", `{"a":1,"\u0061":2}`, `duplicate key "a"`},
		{"lone high surrogate", `{"e":"\ud800"}`, `lone surrogate \ud800`},
		{"high then non-low", `{"e":"\ud800\u0041"}`, `lone surrogate \ud800`},
		{"lone low surrogate", `{"e":"x\udc00"}`, `lone surrogate \udc00`},
		{"surrogate in a key", `{"\udfff":1}`, `lone surrogate \udfff`},
		{"invalid UTF-8", "{\"e\":\"a\xffb\"}", "invalid UTF-8"},
		{"truncated UTF-8", "{\"e\":\"\xe2\x82\"}", "invalid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			err := CheckJSON([]byte(c.body))
			if c.reason == "" {
				is.NoErr(err)
				return
			}
			var je *JSONError
			is.True(errors.As(err, &je))
			is.Equal(je.Reason, c.reason)
		})
	}
}

func TestCheckJSONOffset(t *testing.T) {
	is := is.New(t)
	err := CheckJSON([]byte("{\"a\":\"\xff\"}"))
	var je *JSONError
	is.True(errors.As(err, &je))
	is.Equal(je.Offset, int64(6))
	is.True(strings.Contains(err.Error(), "byte 6"))
}

func TestSingleHeader(t *testing.T) {
	is := is.New(t)
	h := http.Header{}
	v, err := SingleHeader(h, "Authorization")
	is.NoErr(err)
	is.Equal(v, "")
	h.Add("Authorization", "Bearer a")
	v, err = SingleHeader(h, "authorization")
	is.NoErr(err)
	is.Equal(v, "Bearer a")
	h.Add("Authorization", "Bearer b")
	_, err = SingleHeader(h, "Authorization")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "2 Authorization headers"))
}

func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `"\ud800"`, `[{"\u0061":1,"a":[]}]`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = CheckJSON(data) // must not panic on any input
	})
}

func TestBodyProblem(t *testing.T) {
	is := is.New(t)
	p, ok := BodyProblem(&BodyError{Status: http.StatusRequestEntityTooLarge, Msg: "too big"}, "XY")
	is.True(ok)
	is.Equal(p.Status, 413)
	is.Equal(p.Code, "XY-TOO-LARGE")
	p, _ = BodyProblem(&BodyError{Status: http.StatusUnsupportedMediaType, Msg: "json only"}, "XY")
	is.Equal(p.Code, "XY-UNSUPPORTED-MEDIA-TYPE")
	p, _ = BodyProblem(fmt.Errorf("decode: %w", &BodyError{Status: 422, Kind: "type", Field: "a.b", Msg: "a.b: want a string"}), "XY")
	is.Equal(p.Status, 400)
	is.Equal(p.Code, "XY-BAD-REQUEST")
	is.Equal(p.Diagnostics, []any{FieldDiagnostic{Field: "a.b", Message: "a.b: want a string"}})
	p, ok = BodyProblem(CheckJSON([]byte(`{"a":1,"a":2}`)), "XY")
	is.True(ok)
	is.Equal(p.Code, "XY-BAD-REQUEST")
	is.True(strings.Contains(p.Message, `duplicate key "a"`))
	_, ok = BodyProblem(errors.New("other"), "XY")
	is.True(!ok)
}
