package lang

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// at renders a diagnostic as CODE@line:col for compact expectations.
func at(d Diagnostic) string {
	return fmt.Sprintf("%s@%d:%d", d.Code, d.Range.Start.Line, d.Range.Start.Column)
}

func codesAt(ds []Diagnostic) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, at(d))
	}
	return out
}

// wf prefixes a workflow header; the steps start on line 4.
func wf(steps string) string {
	return "kind: workflow\nid: t/w\nsteps:\n" + strings.TrimPrefix(steps, "\n")
}

func TestDiagnostics(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		catalog bool
		want    []string
	}{
		{"yaml syntax error", "kind: workflow\nid: [unclosed\n", false, []string{"LANG-YAML@1:1"}},
		{"tab indentation", "kind: workflow\n\tid: x\n", false, []string{"LANG-YAML@2:1"}},
		{"empty source", "", false, []string{"LANG-EMPTY@1:1"}},
		{"comment only", "# nothing\n", false, []string{"LANG-EMPTY@1:1"}},
		{"two documents", "kind: workflow\nid: a/b\nsteps: [{id: a, wait: 1s}]\n---\nkind: action\n", false, []string{"LANG-YAML-MULTIDOC@4:1"}},
		{"not a mapping", "- a\n- b\n", false, []string{"LANG-TYPE@1:1"}},
		{"missing kind", "id: a/b\n", false, []string{"LANG-KIND@1:1"}},
		{"unknown kind", "kind: pipeline\n", false, []string{"LANG-KIND@1:7"}},
		{"alias", wf("  - id: a\n    wait: &d 1s\n  - id: b\n    wait: *d\n"), false, []string{"LANG-YAML-ALIAS@5:11", "LANG-YAML-ALIAS@7:11"}},
		{"merge key", wf("  - id: a\n    <<: {wait: 1s}\n"), false, []string{"LANG-YAML-ALIAS@5:5"}},
		{"custom tag", wf("  - id: a\n    wait: !dur 1s\n"), false, []string{"LANG-YAML-TAG@5:11"}},
		{"duplicate key", wf("  - id: a\n    wait: 1s\n    wait: 2s\n"), false, []string{"LANG-DUPLICATE-KEY@6:5"}},
		{"unknown top-level key", "kind: workflow\nid: t/w\nstpes: []\nsteps:\n  - id: a\n    wait: 1s\n", false, []string{"LANG-UNKNOWN-KEY@3:1"}},
		{"unknown step key", wf("  - id: a\n    wait: 1s\n    timeout: 5s\n"), false, []string{"LANG-UNKNOWN-KEY@6:5"}},
		{"missing steps", "kind: workflow\nid: t/w\n", false, []string{"LANG-MISSING-KEY@1:1"}},
		{"empty steps", "kind: workflow\nid: t/w\nsteps: []\n", false, []string{"LANG-INVALID-VALUE@3:8"}},
		{"bad definition id", "kind: workflow\nid: Acme/W\nsteps: [{id: a, wait: 1s}]\n", false, []string{"LANG-INVALID-ID@2:5"}},
		{"missing step id", wf("  - wait: 1s\n"), false, []string{"LANG-MISSING-KEY@4:5"}},
		{"bad step id", wf("  - id: send-email\n    wait: 1s\n"), false, []string{"LANG-INVALID-ID@4:9"}},
		{"reserved step id", wf("  - id: end\n    wait: 1s\n"), false, []string{"LANG-INVALID-ID@4:9"}},
		{"no kind key", wf("  - id: a\n    title: x\n"), false, []string{"LANG-STEP-KIND@4:5"}},
		{"two kind keys", wf("  - id: a\n    wait: 1s\n    signal: go\n"), false, []string{"LANG-STEP-KIND@6:5"}},
		{"duplicate step id", wf("  - id: a\n    wait: 1s\n  - id: a\n    wait: 2s\n"), false, []string{"LANG-DUPLICATE-ID@6:9"}},
		{"duplicate id in loop body", wf("  - id: a\n    forEach: [1, 2]\n    steps:\n      - id: a\n        wait: 1s\n"), false, []string{"LANG-DUPLICATE-ID@7:13"}},
		{"dangling next", wf("  - id: a\n    wait: 1s\n    next: b\n"), false, []string{"LANG-UNKNOWN-TARGET@6:11"}},
		{"dangling switch target", wf("  - id: a\n    switch:\n      - when: true\n        next: nowhere\n  - id: b\n    wait: 1s\n"), false, []string{"LANG-UNKNOWN-TARGET@7:15"}},
		{"target in another list", wf("  - id: a\n    forEach: [1]\n    steps:\n      - id: inner\n        wait: 1s\n        next: b\n  - id: b\n    wait: 1s\n"), false, []string{"LANG-TARGET-SCOPE@9:15"}},
		{"unreachable", wf("  - id: a\n    wait: 1s\n    next: c\n  - id: b\n    wait: 1s\n  - id: c\n    wait: 1s\n"), false, []string{"LANG-UNREACHABLE@7:9"}},
		{"unreachable after fail", wf("  - id: a\n    fail: {code: BOOM}\n  - id: b\n    wait: 1s\n"), false, []string{"LANG-UNREACHABLE@6:9"}},
		{"cycle", wf("  - id: a\n    wait: 1s\n  - id: b\n    wait: 1s\n    next: a\n"), false, []string{"LANG-CYCLE@8:11"}},
		{"self loop", wf("  - id: a\n    wait: 1s\n    next: a\n"), false, []string{"LANG-CYCLE@6:11"}},
		{"cycle via switch", wf("  - id: a\n    wait: 1s\n  - id: b\n    switch:\n      - when: true\n        next: a\n    default: end\n"), false, []string{"LANG-CYCLE@9:15"}},
		{"cycle inside loop body", wf("  - id: l\n    forEach: [1]\n    steps:\n      - id: x\n        wait: 1s\n        next: x\n"), false, []string{"LANG-CYCLE@9:15"}},
		{"bad duration", wf("  - id: a\n    wait: 10 minutes\n"), false, []string{"LANG-DURATION@5:11"}},
		{"duration without unit", wf("  - id: a\n    wait: 10\n"), false, []string{"LANG-DURATION@5:11"}},
		{"zero timeout", wf("  - id: a\n    signal: go\n    deadline: 0s\n"), false, []string{"LANG-DURATION@6:15"}},
		{"wrong value type", wf("  - id: a\n    forEach: [1]\n    concurrency: many\n    steps: [{id: b, wait: 1s}]\n"), false, []string{"LANG-TYPE@6:18"}},
		{"out of range", wf("  - id: a\n    forEach: [1]\n    concurrency: 0\n    steps: [{id: b, wait: 1s}]\n"), false, []string{"LANG-INVALID-VALUE@6:18"}},
		{"expression syntax", "kind: workflow\nid: t/w\nvars: {x: {type: integer}}\nsteps:\n  - id: a\n    set: {x: =1 +}\n", false, []string{"LANG-EXPR-SYNTAX@6:18"}},
		{"expression syntax quoted", "kind: workflow\nid: t/w\nvars: {x: {type: integer}}\nsteps:\n  - id: a\n    set: {x: \"=1 + )\"}\n", false, []string{"LANG-EXPR-SYNTAX@6:20"}},
		{"undeclared variable", "kind: workflow\nid: t/w\nvars: {x: {type: integer}}\nsteps:\n  - id: a\n    set: {x: =nope + 1}\n", false, []string{"LANG-EXPR-TYPE@6:15"}},
		{"undefined input field", "kind: workflow\nid: t/w\ninput: {type: object, properties: {n: {type: integer}}}\nvars: {x: {type: integer}}\nsteps:\n  - id: a\n    set: {x: =input.m}\n", false, []string{"LANG-EXPR-TYPE@7:20"}},
		{"operator type error", "kind: workflow\nid: t/w\ninput: {type: object, properties: {n: {type: string}}}\nvars: {x: {type: integer}}\nsteps:\n  - id: a\n    set: {x: =input.n + 1}\n", false, []string{"LANG-EXPR-TYPE@7:23"}},
		{"assignment type mismatch", "kind: workflow\nid: t/w\ninput: {type: object, properties: {n: {type: string}}}\nvars: {x: {type: integer}}\nsteps:\n  - id: a\n    set: {x: =input.n}\n", false, []string{"LANG-EXPR-TYPE@7:14"}},
		{"condition not bool", wf("  - id: a\n    switch:\n      - when: =1 + 1\n        next: b\n  - id: b\n    wait: 1s\n"), false, []string{"LANG-EXPR-TYPE@6:15"}},
		{"condition literal not bool", wf("  - id: a\n    switch:\n      - when: yes please\n        next: b\n  - id: b\n    wait: 1s\n"), false, []string{"LANG-TYPE@6:15"}},
		{"step not yet run", "kind: workflow\nid: t/w\nvars: {x: {type: string}}\nsteps:\n  - id: a\n    set: {x: =string(steps.b.output)}\n  - id: b\n    wait: 1s\n", false, []string{"LANG-EXPR-STEP-REF@6:27"}},
		{"loop body private after loop", "kind: workflow\nid: t/w\nvars: {x: {type: string}}\nsteps:\n  - id: l\n    forEach: [1, 2]\n    steps:\n      - id: inner\n        wait: 1s\n  - id: a\n    set: {x: =string(steps.inner.output)}\n", false, []string{"LANG-EXPR-STEP-REF@11:27"}},
		{"undeclared set variable", wf("  - id: a\n    set: {total: 1}\n"), false, []string{"LANG-UNKNOWN-VAR@5:11"}},
		{"unknown action without catalog", wf("  - id: a\n    action: acme/x@1\n"), false, []string{"LANG-REF-UNRESOLVED@5:13"}},
		{"bad reference syntax", wf("  - id: a\n    action: acme/x\n"), false, []string{"LANG-REF-SYNTAX@5:13"}},
		{"unknown action", wf("  - id: a\n    action: acme/nope@1\n"), true, []string{"LANG-REF-UNKNOWN@5:13"}},
		{"wrong version", wf("  - id: a\n    action: acme/crm.get-customer@7\n    with: {customerId: x}\n"), true, []string{"LANG-REF-VERSION@5:13"}},
		{"wrong kind", wf("  - id: a\n    workflow: acme/send-email@1\n"), true, []string{"LANG-REF-KIND@5:15"}},
		{"ambiguous short name", wf("  - id: a\n    action: notify@1\n"), true, []string{"LANG-REF-AMBIGUOUS@5:13"}},
		{"input field unknown", wf("  - id: a\n    action: acme/send-email@1\n    with: {to: =string(1), subject: hi, cc: x}\n"), true, []string{"LANG-SCHEMA-MISMATCH@6:41"}},
		{"input required missing", wf("  - id: a\n    action: acme/send-email@1\n    with: {to: =string(1)}\n"), true, []string{"LANG-SCHEMA-MISMATCH@6:11"}},
		{"no input at all", wf("  - id: a\n    action: acme/send-email@1\n"), true, []string{"LANG-SCHEMA-MISMATCH@4:9"}},
		{"input literal wrong type", wf("  - id: a\n    action: acme/send-email@1\n    with: {to: 42, subject: hi}\n"), true, []string{"LANG-SCHEMA-MISMATCH@6:16"}},
		{"input expression wrong type", wf("  - id: a\n    action: acme/send-email@1\n    with: {to: =1 + 2, subject: hi}\n"), true, []string{"LANG-EXPR-TYPE@6:16"}},
		{"secret literal", wf("  - id: a\n    action: acme/send-email@1\n    with: {to: x, subject: hi, smtpPassword: hunter2}\n"), true, []string{"LANG-SECRET-LITERAL@6:46"}},
		{"secret default in schema", "kind: workflow\nid: t/w\ninput:\n  type: object\n  properties:\n    token: {type: string, x-secret: true, default: abc}\nsteps: [{id: a, wait: 1s}]\n", false, []string{"LANG-SECRET-LITERAL@6:43"}},
		{"secret unmarked", "kind: workflow\nid: t/w\ninput:\n  type: object\n  properties:\n    apiKey: {type: string}\nsteps: [{id: a, wait: 1s}]\n", false, []string{"LANG-SECRET-UNMARKED@6:5"}},
		{"invalid schema", "kind: workflow\nid: t/w\ninput: {type: objekt}\nsteps: [{id: a, wait: 1s}]\n", false, []string{"LANG-SCHEMA@3:15"}},
		{"schema with remote ref", "kind: workflow\nid: t/w\ninput: {$ref: 'https://example.com/s.json'}\nsteps: [{id: a, wait: 1s}]\n", false, []string{"LANG-SCHEMA@3:8"}},
		{"side effect mismatch", wf("  - id: a\n    action: acme/crm.get-customer@2\n    sideEffect: unsafe\n    with: {customerId: x}\n"), true, []string{"LANG-SIDE-EFFECT@6:17"}},
		{"retry unsafe", wf("  - id: a\n    action: acme/charge-card@1\n    with: {amount: 1}\n    retry: {maxAttempts: 3}\n"), true, []string{"LANG-RETRY-UNSAFE@7:12"}},
		{"deadline shorter than timeout", wf("  - id: a\n    action: acme/crm.get-customer@2\n    with: {customerId: x}\n    timeout: 1m\n    deadline: 30s\n"), true, []string{"LANG-INVALID-VALUE@8:15"}},
		{"loop variable shadows", wf("  - id: a\n    forEach: [1]\n    steps:\n      - id: b\n        forEach: [2]\n        steps: [{id: c, wait: 1s}]\n"), false, []string{"LANG-INVALID-ID@8:18", "LANG-INVALID-ID@8:18"}},
		{"output without result", "kind: workflow\nid: t/w\noutput: {type: object, required: [a]}\nsteps: [{id: a, wait: 1s}]\n", false, []string{"LANG-SCHEMA-MISMATCH@3:9"}},
		{"result mismatch", "kind: workflow\nid: t/w\noutput: {type: object, required: [a]}\nsteps: [{id: a, wait: 1s}]\nresult: {b: 1}\n", false, []string{"LANG-SCHEMA-MISMATCH@5:9"}},
		{"decision table error", wf("  - id: d\n    decision:\n      inputs: [{name: n, type: number}]\n      outputs: [{name: r}]\n      rules:\n        - when: ['<< 3']\n          then: [a]\n"), false, []string{"LANG-DECISION-TABLE@9:20"}},
		{"inline table unknown key", wf("  - id: d\n    decision:\n      input: []\n      inputs: [{name: n, type: number}]\n      outputs: [{name: r}]\n      rules: [{when: ['< 3'], then: [a]}]\n"), false, []string{"LANG-UNKNOWN-KEY@6:7"}},
	}
	lock := mustLock(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			opts := Options{Filename: "t.yaml"}
			if tc.catalog {
				opts.Catalog = lock
			}
			r := Compile([]byte(tc.src), opts)
			got := codesAt(r.Diagnostics)
			want := append([]string(nil), tc.want...)
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				for _, d := range r.Diagnostics {
					t.Log(d)
				}
			}
			is.Equal(strings.Join(got, " "), strings.Join(want, " "))
			hasErr := false
			for _, d := range r.Diagnostics {
				hasErr = hasErr || d.Severity == SeverityError
			}
			is.Equal(r.OK, !hasErr && !r.Partial) // OK means no errors and a complete artifact
		})
	}
}
