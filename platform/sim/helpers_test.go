package sim

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/lang"
)

// testDefs are the actions the simulator tests reference.
var testDefs = []struct{ id, src string }{
	{"acme/lookup", `kind: action
id: acme/lookup
version: 1
sideEffect: read_only
input:
  type: object
  required: [id]
  properties:
    id: {type: string}
output:
  type: object
  required: [name]
  properties:
    name: {type: string}
    token: {type: string, x-secret: true}
worker: crm
`},
	{"acme/charge", `kind: action
id: acme/charge
version: 1
sideEffect: unsafe
input: {type: object}
output:
  type: object
  properties:
    ok: {type: boolean}
worker: billing
`},
}

// testEnv compiles the definitions once into a catalog lock.
func testEnv(tb testing.TB) (*lang.CatalogLock, [][]byte) {
	tb.Helper()
	base := &lang.CatalogLock{Tasks: []lang.CatalogTask{{Queue: "crm"}, {Queue: "billing"}}}
	lock := &lang.CatalogLock{Tasks: base.Tasks, Definitions: []lang.CatalogEntry{}, Adapters: []lang.CatalogAdapter{}, Schemas: []lang.CatalogSchema{}}
	var defs [][]byte
	for i, d := range testDefs {
		r := lang.Compile([]byte(d.src), lang.Options{Filename: d.id, Catalog: base})
		if !r.OK {
			tb.Fatalf("%s does not compile: %v", d.id, r.Diagnostics)
		}
		var f struct {
			Input, Output json.RawMessage
			SideEffect    string `json:"sideEffect"`
		}
		_ = json.Unmarshal(r.Artifact, &f)
		defs = append(defs, r.Artifact)
		lock.Definitions = append(lock.Definitions, lang.CatalogEntry{Kind: "action", ID: d.id, Version: 1,
			PublishedVersionID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1), Digest: r.Digest,
			InputSchema: f.Input, OutputSchema: f.Output, SideEffect: f.SideEffect})
	}
	return lock, defs
}

func compileWorkflow(tb testing.TB, src string) (*Program, []byte) {
	tb.Helper()
	lock, defs := testEnv(tb)
	r := lang.Compile([]byte(src), lang.Options{Filename: "wf.yaml", Catalog: lock})
	if !r.OK {
		tb.Fatalf("workflow does not compile: %v", r.Diagnostics)
	}
	p, err := LoadProgram(r.Artifact, lock, defs)
	if err != nil {
		tb.Fatal(err)
	}
	return p, r.Artifact
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newSession(tb testing.TB, p *Program, input, mocks string) *Session {
	tb.Helper()
	ms, err := DecodeMocks(json.RawMessage(mocks), "/mocks")
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.checkMocks(ms, "/mocks", false); err != nil {
		tb.Fatal(err)
	}
	s := &Session{ID: "00000000-0000-4000-8000-00000000aaaa", Creator: "me", Mocks: ms, Input: json.RawMessage(input), Start: t0}
	if err := Begin(p, s); err != nil {
		tb.Fatal(err)
	}
	return s
}

func run(tb testing.TB, p *Program, s *Session, c string) {
	tb.Helper()
	if err := try(p, s, c); err != nil {
		tb.Fatalf("%s: %v", c, err)
	}
}

func try(p *Program, s *Session, c string) error {
	var cmd Command
	if err := json.Unmarshal([]byte(c), &cmd); err != nil {
		return err
	}
	return Apply(p, s, cmd, DefaultLimits())
}

const flowSrc = `kind: workflow
id: acme/sim-flow
version: 1
input:
  type: object
  required: [id]
  properties:
    id: {type: string}
    apiKey: {type: string, x-secret: true}
output:
  type: object
  properties:
    name: {type: string}
    approver: {type: string}
vars:
  count: {type: integer, default: 0}
steps:
  - id: lookup
    action: acme/lookup@1
    with:
      id: =input.id
    retry:
      maxAttempts: 3
      initialInterval: 1s
  - id: bump
    set:
      count: =vars.count + 1
  - id: approval
    signal: order.approved
    schema:
      type: object
      required: [approver]
      properties:
        approver: {type: string}
    deadline: 1h
  - id: done
    succeed:
      result:
        name: =steps.lookup.output.name
        approver: =steps.approval.output.approver
`
