package decision

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzSamples are input values per column type, including nulls, edges and
// values that need the exact (math/big) path.
var fuzzSamples = map[colType][]any{
	typeNumber:   {nil, 0.0, -0.0, 1.0, -1.5, 0.1, 1e308, 5e-324, int64(9007199254740993), uint64(1) << 63, json.Number("0.10000000000000000001")},
	typeString:   {nil, "", "a", "DE", "é", "\x00"},
	typeBoolean:  {nil, true, false},
	typeDate:     {nil, "2024-01-02", "0001-01-01", "9999-12-31", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
	typeDateTime: {nil, "2024-01-02T10:00:00Z", "2024-01-02T10:00:00", "2024-01-02T10:00:00.5-14:00", time.Unix(0, 0)},
	typeDuration: {nil, "P1D", "-PT1.5S", "P1Y2M", "PT0S", time.Duration(-1)},
}

// FuzzUnaryTest checks that the unary-test parser never panics, reports
// offsets inside the text, and that the fast-path matcher agrees with the
// general FEEL evaluation for every sample value.
func FuzzUnaryTest(f *testing.F) {
	for _, s := range []string{
		"-", "5", "< 10", "<= -1.5", "> .5", ">= 0", "= 3", "!= 3", "[1..5]", "(1..5)", "]1..5[", "[1..5)",
		`"DE","AT"`, `not("DE")`, `not(< 5, [7..8])`, "null", "!= null", "true", "false, null",
		`date("2024-01-02")`, `< date and time("2024-01-02T10:00:00Z")`, `duration("P1Y2M")`,
		`[duration("PT1H")..duration("P1D")]`, `@"2024-01-02"`, `"a\"b\u00e9"`, "1..2", "[", `"`, "not(",
		"0.30000000000000004", "9007199254740993", "1" + string(make([]byte, 40)),
	} {
		for typ := uint8(0); typ < 6; typ++ {
			f.Add(s, typ)
		}
	}
	f.Fuzz(func(t *testing.T, src string, typ uint8) {
		ct := colType(typ%6) + typeNumber
		tst, err := parseUnaryTests(src, ct)
		if err != nil {
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: non-syntax error %v", src, err)
			}
			if se.off < 0 || se.off > len(src) {
				t.Fatalf("%q: offset %d outside the text", src, se.off)
			}
			return
		}
		ch := newCheck(0, tst)
		for _, in := range fuzzSamples[ct] {
			v, err := convert(in, ct)
			if err != nil {
				t.Fatalf("sample %#v: %v", in, err)
			}
			got := tst.match(&v)
			if fast := ch.matches(&v); fast != (got == triTrue) {
				t.Fatalf("%q on %#v: fast %v, general %v", src, in, fast, got)
			}
			if tst.kind == tAny && got != triTrue {
				t.Fatalf("- must match everything")
			}
		}
	})
}

// FuzzTable runs Parse, Compile and Evaluate on arbitrary documents and
// inputs: no panics, located compile errors, typed evaluation errors, and
// results that marshal to JSON.
func FuzzTable(f *testing.F) {
	paths, _ := filepath.Glob("testdata/tck/*.yaml")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, []byte(`{"Age": 18, "RiskCategory": "Medium", "isAffordable": true, "NumOfYears": 4}`))
		}
	}
	f.Add([]byte(`{"hitPolicy":"OUTPUT ORDER","inputs":[{"name":"a.b","type":"date"}],"outputs":[{"name":"y","allowedValues":[1,2]}],"rules":[{"when":["<@\"2024-01-01\""],"then":[2]},{"when":["-"],"then":{"y":1}}],"default":[1]}`),
		[]byte(`{"a":{"b":"2023-12-31"}}`))
	f.Add([]byte("hitPolicy: COLLECT\naggregation: SUM\ninputs: [{name: x, type: number}]\noutputs: [{name: y, type: number}]\nrules: [{when: ['> 1'], then: [0.1]}, {when: ['> 2'], then: [null]}]\n"),
		[]byte(`{"x": 3}`))
	f.Fuzz(func(t *testing.T, doc, input []byte) {
		table, err := Parse(doc)
		if err != nil {
			return
		}
		c, err := Compile(table)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("compile error is not a non-empty Errors: %v", err)
			}
			for _, e := range errs {
				if e.RuleIndex >= len(table.Rules) || e.Field == "" || e.Path() == "" {
					t.Fatalf("badly located error %+v", e)
				}
			}
			return
		}
		var in map[string]any
		_ = json.Unmarshal(input, &in) // nil input is valid too
		for _, m := range []map[string]any{in, nil, {"x": 1.0, "Age": "x"}} {
			res, err := c.Evaluate(m)
			if err != nil {
				if !errors.Is(err, ErrHitPolicy) && !errors.Is(err, ErrInputType) {
					t.Fatalf("untyped evaluation error %v", err)
				}
				continue
			}
			if res.MatchedRuleIDs == nil {
				t.Fatalf("MatchedRuleIDs must not be nil")
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatalf("result does not marshal: %v", err)
			}
		}
	})
}

// FuzzRules builds tables from fuzzed cells, outputs and policies (raw
// document bytes rarely survive YAML mutation, so this reaches Compile and
// Evaluate far more often) and checks the evaluation invariants.
func FuzzRules(f *testing.F) {
	f.Add("< 10", `"DE","AT"`, "[1..5]", `not("FR")`, "a", "b", uint8(0), uint8(0), 3.0, "DE")
	f.Add("-", "-", "> 2", "-", "1", "2", uint8(4), uint8(1), 7.5, "")
	f.Add("null", `< "m"`, "!= 1", `"x"`, "gold", "silver", uint8(6), uint8(3), -1.0, "x")
	policies := []string{"UNIQUE", "ANY", "PRIORITY", "FIRST", "COLLECT", "RULE ORDER", "OUTPUT ORDER"}
	aggs := []string{"", "SUM", "COUNT", "MIN", "MAX"}
	f.Fuzz(func(t *testing.T, a1, b1, a2, b2, out1, out2 string, policy, agg uint8, x float64, s string) {
		table := &Table{
			HitPolicy:   policies[int(policy)%len(policies)],
			Aggregation: aggs[int(agg)%len(aggs)],
			Inputs:      []Input{{Name: "x", Type: "number"}, {Name: "s", Type: "string"}},
			Outputs:     []Output{{Name: "y", AllowedValues: []any{out1, out2, "z"}}},
			Rules: []Rule{
				{When: UnaryTests{UnaryTest(a1), UnaryTest(b1)}, Then: []any{out1}},
				{When: UnaryTests{UnaryTest(a2), UnaryTest(b2)}, Then: out2},
				{When: UnaryTests{"-", "-"}, Then: map[string]any{"y": "z"}},
			},
		}
		if agg%2 == 1 {
			table.Outputs[0] = Output{Name: "y", Type: "number"}
			table.Rules[0].Then, table.Rules[1].Then, table.Rules[2].Then = []any{1.5}, 2, map[string]any{"y": nil}
		}
		c, err := Compile(table)
		if err != nil {
			return
		}
		in := map[string]any{"x": x, "s": s}
		res, err := c.Evaluate(in)
		if err != nil {
			if errors.Is(err, ErrInputType) {
				return // NaN or Inf
			}
			if !errors.Is(err, ErrHitPolicy) || len(res.MatchedRuleIDs) < 2 {
				t.Fatalf("unexpected error %v (matched %v)", err, res.MatchedRuleIDs)
			}
			return
		}
		// The catch-all rule always matches, so the default never applies.
		if res.UsedDefault || len(res.MatchedRuleIDs) == 0 {
			t.Fatalf("catch-all rule did not match: %+v", res)
		}
		if table.HitPolicy == "FIRST" && len(res.MatchedRuleIDs) != 1 {
			t.Fatalf("FIRST matched %v", res.MatchedRuleIDs)
		}
		if list, ok := res.Output.([]any); ok && len(list) != len(res.MatchedRuleIDs) {
			t.Fatalf("list output %v does not line up with rules %v", list, res.MatchedRuleIDs)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	})
}
