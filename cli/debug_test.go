package cli

import (
	"encoding/json"
	"testing"
)

func TestDebugCommandLines(t *testing.T) {
	for line, want := range map[string]string{
		"b ship pack":                          `{"breakpoints":{"nodeIds":["ship","pack"]}}`,
		"b":                                    `{"breakpoints":{"nodeIds":[]}}`,
		"n":                                    `{"next":{}}`,
		"c":                                    `{"continue":{}}`,
		`signal order.approved {"a": 1}`:       `{"signal":{"name":"order.approved","payload":{"a":1}}}`,
		"signal ping":                          `{"signal":{"name":"ping","payload":null}}`,
		`decide review {"decision":"approve"}`: `{"humanDecision":{"name":"review","payload":{"decision":"approve"}}}`,
		"advance 1h30m":                        `{"advanceTime":{"seconds":5400}}`,
	} {
		c, err := debugCommand(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got, _ := json.Marshal(c)
		if string(got) != want {
			t.Errorf("%s: %s, want %s", line, got, want)
		}
	}
	for _, bad := range []string{"jump", "signal", "signal x {", "decide review", "decide review approve", "advance", "advance 1.5s", "advance -1h", "advance soon"} {
		if _, err := debugCommand(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
