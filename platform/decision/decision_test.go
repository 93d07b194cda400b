package decision

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func mustCompile(t *testing.T, src string) *Compiled {
	t.Helper()
	table, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	c, err := Compile(table)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return c
}

// compileErrs parses and compiles src, expecting compile errors.
func compileErrs(t *testing.T, src string) Errors {
	t.Helper()
	table, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	_, err = Compile(table)
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	return errs
}

func eval(t *testing.T, c *Compiled, in map[string]any) Result {
	t.Helper()
	res, err := c.Evaluate(in)
	if err != nil {
		t.Fatalf("evaluate %v: %v", in, err)
	}
	return res
}

func TestShippingExample(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
kind: decisionTable
id: shipping-fee
hitPolicy: UNIQUE
inputs:
  - {name: order.weight, type: number}
  - {name: country, type: string}
outputs:
  - {name: fee, type: number}
rules:
  - {id: r1, when: ["< 10", '"DE","AT"'], then: [5]}
  - {id: r2, when: [">= 10", '"DE","AT"'], then: {fee: 9.5}}
  - {when: ["-", 'not("DE","AT")'], then: 20, annotation: everything else}
default: {fee: 0}
`)
	is.Equal(c.ID(), "shipping-fee")
	is.Equal(c.Inputs(), []string{"order.weight", "country"})
	is.Equal(c.Outputs(), []string{"fee"})
	res := eval(t, c, map[string]any{"order": map[string]any{"weight": 3.0}, "country": "AT"})
	is.Equal(res, Result{Output: 5.0, MatchedRuleIDs: []string{"r1"}})
	res = eval(t, c, map[string]any{"order": map[string]any{"weight": 10}, "country": "DE"})
	is.Equal(res.Output, 9.5)
	res = eval(t, c, map[string]any{"country": "FR"})
	is.Equal(res.MatchedRuleIDs, []string{"rule-3"}) // default id, 1-based
	is.Equal(res.Output, 20.0)
	res = eval(t, c, map[string]any{"country": "DE"}) // weight missing: neither < nor >= matches null
	is.Equal(res, Result{Output: 0.0, MatchedRuleIDs: []string{}, UsedDefault: true})

	b, err := json.Marshal(res)
	is.NoErr(err)
	is.Equal(string(b), `{"output":0,"matched_rule_ids":[],"used_default":true}`)
}

func TestUniqueViolationNamesRules(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
inputs: [{name: x, type: number}]
outputs: [{name: y, type: string}]
rules:
  - {id: low, when: ["< 10"], then: [a]}
  - {id: mid, when: ["[5..20]"], then: [b]}
  - {id: high, when: ["> 15"], then: [c]}
`)
	res, err := c.Evaluate(map[string]any{"x": 7.0})
	is.True(errors.Is(err, ErrHitPolicy))
	var ee *EvalError
	is.True(errors.As(err, &ee))
	is.Equal(ee.RuleIDs, []string{"low", "mid"})
	is.True(strings.Contains(err.Error(), "UNIQUE"))
	is.True(strings.Contains(err.Error(), "low, mid"))
	is.Equal(res.MatchedRuleIDs, []string{"low", "mid"})
	is.Equal(res.Output, nil)

	is.Equal(eval(t, c, map[string]any{"x": 12.0}).Output, "b")
	is.Equal(eval(t, c, map[string]any{"x": 25.0}).Output, "c")
	res = eval(t, c, map[string]any{})
	is.Equal(res.Output, nil)
	is.Equal(res.UsedDefault, false)
}

func TestAnyPolicy(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
hitPolicy: ANY
inputs: [{name: x, type: number}]
outputs: [{name: a, type: number}, {name: b}]
rules:
  - {id: r1, when: ["< 10"], then: [1, ok]}
  - {id: r2, when: ["< 5"], then: [1.0, ok]}
  - {id: r3, when: ["< 2"], then: [1, other]}
`)
	res := eval(t, c, map[string]any{"x": 3.0})
	is.Equal(res.Output, map[string]any{"a": 1.0, "b": "ok"})
	is.Equal(res.MatchedRuleIDs, []string{"r1", "r2"})

	res, err := c.Evaluate(map[string]any{"x": 1.0})
	is.True(errors.Is(err, ErrHitPolicy))
	is.True(strings.Contains(err.Error(), "rules r1 and r3 match with different outputs"))
	is.Equal(res.MatchedRuleIDs, []string{"r1", "r2", "r3"})
}

func TestPriorityPolicy(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
hitPolicy: PRIORITY
inputs: [{name: x, type: number}]
outputs:
  - {name: level, type: string, allowedValues: [high, medium, low]}
  - {name: code, type: number, allowedValues: [1, 2, 3]}
rules:
  - {id: r1, when: ["-"], then: [low, 1]}
  - {id: r2, when: ["> 1"], then: [medium, 3]}
  - {id: r3, when: ["> 2"], then: [medium, 2]}
  - {id: r4, when: ["> 3"], then: [medium, 2]}
  - {id: r5, when: ["> 10"], then: [high, 3]}
`)
	is.Equal(eval(t, c, map[string]any{"x": 0.0}).Output, map[string]any{"level": "low", "code": 1.0})
	is.Equal(eval(t, c, map[string]any{"x": 2.0}).Output, map[string]any{"level": "medium", "code": 3.0})
	// The first output dominates, the second breaks ties; equal rows keep rule order.
	res := eval(t, c, map[string]any{"x": 5.0})
	is.Equal(res.Output, map[string]any{"level": "medium", "code": 2.0})
	is.Equal(res.MatchedRuleIDs, []string{"r1", "r2", "r3", "r4"})
	is.Equal(eval(t, c, map[string]any{"x": 11.0}).Output, map[string]any{"level": "high", "code": 3.0})

	// Outputs without allowedValues do not rank: equal priorities keep the
	// first matching rule (as in TCK 0118).
	c = mustCompile(t, `
hitPolicy: PRIORITY
inputs: [{name: x, type: number}]
outputs: [{name: level, allowedValues: [high, low]}, {name: note}]
rules:
  - {when: ["> 0"], then: [low, first-low]}
  - {when: ["> 1"], then: [high, first-high]}
  - {when: ["> 2"], then: [high, second-high]}
`)
	is.Equal(eval(t, c, map[string]any{"x": 3.0}).Output, map[string]any{"level": "high", "note": "first-high"})
}

func TestFirstPolicy(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
hitPolicy: FIRST
inputs: [{name: x, type: number}]
outputs: [{name: y, type: string}]
rules:
  - {id: a, when: ["> 10"], then: [big]}
  - {id: b, when: ["> 0"], then: [positive]}
  - {id: c, when: ["-"], then: [any]}
`)
	is.Equal(eval(t, c, map[string]any{"x": 11.0}), Result{Output: "big", MatchedRuleIDs: []string{"a"}})
	is.Equal(eval(t, c, map[string]any{"x": 1.0}), Result{Output: "positive", MatchedRuleIDs: []string{"b"}})
	is.Equal(eval(t, c, map[string]any{"x": -1.0}), Result{Output: "any", MatchedRuleIDs: []string{"c"}})
}

func TestListPolicies(t *testing.T) {
	const rules = `
inputs: [{name: x, type: number}]
outputs: [{name: y, type: string, allowedValues: [gold, silver, bronze]}]
rules:
  - {id: r1, when: ["> 0"], then: [bronze]}
  - {id: r2, when: ["> 1"], then: [gold]}
  - {id: r3, when: ["> 2"], then: [silver]}
  - {id: r4, when: ["> 3"], then: [gold]}
`
	cases := []struct {
		policy string
		x      float64
		out    []any
		ids    []string
	}{
		{"COLLECT", 5, []any{"bronze", "gold", "silver", "gold"}, []string{"r1", "r2", "r3", "r4"}},
		{"RULE ORDER", 5, []any{"bronze", "gold", "silver", "gold"}, []string{"r1", "r2", "r3", "r4"}},
		{"OUTPUT ORDER", 5, []any{"gold", "gold", "silver", "bronze"}, []string{"r2", "r4", "r3", "r1"}},
		{"OUTPUT ORDER", 2.5, []any{"gold", "silver", "bronze"}, []string{"r2", "r3", "r1"}},
		{"COLLECT", 0.5, []any{"bronze"}, []string{"r1"}}, // a list even for one match
		{"RULE ORDER", 0.5, []any{"bronze"}, []string{"r1"}},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			is := is.New(t)
			c := mustCompile(t, "hitPolicy: "+tc.policy+rules)
			res := eval(t, c, map[string]any{"x": tc.x})
			is.Equal(res.Output, tc.out)
			is.Equal(res.MatchedRuleIDs, tc.ids)
			res = eval(t, c, map[string]any{"x": 0.0})
			is.Equal(res, Result{MatchedRuleIDs: []string{}}) // no match, no default: null
		})
	}
}

func TestAggregations(t *testing.T) {
	table := func(agg, typ string, outs ...string) string {
		s := "hitPolicy: COLLECT\naggregation: " + agg + "\ninputs: [{name: x, type: number}]\noutputs: [{name: y, type: " + typ + "}]\nrules:\n"
		for i, o := range outs {
			s += "  - {when: ['> " + string(rune('0'+i)) + "'], then: [" + o + "]}\n"
		}
		return s
	}
	cases := []struct {
		name string
		src  string
		x    float64
		want any
	}{
		{"sum exact decimal", table("SUM", "number", "0.1", "0.2"), 5, 0.3}, // not 0.30000000000000004
		{"sum one", table("SUM", "number", "0.1", "0.2"), 0.5, 0.1},
		{"sum empty is null", table("SUM", "number", "0.1", "0.2"), -1, nil},
		{"sum with null is null", table("SUM", "number", "1", "null"), 5, nil},
		{"sum negative", table("SUM", "number", "-1.5", "0.25", "1e0"), 5, -0.25},
		{"count", table("COUNT", "number", "1", "1", "null"), 5, 3.0}, // duplicates and nulls count
		{"count empty is 0", table("COUNT", "number", "1"), -1, 0.0},
		{"count untyped", table("COUNT", "string", "a", "b"), 5, 2.0},
		{"min", table("MIN", "number", "3", "-2", "7"), 5, -2.0},
		{"max", table("MAX", "number", "3", "-2", "7"), 5, 7.0},
		{"max one", table("MAX", "number", "3", "-2", "7"), 0.5, 3.0},
		{"min empty is null", table("MIN", "number", "3"), -1, nil},
		{"min with null is null", table("MIN", "number", "3", "null"), 5, nil},
		{"min strings", table("MIN", "string", "b", "a", "c"), 5, "a"},
		{"max dates", table("MAX", "date", "'2024-01-02'", "'2025-01-01'", "2023-06-30"), 5, "2025-01-01"},
		{"max durations", table("MAX", "duration", "PT1H", "P1D", "PT2H"), 5, "P1D"},
		{"max mixed durations is null", table("MAX", "duration", "PT1H", "P1M"), 5, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c := mustCompile(t, tc.src)
			res := eval(t, c, map[string]any{"x": tc.x})
			is.Equal(res.Output, tc.want)
			is.Equal(res.UsedDefault, false)
		})
	}
	t.Run("default wins over empty aggregate", func(t *testing.T) {
		is := is.New(t)
		c := mustCompile(t, table("COUNT", "number", "1")+"default: 42\n")
		is.Equal(eval(t, c, map[string]any{"x": -1.0}), Result{Output: 42.0, MatchedRuleIDs: []string{}, UsedDefault: true})
		is.Equal(eval(t, c, map[string]any{"x": 1.0}).Output, 1.0)
	})
}

func TestDefaults(t *testing.T) {
	const base = `
inputs: [{name: x, type: number}]
outputs:
  - {name: a, type: string, allowedValues: [yes, no]}
  - {name: b, type: number}
rules:
  - {when: ["> 0"], then: [yes, 1]}
`
	cases := []struct {
		def, policy string
		want        any
	}{
		{"default: {a: no, b: 0}", "UNIQUE", map[string]any{"a": "no", "b": 0.0}},
		{"default: {b: 2}", "UNIQUE", map[string]any{"a": nil, "b": 2.0}}, // partial: missing outputs are null
		{"default: [no, 3]", "FIRST", map[string]any{"a": "no", "b": 3.0}},
		{"default: {a: no, b: 0}", "RULE ORDER", []any{map[string]any{"a": "no", "b": 0.0}}},
		{"default: {a: no, b: 0}", "COLLECT", []any{map[string]any{"a": "no", "b": 0.0}}},
	}
	for _, tc := range cases {
		is := is.New(t)
		c := mustCompile(t, "hitPolicy: "+tc.policy+base+tc.def)
		res := eval(t, c, map[string]any{"x": -1.0})
		is.Equal(res.Output, tc.want)
		is.Equal(res.UsedDefault, true)
		is.Equal(res.MatchedRuleIDs, []string{})
		is.Equal(eval(t, c, map[string]any{"x": 1.0}).UsedDefault, false)
	}
}

func TestOutputMapsAreFresh(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
inputs: [{name: x, type: number}]
outputs: [{name: a}, {name: b}]
rules: [{when: ["-"], then: {a: 1, b: two}}]
`)
	first := eval(t, c, map[string]any{}).Output.(map[string]any)
	first["a"] = "mutated"
	is.Equal(eval(t, c, map[string]any{}).Output, map[string]any{"a": 1.0, "b": "two"})
}

func TestInputPaths(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
inputs: [{name: order.customer.tier, type: string}]
outputs: [{name: y, type: boolean}]
rules:
  - {when: ['"gold"'], then: [true]}
  - {when: ['not("gold")'], then: [false]}
`)
	nested := map[string]any{"order": map[string]any{"customer": map[string]any{"tier": "gold"}}}
	is.Equal(eval(t, c, nested).Output, true)
	// An exact flat key wins over the nested path.
	is.Equal(eval(t, c, map[string]any{"order.customer.tier": "silver", "order": nested["order"]}).Output, false)
	// A missing or non-object segment reads as null; not("gold") matches null.
	is.Equal(eval(t, c, map[string]any{"order": "oops"}).Output, false)
	is.Equal(eval(t, c, map[string]any{"order": map[string]any{}}).Output, false)
	is.Equal(eval(t, c, nil).Output, false)
}

func TestInputTypeErrors(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
inputs: [{name: age, type: number}, {name: when, type: date}]
outputs: [{name: y}]
rules: [{when: ["-", "-"], then: [1]}]
`)
	res, err := c.Evaluate(map[string]any{"age": "eighteen"})
	is.True(errors.Is(err, ErrInputType))
	var ee *EvalError
	is.True(errors.As(err, &ee))
	is.Equal(ee.Input, "age")
	is.True(strings.Contains(err.Error(), `input "age": expected number, got string "eighteen"`))
	is.Equal(res.MatchedRuleIDs, []string{})

	_, err = c.Evaluate(map[string]any{"age": 1, "when": "2024-13-01"})
	is.True(errors.Is(err, ErrInputType))
	is.True(strings.Contains(err.Error(), `input "when": invalid date "2024-13-01"`))

	_, err = c.Evaluate(map[string]any{"age": math.Inf(1)})
	is.True(errors.Is(err, ErrInputType))

	long := strings.Repeat("x", 10000)
	_, err = c.Evaluate(map[string]any{"age": long})
	is.True(len(err.Error()) < 200) // user data is clipped in messages
}

func TestManyInputsAndNoInputs(t *testing.T) {
	is := is.New(t)
	src := "inputs:\n"
	when := ""
	in := map[string]any{}
	for i := range 12 { // more than the stack buffer holds
		name := "i" + string(rune('a'+i))
		src += "  - {name: " + name + ", type: number}\n"
		when += `"` + string(rune('0'+i%10)) + `",`
		in[name] = float64(i % 10)
	}
	src += "outputs: [{name: y}]\nrules:\n  - {when: [" + strings.TrimSuffix(when, ",") + "], then: [hit]}\n"
	c := mustCompile(t, src)
	is.Equal(eval(t, c, in).Output, "hit")
	in["ic"] = 0.0
	is.Equal(eval(t, c, in).Output, nil)

	c = mustCompile(t, "inputs: []\noutputs: [{name: y}]\nrules: [{when: [], then: [always]}]\n")
	is.Equal(eval(t, c, nil), Result{Output: "always", MatchedRuleIDs: []string{"rule-1"}})

	c = mustCompile(t, "inputs: [{name: x, type: number}]\noutputs: [{name: y}]\nrules: []\ndefault: none\n")
	is.Equal(eval(t, c, nil), Result{Output: "none", MatchedRuleIDs: []string{}, UsedDefault: true})
}

func TestTemporalOutputs(t *testing.T) {
	is := is.New(t)
	c := mustCompile(t, `
hitPolicy: RULE ORDER
inputs: [{name: x, type: number}]
outputs:
  - {name: d, type: date}
  - {name: t, type: dateTime}
  - {name: p, type: duration}
  - {name: u}
rules:
  - {when: ["-"], then: [2024-01-02, "2024-01-02T10:00:00+02:00", P1D, 2024-01-02]}
`)
	is.Equal(eval(t, c, nil).Output, []any{map[string]any{
		"d": "2024-01-02", "t": "2024-01-02T10:00:00+02:00", "p": "P1D", "u": "2024-01-02T00:00:00Z",
	}})
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // Path(): message fragment, in order
	}{
		{"when arity", `
inputs: [{name: a, type: number}, {name: b, type: string}]
outputs: [{name: y}]
rules: [{when: ["1"], then: [1]}]`, []string{"rules[0].when: when has 1 tests, the table has 2 inputs"}},
		{"then arity", `
inputs: [{name: a, type: number}]
outputs: [{name: y}, {name: z}]
rules: [{when: ["1"], then: [1]}, {when: ["2"], then: 5}]`, []string{
			"rules[0].then: has 1 entries, the table has 2 outputs",
			"rules[1].then: must be a list or an object with 2 outputs"}},
		{"then missing", `
inputs: [{name: a, type: number}]
outputs: [{name: y}]
rules: [{when: ["1"]}]`, []string{"rules[0].then: one entry per output is required"}},
		{"then object keys", `
inputs: [{name: a, type: number}]
outputs: [{name: y}, {name: z}]
rules: [{when: ["1"], then: {y: 1, q: 2}}]`, []string{"rules[0].then: unknown output \"q\"", "rules[0].then[1]: missing output \"z\""}},
		{"bad test located", `
inputs: [{name: a, type: number}, {name: b, type: string}]
outputs: [{name: y}]
rules:
  - {when: ["1", '"x"'], then: [1]}
  - {when: ["1", 'x'], then: [1]}`, []string{`rules[1].when[1]: invalid test "x": unknown name "x"`}},
		{"output types", `
inputs: [{name: a, type: number}]
outputs: [{name: n, type: number}, {name: s, type: string}, {name: b, type: boolean}, {name: d, type: date}, {name: o}]
rules: [{when: ["1"], then: ["5", 5, "true", 2024-02-30, {x: 1}]}]`, []string{
			`rules[0].then[0]: output "n": expected number, got string "5"`,
			`rules[0].then[1]: output "s": expected string, got number 5`,
			`rules[0].then[2]: output "b": expected boolean, got string "true"`,
			`rules[0].then[3]: output "d": invalid date "2024-02-30"`,
			`rules[0].then[4]: output "o": expected a scalar, got object`}},
		{"allowed values", `
hitPolicy: PRIORITY
inputs: [{name: a, type: number}]
outputs: [{name: y, type: string, allowedValues: [a, b, a, 3]}]
rules: [{when: ["1"], then: [c]}]
default: d`, []string{
			`outputs[0].allowedValues: duplicate allowed value string "a"`,
			`outputs[0].allowedValues: expected string, got number 3`,
			`rules[0].then[0]: output "y": string "c" is not one of allowedValues`,
			`default[0]: output "y": string "d" is not one of allowedValues`}},
		{"empty allowed values", `
inputs: [{name: a, type: number}]
outputs: [{name: y, allowedValues: []}]
rules: []`, []string{"outputs[0].allowedValues: allowedValues must not be empty"}},
		{"priority needs allowed values", `
hitPolicy: OUTPUT ORDER
inputs: [{name: a, type: number}]
outputs: [{name: y}]
rules: []`, []string{"outputs: hit policy OUTPUT ORDER needs allowedValues"}},
		{"aggregation without collect", `
hitPolicy: FIRST
aggregation: SUM
inputs: [{name: a, type: number}]
outputs: [{name: y, type: number}]
rules: []`, []string{"aggregation: aggregation is only allowed with hit policy COLLECT"}},
		{"aggregation default policy", `
aggregation: COUNT
inputs: [{name: a, type: number}]
outputs: [{name: y}]
rules: []`, []string{"aggregation: aggregation is only allowed with hit policy COLLECT"}},
		{"aggregation outputs", `
hitPolicy: COLLECT
aggregation: COUNT
inputs: [{name: a, type: number}]
outputs: [{name: y}, {name: z}]
rules: []`, []string{"aggregation: aggregation needs exactly one output, the table has 2"}},
		{"sum type", `
hitPolicy: COLLECT
aggregation: SUM
inputs: [{name: a, type: number}]
outputs: [{name: y, type: string}]
rules: []`, []string{"outputs[0].type: SUM needs an output of type number, got string"}},
		{"max untyped", `
hitPolicy: COLLECT
aggregation: MAX
inputs: [{name: a, type: number}]
outputs: [{name: y}]
rules: []`, []string{"outputs[0].type: MAX needs an output of an ordered type"}},
		{"unknown names", `
kind: workflow
hitPolicy: unique
aggregation: AVG
inputs: [{name: a, type: int}]
outputs: [{name: y, type: text}]
rules: [{when: ["< 5"], then: [1]}]`, []string{
			`kind: kind must be "decisionTable", got "workflow"`,
			`hitPolicy: unknown hit policy "unique"`,
			`inputs[0].type: unknown type "int"`,
			`outputs[0].type: unknown type "text"`,
			`aggregation: unknown aggregation "AVG"`}},
		{"rule ids", `
inputs: [{name: a, type: number}]
outputs: [{name: y}]
rules:
  - {id: rule-2, when: ["1"], then: [1]}
  - {when: ["2"], then: [1]}
  - {id: x, when: ["3"], then: [1]}
  - {id: x, when: ["4"], then: [1]}`, []string{
			`rules[1].id: duplicate rule id "rule-2" (also rule 0)`,
			`rules[3].id: duplicate rule id "x" (also rule 2)`}},
		{"columns", `
inputs: [{name: a, type: number}, {name: a, type: number}, {name: "", type: string}, {name: b}, {name: "c..d", type: string}]
outputs: []
rules: []`, []string{
			`inputs[1].name: duplicate input name "a"`,
			`inputs[2].name: input name is required`,
			`inputs[3].type: input type is required`,
			`inputs[4].name: input name "c..d" has an empty path segment`,
			`outputs: at least one output is required`}},
		{"output names", `
inputs: []
outputs: [{name: y}, {name: y}, {name: ""}]
rules: []`, []string{`outputs[1].name: duplicate output name "y"`, `outputs[2].name: output name is required`}},
		{"default shape", `
inputs: []
outputs: [{name: y}, {name: z}]
rules: []
default: {q: 1}`, []string{`default: unknown output "q"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := compileErrs(t, tc.src)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors %q, want %d %q", len(got), got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestErrorLocation(t *testing.T) {
	is := is.New(t)
	errs := compileErrs(t, `
inputs: [{name: a, type: number}, {name: b, type: string}]
outputs: [{name: y}]
rules:
  - {when: ["1", '"x"'], then: [1]}
  - {when: ["1", '"x", < 5'], then: [1]}
`)
	is.Equal(len(errs), 1)
	e := errs[0]
	is.Equal(*e, Error{RuleIndex: 1, Column: 1, Field: "rules.when", Offset: 7, Msg: e.Msg})
	is.True(strings.Contains(e.Msg, "number literal does not match the column type string"))
	is.Equal(e.Path(), "rules[1].when[1]")

	var single *Error
	is.True(errors.As(error(errs), &single)) // Errors unwraps to its members
	is.True(strings.HasPrefix(errs.Error(), "decision: invalid table: rules[1].when[1]: "))

	_, err := Compile(nil)
	is.True(err != nil)
}

func TestParseStrict(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown top-level key", "inputs: []\noutputs: [{name: y}]\nrules: []\nhitpolicy: FIRST\n", "field hitpolicy not found"},
		{"unknown rule key", "inputs: []\noutputs: [{name: y}]\nrules: [{when: [], then: [1], else: 2}]\n", "field else not found"},
		{"unknown input key", "inputs: [{name: a, type: number, label: A}]\noutputs: [{name: y}]\nrules: []\n", "field label not found"},
		{"duplicate key", "inputs: []\ninputs: []\n", "already defined"},
		{"json unknown key", `{"inputs": [], "outputs": [{"name": "y"}], "rules": [], "extra": 1}`, "field extra not found"},
		{"two documents", "inputs: []\n---\ninputs: []\n", "more than one document"},
		{"empty", " \n", "empty document"},
		{"not a mapping", "[1, 2]", "cannot unmarshal"},
		{"non-scalar test", "rules: [{when: [[1]], then: [1]}]\n", "a unary test must be a scalar"},
		{"wrong field type", "inputs: 5\n", "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseScalarTestsAndJSON(t *testing.T) {
	is := is.New(t)
	table, err := Parse([]byte("inputs: []\noutputs: [{name: y}]\nrules: [{when: [5, true, ~, null, '-', -1.5], then: [1]}]\n"))
	is.NoErr(err)
	is.Equal(table.Rules[0].When, UnaryTests{"5", "true", "null", "null", "-", "-1.5"})

	src := `{"kind":"decisionTable","hitPolicy":"FIRST","inputs":[{"name":"n","type":"number"},{"name":"ok","type":"boolean"}],
	"outputs":[{"name":"y","type":"string"}],
	"rules":[{"id":"a","when":[5,true],"then":["five"]},{"id":"b","when":["-",null],"then":{"y":"other"}}]}`
	parsed, err := Parse([]byte(src))
	is.NoErr(err)
	var viaJSON Table // encoding/json must decode the same document the same way (embedding)
	is.NoErr(json.Unmarshal([]byte(src), &viaJSON))
	is.Equal(viaJSON.Rules[0].When, UnaryTests{"5", "true"})
	is.Equal(viaJSON.Rules[1].When, UnaryTests{"-", "null"})
	for _, tbl := range []*Table{parsed, &viaJSON} {
		c, err := Compile(tbl)
		is.NoErr(err)
		is.Equal(eval(t, c, map[string]any{"n": 5.0, "ok": true}).Output, "five")
		is.Equal(eval(t, c, map[string]any{"n": 5.0}).MatchedRuleIDs, []string{"b"})
	}

	// Round trip through JSON keeps the table equivalent.
	b, err := json.Marshal(parsed)
	is.NoErr(err)
	again, err := Parse(b)
	is.NoErr(err)
	is.True(reflect.DeepEqual(again.Rules[0].When, parsed.Rules[0].When))
	is.True(strings.Contains(string(b), `"hitPolicy":"FIRST"`))

	var bad Table
	is.True(json.Unmarshal([]byte(`{"rules":[{"when":[{"a":1}]}]}`), &bad) != nil)
}

// TestEvaluateAllocations guards the hot loop: a UNIQUE match allocates only
// the MatchedRuleIDs slice, however many rules there are.
func TestEvaluateAllocations(t *testing.T) {
	c := uniqueTable1000(t)
	in := benchInputs()[3]
	if _, err := c.Evaluate(in); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Evaluate(in); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("Evaluate allocated %.0f times per run, want at most 1", allocs)
	}
}

func TestConcurrentEvaluate(t *testing.T) {
	c := uniqueTable1000(t)
	inputs := benchInputs()
	want := make([]any, len(inputs))
	for i, in := range inputs {
		want[i] = eval(t, c, in).Output
	}
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := g; i < len(inputs); i += 4 {
				res, err := c.Evaluate(inputs[i])
				if err != nil || res.Output != want[i] {
					t.Errorf("goroutine %d input %d: %v %v", g, i, res.Output, err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

func TestAllowedValuesCompareByValue(t *testing.T) {
	is := is.New(t)
	// 1e17 (a float64 in YAML) and 100000000000000000 (an int) are the same number.
	c := mustCompile(t, `
hitPolicy: PRIORITY
inputs: [{name: x, type: number}]
outputs: [{name: y, type: number, allowedValues: [100000000000000000, 2.5]}]
rules:
  - {when: ["-"], then: [2.50]}
  - {when: ["> 0"], then: [1e17]}
`)
	is.Equal(eval(t, c, map[string]any{"x": 1.0}).Output, 1e17)
	is.Equal(eval(t, c, map[string]any{"x": 0.0}).Output, 2.5)

	errs := compileErrs(t, `
inputs: []
outputs: [{name: y, type: number, allowedValues: [1, 1.0]}, {name: d, type: duration, allowedValues: [P1D, PT24H, P1M]}]
rules: []`)
	is.Equal(len(errs), 2)
	is.True(strings.Contains(errs[0].Msg, "duplicate allowed value number 1"))
	is.True(strings.Contains(errs[1].Msg, `duplicate allowed value string "PT24H"`))
}
