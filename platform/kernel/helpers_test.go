package kernel

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/lang"
)

// The test catalog: actions of every side-effect class and binding, a child
// workflow and a decision table, compiled from source so that the lock pins
// their real digests.

type testDef struct {
	kind, id   string
	src        string
	sideEffect string
	timeoutMs  int64
	deadlineMs int64
	retry      *lang.CatalogRetryPolicy
	in, out    string
}

var testDefs = []testDef{
	{kind: "action", id: "t/fetch", sideEffect: "read_only", timeoutMs: 10000,
		retry: &lang.CatalogRetryPolicy{MaxAttempts: 3, InitialIntervalMs: 1000, BackoffCoefficient: 2, MaxIntervalMs: 3000},
		in:    `{"type":"object","properties":{"id":{"type":"string"}}}`,
		out:   `{"type":"object","properties":{"count":{"type":"integer"},"name":{"type":"string"},"score":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}}}}`,
		src: `kind: action
id: t/fetch
sideEffect: read_only
timeout: 10s
retry: {maxAttempts: 3, initialInterval: 1s, backoffCoefficient: 2, maxInterval: 3s}
input:
  type: object
  properties:
    id: {type: string}
output:
  type: object
  properties:
    count: {type: integer}
    name: {type: string}
    score: {type: number}
    tags: {type: array, items: {type: string}}
connector: http
config:
  method: GET
  url: ="https://example.com/items/" + input.id
`},
	{kind: "action", id: "t/idem", sideEffect: "idempotent", timeoutMs: 5000,
		in:  `{"type":"object"}`,
		out: `{"type":"object","properties":{"ok":{"type":"boolean"}}}`,
		src: `kind: action
id: t/idem
sideEffect: idempotent
timeout: 5s
input: {type: object}
output:
  type: object
  properties:
    ok: {type: boolean}
worker: q
`},
	{kind: "action", id: "t/keyed", sideEffect: "idempotency_key", timeoutMs: 5000,
		in:  `{"type":"object"}`,
		out: `{"type":"object","properties":{"id":{"type":"string"}}}`,
		src: `kind: action
id: t/keyed
sideEffect: idempotency_key
timeout: 5s
input: {type: object}
output:
  type: object
  properties:
    id: {type: string}
worker: q
`},
	{kind: "action", id: "t/charge", sideEffect: "unsafe", timeoutMs: 5000,
		in:  `{"type":"object"}`,
		out: `{"type":"object","required":["chargeId"],"properties":{"chargeId":{"type":"string"}}}`,
		src: `kind: action
id: t/charge
sideEffect: unsafe
timeout: 5s
input: {type: object}
output:
  type: object
  required: [chargeId]
  properties:
    chargeId: {type: string}
worker: q
`},
	{kind: "action", id: "t/vault", sideEffect: "read_only", timeoutMs: 5000,
		in:  `{"type":"object","properties":{"apiKey":{"type":"string","x-secret":true},"id":{"type":"string"}}}`,
		out: `{"type":"object","properties":{"name":{"type":"string"},"token":{"type":"string","writeOnly":true}}}`,
		src: `kind: action
id: t/vault
sideEffect: read_only
timeout: 5s
input:
  type: object
  properties:
    apiKey: {type: string, x-secret: true}
    id: {type: string}
output:
  type: object
  properties:
    name: {type: string}
    token: {type: string, writeOnly: true}
worker: q
`},
	{kind: "action", id: "t/echo", sideEffect: "idempotent", timeoutMs: 1000,
		in:  `{"type":"object"}`,
		out: `{"type":"object"}`,
		src: `kind: action
id: t/echo
sideEffect: idempotent
timeout: 1s
input: {type: object}
output: {type: object}
connector: echo
`},
	{kind: "workflow", id: "t/child",
		in:  `{"type":"object","properties":{"n":{"type":"integer"}}}`,
		out: `{"type":"object","required":["total"],"properties":{"total":{"type":"integer"}}}`,
		src: `kind: workflow
id: t/child
input:
  type: object
  properties:
    n: {type: integer}
output:
  type: object
  required: [total]
  properties:
    total: {type: integer}
steps:
  - id: only
    wait: 1ms
result:
  total: =input.n * 2
`},
	{kind: "decisionTable", id: "t/fee",
		in:  `{"type":"object","properties":{"weight":{"type":"number"}}}`,
		out: `{"type":"number"}`,
		src: `kind: decisionTable
id: t/fee
hitPolicy: FIRST
inputs:
  - {name: weight, type: number}
outputs:
  - {name: fee, type: number}
rules:
  - when: ["> 10"]
    then: [20]
  - when: ["-"]
    then: [5]
`},
}

type testEnv struct {
	lock *lang.CatalogLock
	defs [][]byte
}

var (
	envOnce sync.Once
	envVal  testEnv
	envErr  error
)

// catalogEnv compiles the test definitions once and builds the lock.
func catalogEnv(tb testing.TB) testEnv {
	tb.Helper()
	envOnce.Do(func() { envVal, envErr = buildEnv() })
	if envErr != nil {
		tb.Fatal(envErr)
	}
	return envVal
}

func buildEnv() (testEnv, error) {
	base := &lang.CatalogLock{
		Tasks:    []lang.CatalogTask{{Queue: "q"}},
		Adapters: []lang.CatalogAdapter{{ID: "echo", Version: "1.0.0"}, {ID: "noop", Version: "1.0.0"}},
	}
	var env testEnv
	lock := &lang.CatalogLock{Tasks: base.Tasks, Adapters: base.Adapters}
	for i, d := range testDefs {
		r := lang.Compile([]byte(d.src), lang.Options{Filename: d.id, Catalog: base})
		if !r.OK {
			return env, fmt.Errorf("definition %s does not compile: %v", d.id, r.Diagnostics)
		}
		env.defs = append(env.defs, r.Artifact)
		lock.Definitions = append(lock.Definitions, lang.CatalogEntry{
			Kind: d.kind, ID: d.id, Version: 1,
			PublishedVersionID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1),
			Digest:             r.Digest,
			InputSchema:        json.RawMessage(d.in),
			OutputSchema:       json.RawMessage(d.out),
			SideEffect:         d.sideEffect,
			TimeoutMs:          d.timeoutMs,
			DeadlineMs:         d.deadlineMs,
			Retry:              d.retry,
		})
	}
	if err := lock.Validate(); err != nil {
		return env, err
	}
	env.lock = lock
	return env, nil
}

// compile compiles a workflow against the test catalog.
func compile(tb testing.TB, src string) []byte {
	tb.Helper()
	env := catalogEnv(tb)
	r := lang.Compile([]byte(src), lang.Options{Filename: "test.yaml", Catalog: env.lock})
	if !r.OK {
		for _, d := range r.Diagnostics {
			tb.Log(d)
		}
		tb.Fatalf("workflow does not compile")
	}
	return r.Artifact
}

// load compiles and loads a workflow with the test catalog.
func load(tb testing.TB, src string) *Program {
	tb.Helper()
	env := catalogEnv(tb)
	p, err := Load(compile(tb, src), WithCatalog(env.lock), WithDefinitions(env.defs...))
	if err != nil {
		tb.Fatalf("load: %v", err)
	}
	return p
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// driver feeds events to a run and keeps what came out.
type driver struct {
	tb      testing.TB
	p       *Program
	s       State
	now     time.Time
	effects []Effect // all effects so far
	last    []Effect // effects of the last accepted event
	events  []Event  // accepted events (the history)
}

func newDriver(tb testing.TB, p *Program) *driver {
	return &driver{tb: tb, p: p, now: t0}
}

// try steps an event at the driver's time; on success it is recorded.
func (d *driver) try(e Event) error {
	e.Seq = d.s.Seq + 1
	if e.At.IsZero() {
		e.At = d.now
	}
	before, _ := json.Marshal(d.s)
	s, eff, err := Step(d.p, d.s, e)
	after, _ := json.Marshal(d.s)
	if string(before) != string(after) {
		d.tb.Fatalf("Step modified its input state")
	}
	if err != nil {
		if string(mustJSON(d.tb, s)) != string(before) {
			d.tb.Fatalf("a refused event changed the state")
		}
		if eff != nil {
			d.tb.Fatalf("a refused event returned effects")
		}
		return err
	}
	d.s = s
	d.last = eff
	d.effects = append(d.effects, eff...)
	d.events = append(d.events, e)
	return nil
}

func (d *driver) must(e Event) []Effect {
	d.tb.Helper()
	if err := d.try(e); err != nil {
		d.tb.Fatalf("%s: %v", e.Kind, err)
	}
	return d.last
}

func (d *driver) start(input string) []Effect {
	d.tb.Helper()
	return d.must(Event{Kind: EventStarted, RunID: "run-1", Input: json.RawMessage(input)})
}

// advance moves the clock to t and fires the first due timer, if any.
func (d *driver) advanceTo(t time.Time) []Effect {
	d.tb.Helper()
	d.now = t
	due := DueOrder(d.s, t)
	if len(due) == 0 {
		return nil
	}
	return d.must(Event{Kind: EventTimerFired, TimerID: due[0].ID})
}

func (d *driver) advance(dur time.Duration) []Effect { return d.advanceTo(d.now.Add(dur)) }

// fireNext moves the clock to the next pending timer and fires it.
func (d *driver) fireNext() []Effect {
	d.tb.Helper()
	t, ok := NextDue(d.s)
	if !ok {
		d.tb.Fatalf("no pending timer")
	}
	if t.Due.After(d.now) {
		d.now = t.Due
	}
	return d.must(Event{Kind: EventTimerFired, TimerID: t.ID})
}

// task returns the pending task of a node (the only one).
func (d *driver) task(node string) *Task {
	d.tb.Helper()
	var found *Task
	for _, id := range sortedKeys(d.s.Tasks) {
		if t := d.s.Tasks[id]; t.Node == node {
			if found != nil {
				d.tb.Fatalf("several tasks for %s", node)
			}
			found = t
		}
	}
	if found == nil {
		d.tb.Fatalf("no task for node %s (tasks: %v, status %s, error %+v)", node, sortedKeys(d.s.Tasks), d.s.Status, d.s.Error)
	}
	return found
}

func (d *driver) complete(node, output string) []Effect {
	d.tb.Helper()
	return d.must(Event{Kind: EventTaskCompleted, TaskID: d.task(node).ID, Output: json.RawMessage(output)})
}

func (d *driver) human(node string) *HumanTask {
	d.tb.Helper()
	for _, h := range d.s.Humans {
		if h.Node == node {
			return h
		}
	}
	d.tb.Fatalf("no human task for %s", node)
	return nil
}

func (d *driver) incident(code string) *Incident {
	d.tb.Helper()
	for _, id := range d.s.ActiveIncidents() {
		if inc := d.s.Incidents[id]; inc.Code == code {
			return inc
		}
	}
	d.tb.Fatalf("no active incident %s (incidents: %v)", code, d.s.ActiveIncidents())
	return nil
}

func (d *driver) resolve(inc *Incident, kind ResolutionKind, output, evidence string) error {
	e := Event{Kind: EventIncidentResolved, IncidentID: inc.ID, Revision: inc.Revision, Resolution: kind,
		Reason: "operator decision", ReceiptID: "11111111-2222-4333-8444-555555555555", EvidenceReference: evidence}
	if output != "" {
		e.Output = json.RawMessage(output)
	}
	return d.try(e)
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// kinds lists effect kinds (records omitted) for compact assertions.
func kinds(effs []Effect) string {
	var out []string
	for _, e := range effs {
		if e.Kind == EffectRecord {
			continue
		}
		out = append(out, string(e.Kind))
	}
	return strings.Join(out, ",")
}

func records(effs []Effect, typ string) []*Record {
	var out []*Record
	for _, e := range effs {
		if e.Kind == EffectRecord && e.Record.Type == typ {
			out = append(out, e.Record)
		}
	}
	return out
}

func effectsOf(effs []Effect, k EffectKind) []Effect {
	var out []Effect
	for _, e := range effs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func outputOf(tb testing.TB, s State, step string) string {
	tb.Helper()
	raw, ok := s.Scopes[""].Outputs[step]
	if !ok {
		tb.Fatalf("step %s has no output (outputs: %v)", step, sortedKeys(s.Scopes[""].Outputs))
	}
	return string(raw)
}

func sortedStrings(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
