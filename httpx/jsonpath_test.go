package httpx

import (
	"encoding/json"
	"testing"
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
	if p := pathAt([]byte(`{"a":`), 3); p != "" {
		t.Errorf("truncated data: %q", p)
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
