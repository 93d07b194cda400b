package api_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
)

type inner struct {
	Tenant string `json:"tenant,omitempty"`
	Count  int8   `json:"count"`
}

type body struct {
	Name    string            `json:"name" api:"required"`
	Scope   inner             `json:"scope"`
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

func TestDecodeStrictAccepts(t *testing.T) {
	is := is.New(t)
	var b body
	err := api.DecodeStrict([]byte(`{"name":"n","scope":{"tenant":"t","count":-128},"tags":["a","b"],"labels":{"x/y":"z"},
		"maybe":null,"any":{"k":[1,"two",null]},"raw":{"keep":  1},"when":"2026-01-02T03:04:05Z","ratio":0.5,"on":true,"size":65535}`), &b)
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
	is.NoErr(api.DecodeStrict([]byte(`{"name":"\ud83d\ude00 é"}`), &b)) // a surrogate pair is one character
	is.Equal(b.Name, "😀 é")
	five := 5
	is.NoErr(api.DecodeStrict([]byte(`{"name":"n","maybe":5}`), &b))
	is.Equal(*b.Maybe, five)
}

func TestDecodeStrictRefuses(t *testing.T) {
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
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), "depth", ""},
	}
	for _, c := range cases {
		var b body
		err := api.DecodeStrict([]byte(c.in), &b)
		var e *api.Error
		if !errors.As(err, &e) || e.Status() != 422 || e.Code != "PF-VALIDATION" {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		d := e.Diagnostics[0]
		if d.Code != c.code || (c.code != "depth" && d.Path != c.path) {
			t.Errorf("%s: diagnostic %+v, want %s at %q", c.in, d, c.code, c.path)
		}
	}
}

func TestDecodeStrictCollectsDiagnostics(t *testing.T) {
	is := is.New(t)
	var b body
	err := api.DecodeStrict([]byte(`{"a":1,"b":2,"scope":{"c":3}}`), &b)
	var e *api.Error
	is.True(errors.As(err, &e))
	is.Equal(len(e.Diagnostics), 4) // a, b, scope/c, and the missing name
	var many strings.Builder
	many.WriteString(`{"name":"x"`)
	for i := 0; i < 50; i++ {
		many.WriteString(`,"f` + strings.Repeat("x", i) + `":1`)
	}
	many.WriteString("}")
	is.True(errors.As(api.DecodeStrict([]byte(many.String()), &b), &e))
	is.Equal(len(e.Diagnostics), 20)                  // bounded
	is.True(api.DecodeStrict([]byte(`{}`), b) != nil) // not a pointer
}

// FuzzDecodeStrict: never panics, and whatever it accepts encoding/json
// accepts too, with the same result.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"name":"a","scope":{"count":1}}`, `{"name":"a","tags":["x"]}`, `{`, `[]`, `{"name":"a","any":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, std body
		if api.DecodeStrict(data, &strict) != nil {
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
