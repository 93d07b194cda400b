package decision

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// tckFile is the expected-results file next to each translated TCK table.
type tckFile struct {
	Source struct {
		Repository string `json:"repository"`
		Model      string `json:"model"`
		Tests      string `json:"tests"`
	} `json:"source"`
	Cases []struct {
		ID             string          `json:"id"`
		Origin         string          `json:"origin"` // "tck" or "supplementary"
		Input          map[string]any  `json:"input"`
		Output         json.RawMessage `json:"output"`
		MatchedRuleIDs []string        `json:"matched_rule_ids"`
		UsedDefault    bool            `json:"used_default"`
		Error          string          `json:"error"` // "hit_policy" or "input_type"
	} `json:"cases"`
}

// TestTCK runs the DMN TCK compliance-level-2 hit-policy cases translated
// into testdata/tck (see each file's header for its source).
func TestTCK(t *testing.T) {
	tables, err := filepath.Glob("testdata/tck/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 13 {
		t.Fatalf("want 13 translated TCK tables, found %d", len(tables))
	}
	tckCases := 0
	for _, path := range tables {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			src, err := os.ReadFile(path)
			is.NoErr(err)
			table, err := Parse(src)
			is.NoErr(err)
			c, err := Compile(table)
			is.NoErr(err)

			raw, err := os.ReadFile(strings.TrimSuffix(path, ".yaml") + ".cases.json")
			is.NoErr(err)
			var f tckFile
			is.NoErr(json.Unmarshal(raw, &f))
			is.Equal(f.Source.Repository, "dmn-tck/tck")
			is.True(strings.HasSuffix(f.Source.Model, name+".dmn"))
			is.True(len(f.Cases) >= 3)

			for _, tc := range f.Cases {
				if tc.Origin == "tck" {
					tckCases++
				}
				t.Run(tc.Origin+"-"+tc.ID, func(t *testing.T) {
					is := is.New(t)
					res, err := c.Evaluate(tc.Input)
					switch tc.Error {
					case "":
						is.NoErr(err)
					case "hit_policy":
						is.True(errors.Is(err, ErrHitPolicy))
						return
					case "input_type":
						is.True(errors.Is(err, ErrInputType))
						return
					default:
						t.Fatalf("unknown expected error %q", tc.Error)
					}
					var want any
					is.NoErr(json.Unmarshal(tc.Output, &want))
					got := roundTrip(t, res.Output)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("output = %#v, want %#v", got, want)
					}
					is.Equal(res.MatchedRuleIDs, tc.MatchedRuleIDs)
					is.Equal(res.UsedDefault, tc.UsedDefault)
				})
			}
		})
	}
	if tckCases != 39 {
		t.Fatalf("ran %d TCK cases, want 39", tckCases)
	}
}

// roundTrip converts a result to its JSON form so it compares with decoded
// expectations independently of Go number types.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
