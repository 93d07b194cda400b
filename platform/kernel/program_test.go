package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentbridge/bridge/platform/lang"
	"github.com/matryer/is"
)

const decisionWF = `kind: workflow
id: t/load
version: 3
input:
  type: object
  properties:
    key: {type: string, x-secret: true}
steps:
  - id: fee
    decision: t/fee@1
    with: {weight: 1}
  - id: get
    action: t/fetch@1
  - id: sig
    signal: go.now
`

func TestLoad(t *testing.T) {
	is := is.New(t)
	env := catalogEnv(t)
	art := compile(t, decisionWF)
	p, err := Load(art, WithCatalog(env.lock), WithDefinitions(env.defs...))
	is.NoErr(err)
	is.Equal(p.ID(), "t/load")
	is.Equal(p.Version(), 3)
	r := lang.Compile([]byte(decisionWF), lang.Options{Filename: "x", Catalog: env.lock})
	is.Equal(p.Digest(), r.Digest) // the digest of the artifact bytes
	in, out := p.SecretPointers()
	is.Equal(in, []string{"/key"})
	is.Equal(len(out), 0)
	is.Equal(p.Signals(), []string{"go.now"})
}

func TestLoadRefusals(t *testing.T) {
	env := catalogEnv(t)
	art := compile(t, decisionWF)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(art, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	otherLock := *env.lock
	otherLock.Definitions = append([]lang.CatalogEntry(nil), env.lock.Definitions...)
	for i := range otherLock.Definitions {
		otherLock.Definitions[i].Digest = "sha256:" + strings.Repeat("0", 64)
	}
	partial := lang.Compile([]byte(decisionWF), lang.Options{Filename: "x"})
	for _, tc := range []struct {
		name     string
		artifact []byte
		opts     []Option
		want     string
	}{
		{"not JSON", []byte(`{`), nil, "decode"},
		{"partial", partial.Artifact, nil, "partial"},
		{"an action artifact", env.defs[0], nil, "format"},
		{"no catalog", art, nil, "WithCatalog"},
		{"catalog pins other versions", art, []Option{WithCatalog(&otherLock), WithDefinitions(env.defs...)}, "differently"},
		{"no decision table artifact", art, []Option{WithCatalog(env.lock)}, "WithDefinitions"},
		{"partial definition", art, []Option{WithCatalog(env.lock), WithDefinitions(partial.Artifact)}, "partial"},
		{"other cost limit", edit(func(m map[string]any) { m["expressions"].(map[string]any)["costLimit"] = 5 }), []Option{WithCatalog(env.lock), WithDefinitions(env.defs...)}, "cost limit"},
		{"unknown step kind", edit(func(m map[string]any) { m["nodes"].([]any)[0].(map[string]any)["kind"] = "teleport" }), []Option{WithCatalog(env.lock), WithDefinitions(env.defs...)}, "teleport"},
		{"dangling transition", edit(func(m map[string]any) { m["nodes"].([]any)[0].(map[string]any)["next"] = "nowhere" }), []Option{WithCatalog(env.lock), WithDefinitions(env.defs...)}, "nowhere"},
		{"unknown entry", edit(func(m map[string]any) { m["entry"] = "nowhere" }), []Option{WithCatalog(env.lock), WithDefinitions(env.defs...)}, "entry"},
		{"bad template", edit(func(m map[string]any) { m["nodes"].([]any)[0].(map[string]any)["with"] = map[string]any{"magic": 1} }), []Option{WithCatalog(env.lock), WithDefinitions(env.defs...)}, "template"},
		{"bad expression", edit(func(m map[string]any) {
			m["nodes"].([]any)[0].(map[string]any)["with"] = map[string]any{"expr": "1 +"}
		}), []Option{WithCatalog(env.lock), WithDefinitions(env.defs...)}, "expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			_, err := Load(tc.artifact, tc.opts...)
			is.True(errors.Is(err, ErrInvalidArtifact))
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestLoadWithoutActionDefinitions(t *testing.T) {
	is := is.New(t)
	env := catalogEnv(t)
	p, err := Load(compile(t, fetchWF), WithCatalog(env.lock))
	is.NoErr(err)
	d := newDriver(t, p)
	eff := d.start(`{}`)
	spec := effectsOf(eff, EffectStartTask)[0].Task
	// The engine resolves the binding through the published version.
	is.Equal(spec.Executor, ExecutorAction)
	is.Equal(spec.PublishedVersionID, "00000000-0000-4000-8000-000000000001")
	is.Equal(len(spec.Binding), 0)
}

func TestLoadWorkflowWithoutReferences(t *testing.T) {
	is := is.New(t)
	r := lang.Compile([]byte(`kind: workflow
id: t/plain
steps:
  - id: w
    wait: 1s
`), lang.Options{})
	is.True(r.OK)
	p, err := Load(r.Artifact) // no catalog needed
	is.NoErr(err)
	d := newDriver(t, p)
	d.start("")
	is.Equal(string(d.s.Input), `{}`)
	d.fireNext()
	is.Equal(d.s.Status, StatusSucceeded)
	is.True(bytes.Equal(d.s.Output, nullJSON))
}

// TestLoadRefusesDecisionOutputMismatch: a lock whose output schema for a
// decision table is not the table's own would let expressions typed
// against it fail at run time; Load refuses it.
func TestLoadRefusesDecisionOutputMismatch(t *testing.T) {
	is := is.New(t)
	env := catalogEnv(t)
	lock := *env.lock
	lock.Definitions = append([]lang.CatalogEntry(nil), env.lock.Definitions...)
	for i := range lock.Definitions {
		if lock.Definitions[i].ID == "t/fee" {
			lock.Definitions[i].OutputSchema = json.RawMessage(`{"type":"object","properties":{"fee":{"type":"number"}}}`)
		}
	}
	src := `kind: workflow
id: t/mismatch
steps:
  - id: fee
    decision: t/fee@1
    with: {weight: 1}
result: {fee: =steps.fee.output.fee}
`
	r := lang.Compile([]byte(src), lang.Options{Catalog: &lock})
	is.True(r.OK) // the compiler trusts the lock
	_, err := Load(r.Artifact, WithCatalog(&lock), WithDefinitions(env.defs...))
	is.True(errors.Is(err, ErrInvalidArtifact))
	is.True(strings.Contains(err.Error(), "output schema"))
}
