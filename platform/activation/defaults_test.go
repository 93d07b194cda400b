package activation

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentbridge/bridge/platform/api"
)

func TestSecretAt(t *testing.T) {
	doc := map[string]any{
		"plain":  "x",
		"a/b":    map[string]any{"key": "s"},
		"list":   []any{map[string]any{"token": "t"}},
		"nested": map[string]any{"open": map[string]any{"pw": "p"}},
	}
	for _, tc := range []struct {
		ptr, loc string
		found    bool
	}{
		{"/", "", true},
		{"/plain", "/plain", true},
		{"/missing", "", false},
		{"/a~1b/key", "/a~1b/key", true},
		{"/list/*/token", "/list/0/token", true},
		{"/list/0/token", "", false}, // arrays are matched only by *
		{"/nested/*/pw", "/nested/open/pw", true},
		{"/plain/deeper", "", false},
	} {
		loc, ok := secretAt(doc, tc.ptr)
		if ok != tc.found || loc != tc.loc {
			t.Errorf("secretAt(%q) = %q, %v; want %q, %v", tc.ptr, loc, ok, tc.loc, tc.found)
		}
	}
}

func TestCheckDefaults(t *testing.T) {
	art := json.RawMessage(`{"input":{"type":"object","required":["a"],"additionalProperties":false,
		"properties":{"a":{"type":"string"},"n":{"type":"object","required":["x"],"properties":{"x":{"type":"integer"}}},
		"shared":{"$ref":"catalog:schemas/acme.address"}}},"secrets":{"input":[]}}`)
	for _, tc := range []struct {
		defaults string
		path     string // "" when accepted
	}{
		{`{}`, ""},                       // top-level required is not applied
		{`{"shared":{"any":1}}`, ""},     // catalog references accept anything here
		{`{"a":1}`, "/input_defaults/a"}, // wrong type
		{`{"n":{}}`, "/input_defaults/n"},
		{`{"zz":1}`, "/input_defaults"}, // closed object
	} {
		err := checkDefaults(json.RawMessage(tc.defaults), art)
		var e *api.Error
		switch {
		case tc.path == "" && err != nil:
			t.Errorf("%s: %v", tc.defaults, err)
		case tc.path != "" && (!errors.As(err, &e) || e.Status() != 422 || len(e.Diagnostics) == 0 || e.Diagnostics[0].Path != tc.path):
			t.Errorf("%s: %v, want 422 at %s", tc.defaults, err, tc.path)
		}
	}
	// No input schema: any object passes.
	if err := checkDefaults(json.RawMessage(`{"q":1}`), json.RawMessage(`{"input":null}`)); err != nil {
		t.Fatal(err)
	}
}
