package lang

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// referenceLock returns the catalog lock of the language reference.
func referenceLock(t *testing.T) *CatalogLock {
	t.Helper()
	for _, f := range readFences(t) {
		if f.Info == "json catalog" {
			l, err := ParseCatalogLock([]byte(f.Body))
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
	}
	t.Fatal("no catalog in the reference")
	return nil
}

// referenceSources returns the yaml examples of the reference.
func referenceSources(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range readFences(t) {
		if strings.HasPrefix(f.Info, "yaml") {
			out = append(out, []byte(f.Body))
		}
	}
	return out
}

func encode(t *testing.T, r Result) []byte {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDeterminism(t *testing.T) {
	is := is.New(t)
	lock := referenceLock(t)
	sources := append(referenceSources(t), genWorkflow(120))
	for _, src := range sources {
		first := encode(t, Compile(src, Options{Filename: "a.yaml", Catalog: lock}))
		for i := 0; i < 5; i++ {
			again := encode(t, Compile(src, Options{Filename: "a.yaml", Catalog: lock}))
			is.True(bytes.Equal(first, again)) // same inputs, same bytes
		}
	}
	// Validator messages that list map keys (found by FuzzCompile).
	extra := []byte(wf("  - id: a\n    action: acme/send-email@1\n    with: {to: x, subject: y, q: 1, w: 2, e: 3, r: 4, t: 5, z: 6}\n"))
	first := encode(t, Compile(extra, Options{Catalog: lock}))
	is.True(bytes.Contains(first, []byte("'e', 'q', 'r', 't', 'w', 'z'")))
	for i := 0; i < 20; i++ {
		is.True(bytes.Equal(first, encode(t, Compile(extra, Options{Catalog: lock}))))
	}
	// The number of expression-checking workers must not show either.
	prev := runtime.GOMAXPROCS(1)
	single := encode(t, Compile(sources[len(sources)-1], Options{Catalog: lock}))
	runtime.GOMAXPROCS(prev)
	multi := encode(t, Compile(sources[len(sources)-1], Options{Catalog: lock}))
	is.True(bytes.Equal(single, multi))
}

func TestFilenameDoesNotChangeArtifact(t *testing.T) {
	is := is.New(t)
	src := []byte(wf("  - id: a\n    wait: 1s\n    next: c\n  - id: b\n    wait: 1s\n  - id: c\n    wait: 1s\n"))
	a := Compile(src, Options{Filename: "one.yaml"})
	b := Compile(src, Options{Filename: "two.yaml"})
	is.Equal(a.Digest, b.Digest)
	is.True(bytes.Equal(a.Artifact, b.Artifact))
	is.Equal(len(a.Diagnostics), 1)
	is.Equal(a.Diagnostics[0].File, "one.yaml")
	is.Equal(b.Diagnostics[0].File, "two.yaml")
}

func TestResultEncoding(t *testing.T) {
	is := is.New(t)
	src := []byte(`kind: workflow
id: t/html
vars: {x: {type: boolean}}
steps:
  - id: a
    set: {x: "=1 < 2 && 2 > 1"}
`)
	r := Compile(src, Options{})
	is.True(r.OK)
	out := encode(t, r)
	is.True(bytes.Contains(out, []byte(`"expr":"1 < 2 && 2 > 1"`))) // no HTML escaping
	// The artifact inside the encoded result is byte-identical to the
	// digested one.
	var env struct {
		Artifact json.RawMessage `json:"artifact"`
		Digest   string          `json:"digest"`
	}
	is.NoErr(json.Unmarshal(out, &env))
	sum := sha256.Sum256(env.Artifact)
	is.Equal(env.Digest, "sha256:"+hex.EncodeToString(sum[:]))
	canon, err := CanonicalJSON(env.Artifact)
	is.NoErr(err)
	is.True(bytes.Equal(canon, env.Artifact)) // the artifact is canonical
	is.True(strings.HasPrefix(string(out), `{"ok":true,"partial":false,"artifact":{`))
}

func TestValidateWithoutCatalog(t *testing.T) {
	is := is.New(t)
	src := []byte(wf("  - id: a\n    action: acme/send-email@1\n    with: {to: x, subject: y}\n"))
	v := Validate(src, Options{Strict: true})
	is.True(v.ValidationOK) // everything that could be checked is fine
	is.True(v.Partial)
	is.True(!v.OK) // not proven deployable
	is.Equal(len(v.Diagnostics), 1)
	is.Equal(v.Diagnostics[0].Code, CodeRefUnresolved)
	is.Equal(v.Diagnostics[0].Severity, SeverityWarning) // strict has no effect

	c := Compile(src, Options{Strict: true})
	is.Equal(c.Diagnostics[0].Severity, SeverityError) // compile honours strict

	bad := []byte(wf("  - id: a\n    wait: soon\n"))
	v = Validate(bad, Options{})
	is.True(!v.ValidationOK)
}

func TestValidateWithCatalogEqualsCompile(t *testing.T) {
	is := is.New(t)
	lock := referenceLock(t)
	for _, src := range referenceSources(t) {
		for _, strict := range []bool{false, true} {
			opts := Options{Filename: "f.yaml", Catalog: lock, Strict: strict}
			c := Compile(src, opts)
			v := Validate(src, opts)
			is.True(bytes.Equal(encode(t, c), encode(t, v.Result)))
			hasErr := false
			for _, d := range c.Diagnostics {
				hasErr = hasErr || d.Severity == SeverityError
			}
			is.Equal(v.ValidationOK, !hasErr)
		}
	}
	out, err := Validate(referenceSources(t)[0], Options{Catalog: lock}).Encode()
	is.NoErr(err)
	is.True(bytes.Contains(out, []byte(`"validationOk":true`)))
}

func TestStrictPromotesWarnings(t *testing.T) {
	is := is.New(t)
	src := []byte(wf("  - id: a\n    wait: 1s\n    next: c\n  - id: b\n    wait: 1s\n  - id: c\n    wait: 1s\n"))
	r := Compile(src, Options{})
	is.True(r.OK)
	is.Equal(r.Diagnostics[0].Severity, SeverityWarning)
	r = Compile(src, Options{Strict: true})
	is.True(!r.OK)
	is.True(r.Partial)
	is.Equal(r.Diagnostics[0].Severity, SeverityError)
}

func artifactOf(t *testing.T, r Result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Artifact, &m); err != nil {
		t.Fatalf("artifact: %v", err)
	}
	return m
}

func TestPartialResults(t *testing.T) {
	is := is.New(t)

	// Unresolvable YAML: no artifact at all.
	r := Compile([]byte("kind: workflow\nsteps: [\n"), Options{})
	is.True(r.Partial)
	is.True(!r.OK)
	is.Equal(string(r.Artifact), "null")
	is.Equal(r.Digest, "")

	// An incomplete draft: errors, yet an artifact of what could be read.
	src := []byte(wf("  - id: first\n    wait: 1s\n    next: second\n  - id: later\n    wait: nope\n"))
	r = Compile(src, Options{})
	is.True(r.Partial)
	is.True(r.Digest != "")
	art := artifactOf(t, r)
	is.Equal(art["partial"], true)
	nodes := art["nodes"].([]any)
	is.Equal(len(nodes), 2)
	is.Equal(nodes[0].(map[string]any)["next"], nil) // the dangling target is dropped

	// Unresolved references: partial, and the reference table says so.
	r = Compile([]byte(wf("  - id: a\n    action: acme/x@3\n")), Options{})
	is.True(r.Partial)
	refs := artifactOf(t, r)["references"].(map[string]any)
	is.Equal(refs["action:acme/x@3"].(map[string]any)["resolved"], false)
}

func TestSourceMap(t *testing.T) {
	is := is.New(t)
	src := []byte(`kind: workflow
id: t/map
steps:
  - id: one
    wait: 1s
  - id: each
    forEach: [1, 2]
    steps:
      - id: inner
        wait: "2s"
`)
	r := Compile(src, Options{})
	is.True(r.OK)
	is.Equal(r.SourceMap["one"], Range{Start: Position{4, 5}, End: Position{5, 13}})
	is.Equal(r.SourceMap["each"], Range{Start: Position{6, 5}, End: Position{10, 19}})
	is.Equal(r.SourceMap["inner"], Range{Start: Position{9, 9}, End: Position{10, 19}})
	is.Equal(len(r.SourceMap), 3)
}

func TestLimits(t *testing.T) {
	is := is.New(t)
	big := make([]byte, MaxSourceBytes+1)
	for i := range big {
		big[i] = '#'
	}
	r := Compile(big, Options{})
	is.Equal(r.Diagnostics[0].Code, CodeTooLarge)

	deep := "kind: workflow\nid: t/d\nsteps: [{id: a, set: {x: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}}]\n"
	r = Compile([]byte(deep), Options{})
	is.Equal(r.Diagnostics[0].Code, CodeTooDeep)

	// A billion-laughs document is refused at its first anchor, without
	// expanding anything.
	var bomb strings.Builder
	bomb.WriteString("kind: workflow\nid: t/b\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 20; i++ {
		bomb.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				bomb.WriteString(", ")
			}
			bomb.WriteString("*a" + itoa(i-1))
		}
		bomb.WriteString("]\n")
	}
	r = Compile([]byte(bomb.String()), Options{})
	codes := map[string]bool{}
	for _, d := range r.Diagnostics {
		codes[d.Code] = true
	}
	is.True(codes[CodeYAMLAlias])

	var many strings.Builder
	many.WriteString("kind: workflow\nid: t/many\nsteps:\n")
	for i := 0; i <= MaxSteps; i++ {
		many.WriteString("  - {id: s" + itoa(i) + ", wait: 1s}\n")
	}
	r = Compile([]byte(many.String()), Options{})
	is.Equal(r.Diagnostics[0].Code, CodeTooLarge)

	is.Equal(len(r.Diagnostics), 1) // the first MaxSteps steps are fine
	is.Equal(r.Diagnostics[0].Range.Start.Line, 4+MaxSteps)
}

// TestBounds checks each limit on both sides.
func TestBounds(t *testing.T) {
	is := is.New(t)
	codes := func(r Result) string {
		var out []string
		for _, d := range r.Diagnostics {
			out = append(out, d.Code)
		}
		return strings.Join(out, ",")
	}

	atLimit := make([]byte, MaxSourceBytes)
	for i := range atLimit {
		atLimit[i] = '#'
	}
	is.Equal(codes(Compile(atLimit, Options{})), CodeEmpty) // read, and found empty
	is.Equal(codes(Compile(append(atLimit, '#'), Options{})), CodeTooLarge)

	// The root mapping is level 1, so k nested lists reach level k+1.
	nest := func(k int) []byte {
		return []byte("kind: workflow\nid: t/d\nsteps: [{id: a, wait: 1s}]\nresult: " + strings.Repeat("[", k) + strings.Repeat("]", k) + "\n")
	}
	is.Equal(codes(Compile(nest(MaxNestingDepth-1), Options{})), "")
	is.Equal(codes(Compile(nest(MaxNestingDepth), Options{})), CodeTooDeep)

	expr := func(n int) []byte {
		return []byte("kind: workflow\nid: t/e\nvars: {s: {type: string}}\nsteps:\n  - id: a\n    set: {s: \"='" + strings.Repeat("a", n-2) + "'\"}\n")
	}
	is.Equal(codes(Compile(expr(MaxExpressionLength), Options{})), "")
	is.Equal(codes(Compile(expr(MaxExpressionLength+1), Options{})), CodeExprSyntax)

	dur := func(s string) []byte { return []byte(wf("  - id: a\n    wait: " + s + "\n")) }
	is.Equal(codes(Compile(dur("3650d"), Options{})), "")
	is.Equal(codes(Compile(dur("3651d"), Options{})), CodeDuration)

	id := func(n int) []byte { return []byte(wf("  - id: " + strings.Repeat("a", n) + "\n    wait: 1s\n")) }
	is.Equal(codes(Compile(id(64), Options{})), "")
	is.Equal(codes(Compile(id(65), Options{})), CodeInvalidID)

	conc := func(n string) []byte {
		return []byte(wf("  - id: a\n    forEach: [1]\n    concurrency: " + n + "\n    steps: [{id: b, wait: 1s}]\n"))
	}
	is.Equal(codes(Compile(conc("1000"), Options{})), "")
	is.Equal(codes(Compile(conc("1001"), Options{})), CodeInvalidValue)
	is.Equal(codes(Compile(conc("1"), Options{})), "")
	is.Equal(codes(Compile(conc("0"), Options{})), CodeInvalidValue)
}

func TestDiagnosticsAreCapped(t *testing.T) {
	is := is.New(t)
	var b strings.Builder
	b.WriteString("kind: workflow\nid: t/many\nsteps:\n")
	for i := 0; i < MaxDiagnostics+10; i++ {
		b.WriteString("  - {id: s" + itoa(i) + ", wait: 1s, bogus: 1}\n")
	}
	r := Compile([]byte(b.String()), Options{})
	is.Equal(len(r.Diagnostics), MaxDiagnostics+1)
	last := r.Diagnostics[MaxDiagnostics]
	is.Equal(last.Code, CodeTooLarge)
	is.Equal(last.Severity, SeverityInfo)
	is.Equal(last.Message, "10 more diagnostics are not shown")
	is.True(!r.OK)
	v := Validate([]byte(b.String()), Options{})
	is.True(!v.ValidationOK)
}

func TestParseDuration(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string]int64{
		"250ms": 250, "30s": 30000, "5m": 300000, "1h30m": 5400000, "2d": 172800000,
		"PT30S": 30000, "PT1H30M": 5400000, "P1DT12H": 129600000, "P2W": 1209600000, "PT0.5S": 500,
		"3650d": MaxDurationMs, "0s": 0,
	} {
		got, err := ParseDuration(in)
		is.NoErr(err)
		is.Equal(got, want)
	}
	for _, bad := range []string{"", "10", "1x", "1s1s", "P", "PT", "P1Y", "P1M", "3651d", "-1s", "1.5s", "99999999999999999999d", "PT1.2345S"} {
		_, err := ParseDuration(bad)
		is.True(err != nil)
	}
}

func TestDocumentKinds(t *testing.T) {
	lock := referenceLock(t)
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"action without binding", "kind: action\nid: a/b\nsideEffect: unsafe\n", []string{"LANG-MISSING-KEY@1:1"}},
		{"action with both bindings", "kind: action\nid: a/b\nsideEffect: unsafe\nworker: billing\nconnector: http\nconfig: {method: GET, url: x}\n", []string{"LANG-INVALID-VALUE@4:1"}},
		{"action missing side effect", "kind: action\nid: a/b\nworker: billing\n", []string{"LANG-MISSING-KEY@1:1"}},
		{"action unknown side effect", "kind: action\nid: a/b\nsideEffect: maybe\nworker: billing\n", []string{"LANG-INVALID-VALUE@3:13"}},
		{"http config missing url", "kind: action\nid: a/b\nsideEffect: read_only\nconnector: http\nconfig: {method: GET}\n", []string{"LANG-SCHEMA-MISMATCH@5:9"}},
		{"http config bad method", "kind: action\nid: a/b\nsideEffect: read_only\nconnector: http\nconfig: {method: FETCH, url: =input.u}\ninput: {type: object, properties: {u: {type: string}}}\n", []string{"LANG-SCHEMA-MISMATCH@5:18"}},
		{"http config expression type", "kind: action\nid: a/b\nsideEffect: read_only\nconnector: http\nconfig: {method: GET, url: =input.n}\ninput: {type: object, properties: {n: {type: integer}}}\n", []string{"LANG-EXPR-TYPE@5:28"}},
		{"unknown adapter", "kind: action\nid: a/b\nsideEffect: read_only\nconnector: ftp\n", []string{"LANG-REF-UNKNOWN@4:12"}},
		{"unknown task queue", "kind: action\nid: a/b\nsideEffect: read_only\nworker: nobody\n", []string{"LANG-REF-UNKNOWN@4:9"}},
		{"unknown operation", "kind: action\nid: a/b\nsideEffect: read_only\nconnector: acme/mailer@1\noperation: fax\n", []string{"LANG-REF-UNKNOWN@5:12"}},
		{"operation without manifest", "kind: action\nid: a/b\nsideEffect: read_only\nconnector: http\noperation: x\nconfig: {method: GET, url: x}\n", []string{"LANG-INVALID-VALUE@5:1"}},
		{"connector duplicate action", "kind: connector\nid: a/c\nadapter: smtp\nactions:\n  - {name: send, sideEffect: unsafe}\n  - {name: send, sideEffect: unsafe}\n", []string{"LANG-DUPLICATE-ID@6:12"}},
		{"connector unmarked secret", "kind: connector\nid: a/c\nadapter: smtp\nconnection: {type: object, properties: {apiToken: {type: string}}}\nactions: [{name: send, sideEffect: unsafe}]\n", []string{"LANG-SECRET-UNMARKED@4:41"}},
		{"decision table bad rule", "kind: decisionTable\nid: a/t\ninputs: [{name: n, type: number}]\noutputs: [{name: r, type: string}]\nrules:\n  - when: ['> 1']\n    then: [7]\n", []string{"LANG-DECISION-TABLE@7:12"}},
		{"decision table missing rules", "kind: decisionTable\nid: a/t\ninputs: []\noutputs: []\n", []string{"LANG-MISSING-KEY@1:1"}},
		{"decision table unknown key", "kind: decisionTable\nid: a/t\nhitpolicy: FIRST\ninputs: [{name: n, type: number}]\noutputs: [{name: r}]\nrules: [{when: ['-'], then: [1]}]\n", []string{"LANG-UNKNOWN-KEY@3:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := Compile([]byte(tc.src), Options{Catalog: lock})
			got := strings.Join(codesAt(r.Diagnostics), " ")
			if got != strings.Join(tc.want, " ") {
				for _, d := range r.Diagnostics {
					t.Log(d)
				}
			}
			is.Equal(got, strings.Join(tc.want, " "))
		})
	}
}

func TestActionArtifact(t *testing.T) {
	is := is.New(t)
	src := []byte(`kind: action
id: acme/get
version: 2
sideEffect: unsafe
timeout: 10s
retry: {maxAttempts: 2}
connector: http
config: {method: GET, url: =input.url}
input: {type: object, properties: {url: {type: string}, key: {type: string, writeOnly: true}}}
`)
	r := Compile(src, Options{Catalog: referenceLock(t)})
	is.Equal(len(r.Diagnostics), 1)
	is.Equal(r.Diagnostics[0].Code, CodeRetryUnsafe)
	art := artifactOf(t, r)
	is.Equal(art["format"], ActionFormat)
	is.Equal(art["sideEffect"], "unsafe")
	is.Equal(art["retrySafe"], false)
	is.Equal(art["timeoutMs"], 10000.0)
	is.Equal(art["retry"].(map[string]any)["maxAttempts"], 2.0)
	is.Equal(art["secrets"].(map[string]any)["input"], []any{"/key"})
	b := art["binding"].(map[string]any)
	is.Equal(b["type"], "adapter")
	is.Equal(b["adapter"], "http")
	is.Equal(b["config"].(map[string]any)["object"].(map[string]any)["url"], map[string]any{"expr": "input.url"})
}

func TestDecisionTableArtifact(t *testing.T) {
	is := is.New(t)
	src := []byte(`kind: decisionTable
id: acme/discount
title: Discount
hitPolicy: COLLECT
aggregation: SUM
inputs: [{name: customer.tier, type: string}]
outputs: [{name: pct, type: number}]
rules:
  - when: ['"gold"']
    then: [10]
`)
	r := Compile(src, Options{})
	is.True(r.OK)
	art := artifactOf(t, r)
	is.Equal(art["output"], map[string]any{"type": "number"})
	in := art["input"].(map[string]any)["properties"].(map[string]any)
	is.Equal(in["customer"].(map[string]any)["properties"].(map[string]any)["tier"], map[string]any{"type": "string"})
	is.Equal(art["table"].(map[string]any)["hitPolicy"], "COLLECT")
}

// TestPathologicalSchemas: recursive and widely shared $refs must neither
// hang nor blow up (type derivation, secret pointers and assignability are
// linear in the schema, not in the number of paths it describes).
func TestPathologicalSchemas(t *testing.T) {
	is := is.New(t)
	var b strings.Builder
	b.WriteString("kind: workflow\nid: t/rec\ninput:\n  $ref: '#/$defs/d0'\n  $defs:\n")
	for i := 0; i < 16; i++ {
		b.WriteString("    d" + itoa(i) + ":\n      type: object\n      properties:\n")
		for j := 0; j < 8; j++ {
			switch {
			case i == 15:
				b.WriteString("        p" + itoa(j) + ": {type: string, x-secret: true}\n")
			case j == 0:
				b.WriteString("        p0: {$ref: '#/$defs/d0'}\n") // recursion
			default:
				b.WriteString("        p" + itoa(j) + ": {$ref: '#/$defs/d" + itoa(i+1) + "'}\n")
			}
		}
	}
	b.WriteString("vars:\n  copy: {$ref: '#/$defs/d0', $defs: {d0: {type: object, properties: {p1: {type: object}}}}}\n")
	b.WriteString("steps:\n  - {id: a, set: {copy: =input}}\n")
	start := time.Now()
	r := Compile([]byte(b.String()), Options{})
	is.True(time.Since(start) < 5*time.Second)
	is.True(r.OK)
	secrets := artifactOf(t, r)["secrets"].(map[string]any)["input"].([]any)
	is.True(len(secrets) > 0)
}

// TestNoGoroutineLeak: the expression workers are gone when Compile returns.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		Compile(genWorkflow(20), Options{})
		Compile([]byte("kind: workflow\nid: a\nsteps: [{id: a, set: {x: =1}}]\n"), Options{})
	}
	// 10 s: a leak never winds down, while a loaded -race run may take a
	// while to schedule the exiting workers.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after compiling, %d before", n, before)
	}
}
