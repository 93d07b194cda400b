package lang

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
)

// FuzzCompile feeds arbitrary sources to the compiler. No input may panic
// (a recovered panic surfaces as LANG-INTERNAL), hang, or break the result's
// invariants, and compiling twice must give the same bytes.
func FuzzCompile(f *testing.F) {
	var lock *CatalogLock
	for _, fc := range readFences(f) {
		switch {
		case fc.Info == "json catalog":
			l, err := ParseCatalogLock([]byte(fc.Body))
			if err != nil {
				f.Fatal(err)
			}
			lock = l
		case strings.HasPrefix(fc.Info, "yaml"):
			f.Add([]byte(fc.Body), true, false)
		}
	}
	for _, seed := range []string{
		"", "kind: workflow", "kind: workflow\nid: a/b\nsteps: [{id: a, wait: 1s}]\n",
		wf("  - id: a\n    set: {x: '=1 + '}\n"),
		wf("  - id: a\n    switch: [{when: '=a ? b : c', next: a}]\n"),
		wf("  - id: a\n    forEach: =[1,2]\n    steps: [{id: b, forEach: [1], as: x, steps: [{id: c, wait: 1s}]}]\n"),
		"kind: decisionTable\nid: t\ninputs: [{name: a, type: number}]\noutputs: [{name: b}]\nrules: [{when: ['[1..2]'], then: [1]}]\n",
		"kind: action\nid: a\nsideEffect: unsafe\nconnector: http\nconfig: {method: GET, url: =input}\n",
		"kind: connector\nid: c\nadapter: x\nactions: [{name: a, sideEffect: unsafe}]\n",
		"a: &x [*x]\n", "{[a]: b}\n", "{}", "kind: workflow\nid: a\nsteps: [{}]\n", "kind: !!binary YQ==\n", "kind: workflow\n---\nkind: action\n",
		string(genWorkflow(12)),
	} {
		f.Add([]byte(seed), false, false)
		f.Add([]byte(seed), true, true)
	}
	f.Fuzz(func(t *testing.T, src []byte, withCatalog, strict bool) {
		opts := Options{Filename: "fuzz.yaml", Strict: strict}
		if withCatalog {
			opts.Catalog = lock
		}
		timed := func(fn func()) {
			start := time.Now()
			fn()
			// 10 s: a pathological input hangs or explodes far past it, while
			// the seeds compile in milliseconds even on a loaded -race run.
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("compile took %v", d)
			}
		}
		var r, again Result
		timed(func() { r = Compile(src, opts) })
		checkInvariants(t, r)
		first, err := r.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		timed(func() { again = Compile(src, opts) })
		second, _ := again.Encode()
		if !bytes.Equal(first, second) {
			t.Fatalf("two compilations differ:\n%s\n%s", first, second)
		}
		var v ValidationResult
		timed(func() { v = Validate(src, opts) })
		checkInvariants(t, v.Result)
	})
}

func checkInvariants(t *testing.T, r Result) {
	t.Helper()
	hasErr := false
	for _, d := range r.Diagnostics {
		if d.Code == CodeInternal {
			t.Fatalf("internal error: %s", d)
		}
		hasErr = hasErr || d.Severity == SeverityError
		if d.Range != (Range{}) && (d.Range.Start.Line < 1 || d.Range.Start.Column < 1) {
			t.Fatalf("diagnostic without a valid position: %+v", d)
		}
	}
	if r.OK && (hasErr || r.Partial) {
		t.Fatalf("OK with errors or a partial artifact")
	}
	if len(r.Diagnostics) > MaxDiagnostics+1 {
		t.Fatalf("%d diagnostics", len(r.Diagnostics))
	}
	if hasErr && !r.Partial {
		t.Fatalf("errors but not partial")
	}
	if (string(r.Artifact) == "null") != (r.Digest == "") {
		t.Fatalf("artifact %q and digest %q disagree", r.Artifact, r.Digest)
	}
	if r.Digest != "" {
		c, err := CanonicalJSON(r.Artifact)
		if err != nil || !bytes.Equal(c, r.Artifact) {
			t.Fatalf("artifact is not canonical JSON: %v", err)
		}
		if !json.Valid(r.Artifact) {
			t.Fatal("artifact is not JSON")
		}
	}
	if !sort.SliceIsSorted(r.Diagnostics, func(i, j int) bool {
		a, b := r.Diagnostics[i], r.Diagnostics[j]
		if a.Range != b.Range {
			return a.Range.before(b.Range)
		}
		return a.Code < b.Code
	}) {
		t.Fatal("diagnostics are not sorted")
	}
}

// FuzzParseDuration checks that durations never panic and stay in range.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1s", "1h30m", "PT0.5S", "P1DT2H", "3650d", "99999999999999999999s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseDuration(s)
		if err == nil && (ms < 0 || ms > MaxDurationMs) {
			t.Fatalf("%q parsed to %d", s, ms)
		}
	})
}

// FuzzParseCatalogLock: any body either is refused or yields a lock whose
// canonical form parses back to itself and can be compiled against.
func FuzzParseCatalogLock(f *testing.F) {
	for _, fc := range readFences(f) {
		if fc.Info == "json catalog" {
			f.Add([]byte(fc.Body))
		}
	}
	f.Add([]byte(`{"definitions":[]}`))
	f.Add([]byte(`{"definitions":[{"kind":"action","id":"a","version":1,"published_version_id":"p","digest":"sha256:` + strings.Repeat("0", 64) + `","side_effect":"unsafe","input_schema":{"$ref":"catalog:schemas/s"}}],"schemas":[{"id":"s","schema":{"$ref":"catalog:schemas/s"}}]}`))
	src := []byte(wf("  - id: a\n    action: a@1\n    with: {x: 1}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		lock, err := ParseCatalogLock(body)
		if err != nil {
			return
		}
		canon, err := lock.Canonical()
		if err != nil {
			t.Fatalf("canonical: %v", err)
		}
		back, err := ParseCatalogLock(canon)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v", err)
		}
		again, _ := back.Canonical()
		if !bytes.Equal(canon, again) {
			t.Fatal("canonical form is not stable")
		}
		checkInvariants(t, Compile(src, Options{Catalog: lock}))
	})
}

// TestEmptyStructures pins inputs the fuzzer found or could find: empty
// mappings and lists everywhere a structure is expected.
func TestEmptyStructures(t *testing.T) {
	lock := referenceLock(t)
	for _, src := range []string{
		"{}", "[]", "kind: workflow\nid: a\nsteps: [{}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, decision: {}}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, human: {}}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, agent: {}}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, parallel: [{}]}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, parallel: []}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, switch: [{}]}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, switch: []}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, fail: {}}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, succeed: {}}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, forEach: {}, steps: []}]\n",
		"kind: workflow\nid: a\nsteps: [{id: a, forEach: [], steps: [{}]}]\n",
		"kind: workflow\nid: a\nvars: {}\nsteps: [{id: a, set: {}}]\n",
		"kind: workflow\nid: a\ninput: {}\noutput: {}\nresult: {}\nsteps: [{id: a, action: acme/send-email@1, with: {}, retry: {}}]\n",
		"kind: action\nid: a\nsideEffect: unsafe\nconnector: http\nconfig: {}\n",
		"kind: action\nid: a\nsideEffect: unsafe\nconnector: acme/mailer@1\noperation: sendMail\nconfig: {}\n",
		"kind: connector\nid: a\nadapter: x\nactions: [{}]\n",
		"kind: connector\nid: a\nadapter: x\nactions: []\n",
		"kind: decisionTable\nid: a\n",
		"kind: decisionTable\nid: a\ninputs: []\noutputs: []\nrules: []\n",
	} {
		for _, withLock := range []bool{false, true} {
			opts := Options{}
			if withLock {
				opts.Catalog = lock
			}
			checkInvariants(t, Compile([]byte(src), opts))
		}
	}
}
