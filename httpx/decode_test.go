package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestTypeErrorNamesTheValue: a wrong value inside a map or an array is
// named by its own path, not by the map or array holding it (issue 20,
// item 16: metadata errors named the wrong field).
func TestTypeErrorNamesTheValue(t *testing.T) {
	type req struct {
		Prompt   string            `json:"prompt"`
		Metadata map[string]string `json:"metadata"`
		Nested   struct {
			Items []struct {
				N int `json:"n"`
			} `json:"items"`
		} `json:"nested"`
		List []string `json:"list"`
	}
	for body, want := range map[string]string{
		`{"metadata":{"a":1}}`:                     "metadata.a",
		`{"metadata":{"a":"x","b":{"c":1}}}`:       "metadata.b",
		`{"metadata":[1]}`:                         "metadata",
		`{"metadata":"x"}`:                         "metadata",
		`{"nested":{"items":[{"n":1},{"n":"x"}]}}`: "nested.items[1].n",
		" { \"list\" : [ \"a\" ,\n 2 ] }":          "list[1]",
		`{"list":{"a":1}}`:                         "list",
		`{"prompt":{"x":[1,2]}}`:                   "prompt",
		`{"prompt":1}`:                             "prompt",
		`{"metadata":{"k\u00e9":false}}`:           "metadata.ké",
	} {
		var r req
		err := DecodeBytes([]byte(body), &r, DecodeOptions{})
		be, ok := err.(*BodyError)
		if !ok || be.Kind != "type" {
			t.Fatalf("%s: %v", body, err)
		}
		if be.Field != want {
			t.Errorf("%s: field %q, want %q", body, be.Field, want)
		}
	}
	var r req
	if err, ok := DecodeBytes([]byte(`{"metadata":`), &r, DecodeOptions{}).(*BodyError); !ok || err.Kind != BodySyntax || err.Field != "" {
		t.Errorf("truncated data: %v", err)
	}
}

// TestUnknownFieldNamesItsPath: an unknown property inside an object,
// array or embedded struct is named by its path.
func TestUnknownFieldNamesItsPath(t *testing.T) {
	type Base struct {
		ID string `json:"id"`
	}
	type item struct {
		Field string          `json:"field"`
		Value json.RawMessage `json:"value"`
		Any   any             `json:"any"`
	}
	type req struct {
		Base
		Name    string            `json:"name"`
		Items   []item            `json:"items"`
		Ptr     *item             `json:"ptr"`
		Meta    map[string]item   `json:"meta"`
		Labels  map[string]string `json:"labels"`
		private int
	}
	for body, want := range map[string]string{
		`{"bogus":1}`: "bogus",
		`{"labels":{"bogus":"x"},"items":[{"field":"a"},{"field":"b","bogus":1}]}`: "items[1].bogus",
		`{"ptr":{"value":{"bogus":1},"any":{"bogus":2},"bogus":3}}`:                "ptr.bogus",
		`{"meta":{"k":{"FIELD":"x","bogus":1}}}`:                                   "meta.k.bogus",
		`{"id":"x","ID":"y","name":"n","private":1}`:                               "private",
	} {
		var r req
		err := DecodeBytes([]byte(body), &r, DecodeOptions{})
		be, ok := err.(*BodyError)
		if !ok || be.Kind != "unknown_field" {
			t.Fatalf("%s: %v", body, err)
		}
		if be.Field != want {
			t.Errorf("%s: field %q, want %q", body, be.Field, want)
		}
	}
}

// The platform's contract (Exact): every problem with its JSON Pointer.

type strictInner struct {
	Tenant string `json:"tenant,omitempty"`
	Count  int8   `json:"count"`
}

type strictBody struct {
	Name    string            `json:"name" api:"required"`
	Scope   strictInner       `json:"scope"`
	Tags    []string          `json:"tags,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Maybe   *int              `json:"maybe,omitempty"`
	Any     any               `json:"any,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	When    time.Time         `json:"when,omitzero"`
	Ratio   float64           `json:"ratio,omitempty"`
	On      bool              `json:"on,omitempty"`
	Size    uint16            `json:"size,omitempty"`
	Ignored string            `json:"-"`
}

var exact = DecodeOptions{Exact: true}

func TestDecodeExactAccepts(t *testing.T) {
	is := is.New(t)
	var b strictBody
	err := DecodeBytes([]byte(`{"name":"n","scope":{"tenant":"t","count":-128},"tags":["a","b"],"labels":{"x/y":"z"},
		"maybe":null,"any":{"k":[1,"two",null]},"raw":{"keep":  1},"when":"2026-01-02T03:04:05Z","ratio":0.5,"on":true,"size":65535}`), &b, exact)
	is.NoErr(err)
	is.Equal(b.Name, "n")
	is.Equal(b.Scope.Count, int8(-128))
	is.Equal(b.Tags, []string{"a", "b"})
	is.Equal(b.Labels["x/y"], "z")
	is.True(b.Maybe == nil)
	is.Equal(b.Any.(map[string]any)["k"].([]any)[1], "two")
	is.Equal(string(b.Raw), `{"keep":1}`)
	is.Equal(b.When, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	is.Equal(b.Size, uint16(65535))
	is.NoErr(DecodeBytes([]byte(`{"name":"\ud83d\ude00 é"}`), &b, exact)) // a surrogate pair is one character
	is.Equal(b.Name, "😀 é")
	five := 5
	is.NoErr(DecodeBytes([]byte(`{"name":"n","maybe":5}`), &b, exact))
	is.Equal(*b.Maybe, five)
}

func TestDecodeExactRefuses(t *testing.T) {
	cases := []struct {
		in, code, path string
	}{
		{``, "empty", ""},
		{`   `, "empty", ""},
		{`{`, "syntax", ""},
		{`{"name":"a",}`, "syntax", ""},
		{`{"name":"a"}x`, "trailing", ""},
		{`{"name":"a"}{}`, "trailing", ""},
		{`[]`, "type", ""},
		{`"s"`, "type", ""},
		{`null`, "type", ""},
		{`{}`, "required", "/name"},
		{`{"name":"a","nope":1}`, "unknown_field", "/nope"},
		{`{"NAME":"a","name":"a"}`, "unknown_field", "/NAME"},
		{`{"name":"a","name":"b"}`, "duplicate_key", "/name"},
		{`{"name":"a","\u006eame":"b"}`, "duplicate_key", "/name"},
		{`{"name":"a","labels":{"k":"x","k":"y"}}`, "duplicate_key", "/labels/k"},
		{"{\"name\":\"a\xff\"}", "encoding", ""},
		{"{\"name\":\"a\",\"labels\":{\"\xc3\":1}}", "encoding", ""},
		{`{"name":"\ud800"}`, "encoding", ""},
		{`{"name":"\udc00x"}`, "encoding", ""},
		{`{"name":"a","tags":["\ud83d\u0041"]}`, "encoding", ""},
		{`{"name":"a","scope":{"tenant":"t","tenant":"u"}}`, "duplicate_key", "/scope/tenant"},
		{`{"name":null}`, "type", "/name"},
		{`{"name":1}`, "type", "/name"},
		{`{"name":"a","scope":[]}`, "type", "/scope"},
		{`{"name":"a","scope":{"count":128}}`, "type", "/scope/count"},
		{`{"name":"a","scope":{"count":1.5}}`, "type", "/scope/count"},
		{`{"name":"a","scope":{"count":"1"}}`, "type", "/scope/count"},
		{`{"name":"a","size":-1}`, "type", "/size"},
		{`{"name":"a","size":65536}`, "type", "/size"},
		{`{"name":"a","tags":[1]}`, "type", "/tags/0"},
		{`{"name":"a","tags":"a"}`, "type", "/tags"},
		{`{"name":"a","labels":{"a/b":1}}`, "type", "/labels/a~1b"},
		{`{"name":"a","labels":{"~":1}}`, "type", "/labels/~0"},
		{`{"name":"a","when":"yesterday"}`, "type", "/when"},
		{`{"name":"a","on":"true"}`, "type", "/on"},
		{`{"name":"a","Ignored":"x"}`, "unknown_field", "/Ignored"},
		{`{"name":"a","ratio":1e400}`, "type", "/ratio"},
		{`{"name":"a","any":[1e400]}`, "type", "/any"},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), "depth", ""},
	}
	for _, c := range cases {
		var b strictBody
		err := DecodeBytes([]byte(c.in), &b, exact)
		var e *BodyError
		if !errors.As(err, &e) || e.Status != 400 || len(e.Diagnostics) == 0 {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		d := e.Diagnostics[0]
		if d.Code != c.code || e.Kind != c.code || (c.code != "depth" && d.Pointer != c.path) {
			t.Errorf("%s: diagnostic %+v, want %s at %q", c.in, d, c.code, c.path)
		}
	}
}

// TestDecodeMessages: the platform's wording of each diagnostic, and the
// toolkit's of the first problem (BodyError.Msg, what the bridge,
// callbacks and the factory answer).
func TestDecodeMessages(t *testing.T) {
	cases := []struct {
		in, message, summary string
	}{
		{``, "a JSON request body is required", "request body is required"},
		{`{"name":"a"} x`, "the body has data after its JSON value", "request body has data after the JSON value"},
		{`{"name":`, "truncated JSON", "truncated JSON body"},
		{`{"name" 1}`, "malformed JSON at byte 8", "malformed JSON at byte 9"},
		{`{"name":"a","name":"b"}`, "the key appears more than once", `request body is not acceptable JSON at byte 11: duplicate key "name"`},
		{"{\"name\":\"\xff\"}", "invalid UTF-8 at byte 9", "request body is not acceptable JSON at byte 9: invalid UTF-8"},
		{`{"name":"\ud800"}`, `lone surrogate \ud800 at byte 9`, `request body is not acceptable JSON at byte 9: lone surrogate \ud800`},
		{`{"name":"a","bogus":1}`, `unknown property "bogus"`, `unknown field "bogus"`},
		{`{"name":"a","scope":{"bogus":1}}`, `unknown property "bogus"`, `unknown field "scope.bogus"`},
		{`{}`, "is required", `field "name" is required`},
		{`{"name":1}`, "must be a string", `field "name" must be a string`},
		{`{"name":"a","on":1}`, "must be a boolean", `field "on" must be a boolean`},
		{`{"name":"a","scope":{"count":"1"}}`, "must be an integer", `field "scope.count" must be of another type`},
		{`{"name":"a","scope":{"count":300}}`, "must be an integer within range", `field "scope.count" must be of another type`},
		{`{"name":"a","size":-1}`, "must be a non-negative integer within range", `field "size" must be of another type`},
		{`{"name":"a","ratio":"x"}`, "must be a number", `field "ratio" must be a number`},
		{`{"name":"a","tags":{}}`, "must be an array", `field "tags" must be an array`},
		{`{"name":"a","labels":[]}`, "must be an object", `field "labels" must be an object`},
		{`{"name":"a","when":"now"}`, "invalid value", `field "when" has an invalid value`},
		{strings.Repeat("[", 70) + strings.Repeat("]", 70), "nesting deeper than 64 levels", "request body nests deeper than 64 levels"},
	}
	for _, c := range cases {
		var b strictBody
		var e *BodyError
		if !errors.As(DecodeBytes([]byte(c.in), &b, exact), &e) {
			t.Fatalf("%s: accepted", c.in)
		}
		if e.Diagnostics[0].Message != c.message || e.Msg != c.summary {
			t.Errorf("%s: %q / %q, want %q / %q", c.in, e.Diagnostics[0].Message, e.Msg, c.message, c.summary)
		}
	}
	// The toolkit's syntax wording is encoding/json's.
	var v any
	want := json.Unmarshal([]byte(`{"name" 1}`), &v).(*json.SyntaxError)
	if e := DecodeBytes([]byte(`{"name" 1}`), &v, DecodeOptions{}).(*BodyError); e.Msg != fmt.Sprintf("malformed JSON at byte %d", want.Offset) {
		t.Errorf("syntax: %q, encoding/json says byte %d", e.Msg, want.Offset)
	}
}

func TestDecodeCollectsDiagnostics(t *testing.T) {
	is := is.New(t)
	var b strictBody
	var e *BodyError
	is.True(errors.As(DecodeBytes([]byte(`{"a":1,"b":2,"scope":{"c":3}}`), &b, exact), &e))
	is.Equal(len(e.Diagnostics), 4) // a, b, scope/c, and the missing name
	is.Equal(e.Field, "a")          // the toolkit names the first
	var many strings.Builder
	many.WriteString(`{"name":"x"`)
	for i := range 50 {
		many.WriteString(`,"f` + strings.Repeat("x", i) + `":1`)
	}
	many.WriteString("}")
	is.True(errors.As(DecodeBytes([]byte(many.String()), &b, exact), &e))
	is.Equal(len(e.Diagnostics), 20)                             // bounded
	is.True(DecodeBytes([]byte(`{}`), b, exact) != nil)          // not a pointer
	is.True(!errors.As(DecodeBytes([]byte(`{}`), b, exact), &e)) // and not the client's fault
	is.NoErr(DecodeBytes([]byte(" \n"), &b, DecodeOptions{AllowEmpty: true}))
}

// TestDecodeLenient: without Exact the decoder keeps encoding/json's
// leniencies the toolkit's surfaces documented.
func TestDecodeLenient(t *testing.T) {
	is := is.New(t)
	type req struct {
		Prompt string            `json:"prompt"`
		N      int               `json:"n"`
		Meta   map[string]string `json:"meta"`
		Raw    json.RawMessage   `json:"raw"`
	}
	r := req{Prompt: "keep", N: 3, Meta: map[string]string{"a": "b"}}
	is.NoErr(DecodeBytes([]byte(`{"PROMPT":null,"n":null,"meta":null,"raw":{"k":  1}}`), &r, DecodeOptions{}))
	is.Equal(r.Prompt, "keep") // null leaves a value as it is
	is.Equal(r.N, 3)
	is.True(r.Meta == nil)               // and empties a map
	is.Equal(string(r.Raw), `{"k":  1}`) // an Unmarshaler gets the bytes as sent
	is.NoErr(DecodeBytes([]byte(`{"Prompt":"x","extra":1}`), &r, DecodeOptions{AllowUnknown: true}))
	is.Equal(r.Prompt, "x") // names fold case
	var e *BodyError
	is.True(errors.As(DecodeBytes([]byte(`{"Prompt":"x"}`), &r, exact), &e))
	is.Equal(e.Diagnostics[0].Pointer, "/Prompt")
}

// TestMediaType: a request without Content-Type is JSON; JSONOnly refuses
// other +json types; Exact refuses a malformed header.
func TestMediaType(t *testing.T) {
	for _, c := range []struct {
		ct   string
		o    DecodeOptions
		want string // "" accepted, else the message
	}{
		{"", DecodeOptions{}, ""},
		{"application/json", DecodeOptions{JSONOnly: true}, ""},
		{"Application/JSON; charset=utf-8", DecodeOptions{}, ""},
		{"application/merge-patch+json", DecodeOptions{}, ""},
		{"application/merge-patch+json", DecodeOptions{JSONOnly: true}, "Content-Type must be application/json"},
		{"text/plain", DecodeOptions{}, `content type "text/plain" is not JSON`},
		{"application/json; charset", DecodeOptions{}, ""},
		{"application/json; charset", exact, `content type "application/json; charset" is not JSON`},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
		r.Header.Set("Content-Type", c.ct)
		err := CheckMediaType(r, c.o)
		var e *BodyError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.ct, err)
		case c.want != "" && (!errors.As(err, &e) || e.Status != 415 || e.Kind != BodyContentType || e.Msg != c.want):
			t.Errorf("%q: %v, want %q", c.ct, err, c.want)
		}
	}
}

func TestDecodeJSONLimit(t *testing.T) {
	is := is.New(t)
	var v map[string]any
	w := httptest.NewRecorder()
	err := DecodeJSON(w, httptest.NewRequest("POST", "/", strings.NewReader(`{"a":"`+strings.Repeat("x", 20)+`"}`)), &v, DecodeOptions{MaxBytes: 20})
	var e *BodyError
	is.True(errors.As(err, &e))
	is.Equal(e.Status, 413)
	is.Equal(e.Msg, "request body exceeds 20 bytes")
	is.NoErr(DecodeJSON(w, httptest.NewRequest("POST", "/", strings.NewReader(`{"a":"`+strings.Repeat("x", 12)+`"}`)), &v, DecodeOptions{MaxBytes: 20}))
}

func TestCanonicalJSON(t *testing.T) {
	is := is.New(t)
	is.Equal(string(CanonicalJSON([]byte(` {"b":[1, {"d":1,"c":2}],"a":"\u00e9"} `))), `{"a":"é","b":[1,{"c":2,"d":1}]}`)
	is.Equal(string(CanonicalJSON([]byte(`{"a":1,"a":2}`))), `{"a":1,"a":2}`) // refused: as is
	is.True(CanonicalJSON([]byte("  ")) == nil)
}

// FuzzDecodeExact: never panics, and whatever it accepts encoding/json
// accepts too, with the same result.
func FuzzDecodeExact(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"name":"a","scope":{"count":1}}`, `{"name":"a","tags":["x"]}`, `{`, `[]`, `{"name":"a","any":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, std strictBody
		if DecodeBytes(data, &strict, exact) != nil {
			return
		}
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("strict accepted what encoding/json refuses: %q: %v", data, err)
		}
		a, _ := json.Marshal(strict)
		b, _ := json.Marshal(std)
		if string(a) != string(b) {
			t.Fatalf("%q: strict %s, encoding/json %s", data, a, b)
		}
	})
}

// FuzzDecodeLenient: without Exact the decoder accepts what encoding/json
// (refusing unknown fields) accepts and CheckJSON passes, no deeper than
// MaxDecodeDepth, with the same result, and nothing else.
func FuzzDecodeLenient(f *testing.F) {
	type item struct {
		N int     `json:"n"`
		F float32 `json:"f"`
	}
	type lenient struct {
		Name  string            `json:"name"`
		Items []item            `json:"items"`
		Meta  map[string]string `json:"meta"`
		Ptr   *item             `json:"ptr"`
		Any   any               `json:"any"`
		Raw   json.RawMessage   `json:"raw"`
		Bytes []byte            `json:"bytes"`
		On    bool              `json:"on"`
	}
	for _, s := range []string{`{"name":"a"}`, `{"NAME":null,"items":[{"n":1}]}`, `{"meta":{"k":"v"},"raw":[ 1 ]}`, `{"ptr":{"f":1.5},"any":[{}]}`, `{"bytes":"AAEC"}`, `{"bytes":[1,2]}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ours, std lenient
		err := DecodeBytes(data, &ours, DecodeOptions{})
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		stdErr := dec.Decode(&std)
		if stdErr == nil {
			if _, e := dec.Token(); e != io.EOF {
				stdErr = errors.New("trailing")
			}
		}
		if stdErr == nil && CheckJSON(data) != nil {
			stdErr = errors.New("CheckJSON")
		}
		if err == nil && stdErr != nil {
			t.Fatalf("accepted what encoding/json refuses: %q: %v", data, stdErr)
		}
		if err != nil && stdErr == nil && !strings.Contains(err.Error(), "nests deeper") {
			t.Fatalf("refused what encoding/json accepts: %q: %v", data, err)
		}
		if err == nil {
			a, _ := json.Marshal(ours)
			b, _ := json.Marshal(std)
			if string(a) != string(b) {
				t.Fatalf("%q: ours %s, encoding/json %s", data, a, b)
			}
		}
	})
}
