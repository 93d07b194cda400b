package httpx

import "testing"

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
