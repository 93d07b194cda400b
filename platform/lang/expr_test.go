package lang

import (
	"encoding/json"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"github.com/matryer/is"
)

// exprWorkflow declares a rich input and one variable of each type, then
// runs the given steps; set steps can assign to any variable to test a type.
func exprWorkflow(steps string) string {
	return `kind: workflow
id: t/expr
input:
  type: object
  properties:
    name: {type: string}
    maybe: {type: [string, "null"]}
    count: {type: integer}
    price: {type: number}
    flag: {type: boolean}
    tags: {type: array, items: {type: string}}
    lines: {type: array, items: {type: object, properties: {qty: {type: integer}, sku: {type: string}}}}
    labels: {type: object, additionalProperties: {type: string}}
    odd: {type: object, properties: {first-name: {type: string}}}
    any: {}
vars:
  s: {type: string}
  i: {type: integer}
  d: {type: number}
  b: {type: boolean}
  l: {type: array, items: {type: string}}
  o: {type: object, required: [a], properties: {a: {type: integer}}}
steps:
` + steps
}

func TestExpressionTypes(t *testing.T) {
	cases := []struct {
		name, steps string
		want        string // diagnostic code, or "" for none
	}{
		{"string concat", "  - {id: a, set: {s: '=input.name + \"!\"'}}\n", ""},
		{"int to number", "  - {id: a, set: {d: =input.count}}\n", ""},
		{"number to int", "  - {id: a, set: {i: =input.price}}\n", "LANG-EXPR-TYPE"},
		{"explicit conversion", "  - {id: a, set: {i: =int(input.price)}}\n", ""},
		{"nullable compare", "  - {id: a, set: {b: =input.maybe == null}}\n", ""},
		{"nullable as string", "  - {id: a, set: {s: =input.maybe + 'x'}}\n", ""},
		{"undefined field", "  - {id: a, set: {s: =input.nmae}}\n", "LANG-EXPR-TYPE"},
		{"list element type", "  - {id: a, set: {s: '=input.tags[0]'}}\n", ""},
		{"list of structs", "  - {id: a, set: {i: '=input.lines.map(l, l.qty).sum()'}}\n", ""},
		{"struct field typo in macro", "  - {id: a, set: {i: '=input.lines.map(l, l.qtty).sum()'}}\n", "LANG-EXPR-TYPE"},
		{"double sum", "  - {id: a, set: {d: '=[1.5, 2.5].sum()'}}\n", ""},
		{"map values", "  - {id: a, set: {s: '=input.labels[\"env\"]'}}\n", ""},
		{"non-identifier properties", "  - {id: a, set: {s: '=string(input.odd[\"first-name\"])'}}\n", ""},
		{"dyn input", "  - {id: a, set: {s: =input.any.whatever}}\n", ""},
		{"has macro", "  - {id: a, set: {b: =has(input.name)}}\n", ""},
		{"optional field", "  - {id: a, set: {s: '=input.?name.orValue(\"anon\")'}}\n", ""},
		{"string ext", "  - {id: a, set: {s: '=input.name.upperAscii()'}}\n", ""},
		{"math ext", "  - {id: a, set: {d: '=math.ceil(input.price)'}}\n", ""},
		{"now and run", "  - {id: a, set: {s: '=run.id + string(now)'}}\n", ""},
		{"timestamp arithmetic", "  - {id: a, set: {b: '=now - run.startedAt > duration(\"1h\")'}}\n", ""},
		{"list literal to list var", "  - {id: a, set: {l: [a, '=input.name']}}\n", ""},
		{"list literal wrong element", "  - {id: a, set: {l: [a, =input.count]}}\n", "LANG-EXPR-TYPE"},
		{"object literal", "  - {id: a, set: {o: {a: =input.count}}}\n", ""},
		{"object literal missing required", "  - {id: a, set: {o: {b: =input.count}}}\n", "LANG-SCHEMA-MISMATCH"},
		{"object expression missing required", "  - {id: a, set: {o: '={\"b\": 1}'}}\n", ""},
		{"literal wrong type", "  - {id: a, set: {i: seven}}\n", "LANG-SCHEMA-MISMATCH"},
		{"escaped literal", "  - {id: a, set: {s: '==not an expression'}}\n", ""},
		{"vars self reference", "  - {id: a, set: {i: =vars.i + 1}}\n", ""},
		{"loop item typed", "  - id: a\n    forEach: =input.lines\n    steps:\n      - {id: b, set: {s: =item.sku}}\n", ""},
		{"loop item typo", "  - id: a\n    forEach: =input.lines\n    steps:\n      - {id: b, set: {s: =item.skew}}\n", "LANG-EXPR-TYPE"},
		{"loop index", "  - id: a\n    forEach: [x, y]\n    as: letter\n    steps:\n      - {id: b, set: {s: '=letter + string(index)'}}\n", ""},
		{"loop over non list", "  - id: a\n    forEach: =input.name\n    steps:\n      - {id: b, wait: 1s}\n", "LANG-EXPR-TYPE"},
		{"loop var outside", "  - id: a\n    forEach: [1]\n    steps:\n      - {id: b, wait: 1s}\n  - {id: c, set: {i: =item}}\n", "LANG-EXPR-TYPE"},
		{"collect sees body", "  - id: a\n    forEach: [1]\n    steps:\n      - {id: b, wait: 1s}\n    collect: =steps.b.output\n", ""},
		{"wait duration expr", "  - {id: a, wait: '=duration(\"5m\")'}\n", ""},
		{"wait string expr", "  - {id: a, wait: =input.name}\n", ""},
		{"wait wrong type", "  - {id: a, wait: =input.count}\n", "LANG-EXPR-TYPE"},
		{"human output typed", "  - id: h\n    human: {title: t, assignees: u, form: {type: object, properties: {ok: {type: boolean}}}}\n  - {id: a, set: {b: =steps.h.output.data.ok}}\n", ""},
		{"human decision typed", "  - id: h\n    human: {title: t, assignees: u}\n  - {id: a, set: {i: =steps.h.output.decision}}\n", "LANG-EXPR-TYPE"},
		{"assignees wrong type", "  - id: h\n    human: {title: t, assignees: =input.count}\n", "LANG-EXPR-TYPE"},
		{"agent text output", "  - id: g\n    agent: {provider: p, prompt: hi}\n  - {id: a, set: {s: =steps.g.output}}\n", ""},
		{"agent structured output", "  - id: g\n    agent: {provider: p, prompt: hi, output: {type: object, properties: {n: {type: integer}}}}\n  - {id: a, set: {s: =steps.g.output.n}}\n", "LANG-EXPR-TYPE"},
		{"signal payload typed", "  - id: g\n    signal: go\n    schema: {type: object, properties: {n: {type: integer}}}\n  - {id: a, set: {i: =steps.g.output.n}}\n", ""},
		{"inline decision output", "  - id: d\n    decision: {inputs: [{name: n, type: number}], outputs: [{name: r, type: string}], rules: [{when: ['-'], then: [x]}]}\n    with: {n: =input.price}\n  - {id: a, set: {s: =steps.d.output}}\n", ""},
		{"inline decision input type", "  - id: d\n    decision: {inputs: [{name: n, type: number}], outputs: [{name: r, type: string}], rules: [{when: ['-'], then: [x]}]}\n    with: {n: =input.name}\n", "LANG-EXPR-TYPE"},
		{"parallel join", "  - id: p\n    parallel:\n      - {name: a, steps: [{id: x, wait: 1s}]}\n      - {name: b, steps: [{id: y, set: {s: =string(steps.x.output)}}]}\n", "LANG-EXPR-STEP-REF"},
		{"after parallel", "  - id: p\n    parallel:\n      - {name: a, steps: [{id: x, wait: 1s}]}\n  - {id: y, set: {s: =string(steps.x.output)}}\n", ""},
		{"other switch branch", "  - id: s\n    switch: [{when: true, next: b}]\n  - {id: a, wait: 1s, next: end}\n  - {id: b, set: {s: =string(steps.a.output)}}\n", "LANG-EXPR-STEP-REF"},
		{"optional select of later step", "  - {id: a, set: {b: '=steps.?b.hasValue()'}}\n  - {id: b, wait: 1s}\n", "LANG-EXPR-STEP-REF"},
		{"fail message type", "  - id: f\n    fail: {code: X, message: =input.count}\n", "LANG-EXPR-TYPE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := Compile([]byte(exprWorkflow(tc.steps)), Options{})
			var codes []string
			for _, d := range r.Diagnostics {
				codes = append(codes, d.Code)
			}
			got := strings.Join(codes, ",")
			if got != tc.want {
				for _, d := range r.Diagnostics {
					t.Log(d)
				}
			}
			is.Equal(got, tc.want)
		})
	}
}

// TestKernelEvaluation runs artifact expressions the way a kernel does: the
// stored source, parsed with ExprEnvOptions and dyn variables, evaluated with
// ExprProgramOptions against JSON values.
func TestKernelEvaluation(t *testing.T) {
	is := is.New(t)
	src := []byte(`kind: workflow
id: t/eval
input:
  type: object
  properties:
    lines: {type: array, items: {type: object, properties: {price: {type: number}, qty: {type: number}}}}
    name: {type: string}
vars:
  total: {type: number}
steps:
  - id: sum
    set:
      total: =input.lines.map(l, l.price * l.qty).sum()
result:
  greeting: '="Hello, " + input.name.upperAscii()'
  total: =vars.total
`)
	r := Compile(src, Options{})
	is.True(r.OK)
	var art struct {
		Nodes []struct {
			Assign []struct {
				Value struct{ Expr string } `json:"value"`
			} `json:"assign"`
		} `json:"nodes"`
		Result struct {
			Object map[string]struct{ Expr string } `json:"object"`
		} `json:"result"`
	}
	is.NoErr(json.Unmarshal(r.Artifact, &art))
	env, err := cel.NewEnv(append(ExprEnvOptions(),
		cel.Variable("input", cel.DynType), cel.Variable("vars", cel.DynType))...)
	is.NoErr(err)
	eval := func(expr string, vars map[string]any) any {
		ast, iss := env.Parse(expr)
		is.NoErr(iss.Err())
		prg, err := env.Program(ast, ExprProgramOptions()...)
		is.NoErr(err)
		out, _, err := prg.Eval(vars)
		is.NoErr(err)
		return out.Value()
	}
	var input map[string]any
	is.NoErr(json.Unmarshal([]byte(`{"name":"ada","lines":[{"price":2.5,"qty":2},{"price":1,"qty":3}]}`), &input))
	total := eval(art.Nodes[0].Assign[0].Value.Expr, map[string]any{"input": input})
	is.Equal(total, 8.0)
	is.Equal(eval(art.Result.Object["greeting"].Expr, map[string]any{"input": input}), "Hello, ADA")
	is.Equal(eval(art.Result.Object["total"].Expr, map[string]any{"vars": map[string]any{"total": total}}), 8.0)
}

// TestCostLimit shows that an expensive expression compiles (its cost
// depends on data) but cannot run away at evaluation.
func TestCostLimit(t *testing.T) {
	is := is.New(t)
	env, err := cel.NewEnv(ExprEnvOptions()...)
	is.NoErr(err)
	ast, iss := env.Compile(`lists.range(2000).map(i, lists.range(2000).map(j, i * j)).size()`)
	is.NoErr(iss.Err())
	prg, err := env.Program(ast, ExprProgramOptions()...)
	is.NoErr(err)
	_, _, err = prg.Eval(cel.NoVars())
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "cost limit"))
}

func TestSumFunction(t *testing.T) {
	is := is.New(t)
	env, err := cel.NewEnv(append(ExprEnvOptions(), cel.Variable("x", cel.DynType))...)
	is.NoErr(err)
	run := func(expr string, x any) (any, error) {
		ast, iss := env.Compile(expr)
		is.NoErr(iss.Err())
		prg, err := env.Program(ast, ExprProgramOptions()...)
		is.NoErr(err)
		out, _, err := prg.Eval(map[string]any{"x": x})
		if err != nil {
			return nil, err
		}
		return out.Value(), nil
	}
	v, err := run("[1, 2, 3].sum()", nil)
	is.NoErr(err)
	is.Equal(v, int64(6))
	v, err = run("[1.5, 2.5].sum()", nil)
	is.NoErr(err)
	is.Equal(v, 4.0)
	v, err = run("x.sum()", []any{1, 2.5}) // dyn: mixed JSON numbers
	is.NoErr(err)
	is.Equal(v, 3.5)
	v, err = run("x.sum()", []any{})
	is.NoErr(err)
	is.Equal(v, int64(0))
	_, err = run("x.sum()", []any{"a"})
	is.True(err != nil)
	_, err = run("x.sum()", []any{int64(9223372036854775807), 1})
	is.True(err != nil) // overflow is an error, not a wrap
}
