package lang

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func entry(kind, id string, version int, pv string) CatalogEntry {
	e := CatalogEntry{Kind: kind, ID: id, Version: version, PublishedVersionID: pv,
		Digest: "sha256:" + strings.Repeat("ab", 32)}
	if kind == KindAction {
		e.SideEffect = SideEffectIdempotent
	}
	return e
}

func TestParseCatalogLockRejects(t *testing.T) {
	good := `{"kind":"action","id":"a/b","version":1,"published_version_id":"p","digest":"sha256:` + strings.Repeat("0", 64) + `","side_effect":"unsafe"}`
	for name, body := range map[string]string{
		"unknown field":      `{"definitions":[],"extra":1}`,
		"trailing data":      `{"definitions":[]} {}`,
		"bad kind":           `{"definitions":[` + strings.Replace(good, `"action"`, `"job"`, 1) + `]}`,
		"bad id":             `{"definitions":[` + strings.Replace(good, `"a/b"`, `"A B"`, 1) + `]}`,
		"zero version":       `{"definitions":[` + strings.Replace(good, `"version":1`, `"version":0`, 1) + `]}`,
		"bad digest":         `{"definitions":[` + strings.Replace(good, `sha256:`, `md5:`, 1) + `]}`,
		"missing pv id":      `{"definitions":[` + strings.Replace(good, `"published_version_id":"p"`, `"published_version_id":""`, 1) + `]}`,
		"action side effect": `{"definitions":[` + strings.Replace(good, `"unsafe"`, `"sometimes"`, 1) + `]}`,
		"duplicate":          `{"definitions":[` + good + `,` + good + `]}`,
		"schema not object":  `{"definitions":[` + strings.Replace(good, `"side_effect"`, `"input_schema":[1],"side_effect"`, 1) + `]}`,
		"bad shared schema":  `{"definitions":[],"schemas":[{"id":"x","schema":5}]}`,
		"bad queue":          `{"definitions":[],"tasks":[{"queue":"has space"}]}`,
		"not json":           `definitions:`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCatalogLock([]byte(body))
			is.New(t).True(err != nil)
		})
	}
}

func TestCatalogCanonicalForm(t *testing.T) {
	is := is.New(t)
	a := &CatalogLock{Definitions: []CatalogEntry{entry(KindAction, "z/z", 1, "p1"), entry(KindAction, "a/a", 2, "p2"), entry(KindAction, "a/a", 1, "p3")},
		Tasks: []CatalogTask{{Queue: "q2"}, {Queue: "q1"}}}
	b := &CatalogLock{Definitions: []CatalogEntry{entry(KindAction, "a/a", 1, "p3"), entry(KindAction, "z/z", 1, "p1"), entry(KindAction, "a/a", 2, "p2")},
		Tasks: []CatalogTask{{Queue: "q1"}, {Queue: "q2"}}}
	ca, err := a.Canonical()
	is.NoErr(err)
	cb, err := b.Canonical()
	is.NoErr(err)
	is.True(bytes.Equal(ca, cb)) // entry order does not matter
	da, _ := a.Digest()
	db, _ := b.Digest()
	is.Equal(da, db)
	is.True(strings.HasPrefix(string(ca), `{"adapters":[],"definitions":[{"digest":`))
	// The canonical form parses back to the same lock.
	back, err := ParseCatalogLock(ca)
	is.NoErr(err)
	cc, _ := back.Canonical()
	is.True(bytes.Equal(ca, cc))
}

func TestCatalogResolution(t *testing.T) {
	schema := func(s string) json.RawMessage { return json.RawMessage(s) }
	send := entry(KindAction, "acme/send", 1, "pv-send-1")
	send.InputSchema = schema(`{"type":"object","required":["to"],"properties":{"to":{"type":"string"},"token":{"$ref":"catalog:schemas/acme/secret"}}}`)
	send.OutputSchema = schema(`{"type":"object","properties":{"id":{"type":"integer"}}}`)
	send2 := entry(KindAction, "acme/send", 2, "pv-send-2")
	dupA := entry(KindAction, "acme/dup", 1, "pv-a")
	dupB := entry(KindAction, "acme/dup", 1, "pv-b")
	brokenSchema := entry(KindAction, "acme/broken", 1, "pv-broken")
	brokenSchema.InputSchema = schema(`{"type":"nope"}`)
	sub := entry(KindWorkflow, "acme/sub", 1, "pv-sub")
	lock := &CatalogLock{
		Definitions: []CatalogEntry{send, send2, dupA, dupB, brokenSchema, sub,
			entry(KindAction, "x/ping", 1, "pv-x"), entry(KindAction, "y/ping", 1, "pv-y")},
		Schemas: []CatalogSchema{{ID: "acme/secret", Schema: schema(`{"type":"string","x-secret":true}`)}},
	}
	cases := []struct {
		name, steps string
		want        []string
		pv          string // published version the first step resolves to
	}{
		{"exact", "  - id: a\n    action: acme/send@2\n", nil, "pv-send-2"},
		{"short name", "  - id: a\n    action: send@1\n    with: {to: x}\n", nil, "pv-send-1"},
		{"short name ambiguous", "  - id: a\n    action: ping@1\n", []string{"LANG-REF-AMBIGUOUS@5:13"}, ""},
		{"duplicate entries", "  - id: a\n    action: acme/dup@1\n", []string{"LANG-REF-AMBIGUOUS@5:13"}, ""},
		{"version", "  - id: a\n    action: acme/send@3\n", []string{"LANG-REF-VERSION@5:13"}, ""},
		{"kind", "  - id: a\n    action: acme/sub@1\n", []string{"LANG-REF-KIND@5:13"}, ""},
		{"unknown", "  - id: a\n    workflow: acme/nothing@1\n", []string{"LANG-REF-UNKNOWN@5:15"}, ""},
		{"broken catalog schema", "  - id: a\n    action: acme/broken@1\n", []string{"LANG-SCHEMA@5:13"}, "pv-broken"},
		{"shared schema secret", "  - id: a\n    action: acme/send@1\n    with: {to: x, token: abc}\n", []string{"LANG-SECRET-LITERAL@6:26"}, "pv-send-1"},
		{"output type", "  - id: a\n    action: acme/send@1\n    with: {to: x}\n  - id: b\n    switch:\n      - when: =steps.a.output.id == 'x'\n        next: end\n", []string{"LANG-EXPR-TYPE@9:34"}, "pv-send-1"},
		{"agent tool", "  - id: a\n    agent: {provider: claude, prompt: hi, tools: [acme/send@9]}\n", []string{"LANG-REF-VERSION@5:51"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := Compile([]byte(wf(tc.steps)), Options{Catalog: lock})
			got := strings.Join(codesAt(r.Diagnostics), " ")
			if got != strings.Join(tc.want, " ") {
				for _, d := range r.Diagnostics {
					t.Log(d)
				}
			}
			is.Equal(got, strings.Join(tc.want, " "))
			refs := artifactOf(t, r)["references"].(map[string]any)
			for _, v := range refs {
				ref := v.(map[string]any)
				if tc.pv == "" {
					is.Equal(ref["resolved"], false)
				} else {
					is.Equal(ref["publishedVersionId"], tc.pv)
				}
			}
		})
	}
}
