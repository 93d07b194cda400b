package platform_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/platform/lang"
	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/sim"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// The property test of docs/platform-api.md ("Debug sessions"), against
// real runs: for the workflow examples of the language reference and
// random mock outcomes, a debug session driven over HTTP with random next,
// continue and breakpoint commands, and a real run of the same published
// workflow in the same daemon (platform/engine: its scheduler loop, worker
// task queue, human tasks, signals, child runs, agent runner), whose
// effects a test worker answers with the same outcomes, reach the same
// status and the same final variables (input, vars, step outputs, output,
// error). Both sides get the same environment: a person's decision, a
// signal or time moved to the next due timer, chosen by the same rule from
// what the run waits for.

// simRunDefs are the language reference's catalog definitions (its
// "Catalog lock" section) bound to the worker queue sim, so that the test
// worker decides every outcome; acme/kyc-check is a workflow whose one
// action (acme/kyc-probe, answered with the parent's mock output) gives its
// output.
var simRunDefs = []struct{ collection, src string }{
	{"actions", `kind: action
id: acme/crm.get-customer
version: 2
sideEffect: read_only
timeout: 1h
input: {type: object, required: [customerId], properties: {customerId: {type: string}}}
output: {type: object, properties: {email: {type: string}, tier: {type: string}, name: {type: string}}}
worker: sim
`},
	{"actions", `kind: action
id: acme/send-email
version: 1
sideEffect: idempotency_key
timeout: 1h
retry: {maxAttempts: 5, initialInterval: 1s, backoffCoefficient: 2, maxInterval: 60s}
input:
  type: object
  required: [to, subject]
  additionalProperties: false
  properties:
    to: {type: string}
    subject: {type: string}
    body: {type: string}
    tags: {type: array, items: {type: string}}
    footer: {type: string}
    smtpPassword: {type: string, writeOnly: true}
output: {type: object, properties: {messageId: {type: string}}}
worker: sim
`},
	{"actions", `kind: action
id: acme/charge-card
version: 1
sideEffect: unsafe
timeout: 1h
input:
  type: object
  required: [amount, currency]
  properties:
    amount: {type: number, exclusiveMinimum: 0}
    currency: {type: string, pattern: "^[A-Z]{3}$"}
    card: {type: string, pattern: "^tok_[a-z0-9]+$", writeOnly: true}
output: {type: object, properties: {chargeId: {type: string}}}
worker: sim
`},
	{"actions", `kind: action
id: acme/kyc-probe
version: 1
sideEffect: read_only
timeout: 1h
input: {type: object}
output: {type: object, required: [passed], properties: {passed: {type: boolean}, reason: {type: string}}}
worker: sim
`},
	{"workflows", `kind: workflow
id: acme/kyc-check
version: 1
input: {type: object, required: [customerId], properties: {customerId: {type: string}}}
output: {type: object, required: [passed], properties: {passed: {type: boolean}, reason: {type: string}}}
steps:
  - id: probe
    action: acme/kyc-probe@1
    with: {customerId: =input.customerId}
  - id: done
    succeed:
      result: =steps.probe.output
`},
}

// simRunInputs override generated inputs where a generated value would not
// make a meaningful run.
var simRunInputs = map[string]string{
	"examples/wait":   `{"coolDown":"10s"}`,
	"examples/switch": `{"amount":12.5}`,
	"examples/fail":   `{"country":"KP"}`,
}

// simExample is a published, activated example workflow.
type simExample struct {
	id, activation string
	line           int
	artifact       json.RawMessage
	nodes          map[string]map[string]any
	order          []string
	input          any
}

// simOutcome is one mocked outcome, as the session's mocks and the test
// worker both use it.
type simOutcome struct {
	Output    json.RawMessage   `json:"output,omitempty"`
	Error     *kernel.TaskError `json:"error,omitempty"`
	Retryable bool              `json:"retryable,omitempty"`
	Outcome   string            `json:"outcome,omitempty"`
}

// simWorld is what one comparison shares between its two drivers: the
// outcomes by node and how many calls each node has had.
type simWorld struct {
	mu       sync.Mutex
	outcomes map[string][]simOutcome
	calls    map[string]int
	child    json.RawMessage // the output of every called workflow
}

// next answers the outcome of node's next call (the last repeats), as a
// session's mock list does.
func (w *simWorld) next(node string) simOutcome {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.outcomes[node]
	i := min(w.calls[node], len(list)-1)
	w.calls[node]++
	return list[i]
}

// simAgents answers agent steps with the world's outcomes.
type simAgents struct {
	h     *harness
	mu    sync.Mutex
	world *simWorld
}

func (a *simAgents) set(w *simWorld) { a.mu.Lock(); a.world = w; a.mu.Unlock() }

func (a *simAgents) RunAgent(_ context.Context, t engine.AgentTask) (engine.AgentResult, error) {
	a.mu.Lock()
	w := a.world
	a.mu.Unlock()
	st, err := readRunState(a.h, t.RunID)
	if err != nil || st.Tasks[t.TaskID] == nil || w == nil {
		return engine.AgentResult{Status: "failed", Code: "NO_TASK", Message: fmt.Sprint(err)}, nil
	}
	o := w.next(st.Tasks[t.TaskID].Node)
	switch {
	case o.Error != nil:
		return engine.AgentResult{Status: "failed", Code: o.Error.Code, Message: o.Error.Message}, nil
	case o.Outcome != "":
		return engine.AgentResult{Status: "interrupted"}, nil
	}
	return engine.AgentResult{Status: "completed", Succeeded: true, Output: o.Output}, nil
}

// readRunState reads a run's kernel state as the engine stored it
// (opened with the data directory's secret box when sealed).
func readRunState(h *harness, id string) (kernel.State, error) {
	var stored string
	if err := h.d.DB.Reader().QueryRow(`SELECT state FROM platform_runs WHERE id = ?`, id).Scan(&stored); err != nil {
		return kernel.State{}, err
	}
	plain := []byte(stored)
	if rest, ok := strings.CutPrefix(stored, "sealed:"); ok {
		box, err := runBox(h.dir)
		if err != nil {
			return kernel.State{}, err
		}
		raw, err := base64.RawURLEncoding.DecodeString(rest)
		if err != nil {
			return kernel.State{}, err
		}
		if plain, err = box.Open(raw, []byte("platform/run/state/"+id)); err != nil {
			return kernel.State{}, err
		}
	}
	// An ended run's state is stored packed (store.Pack).
	plain, err := store.Unpack(plain)
	if err != nil {
		return kernel.State{}, err
	}
	var st kernel.State
	err = json.Unmarshal(plain, &st)
	return st, err
}

// runBoxes are the data directories' secret boxes, opened once each.
var runBoxes sync.Map

func runBox(dir string) (*secretbox.Box, error) {
	if b, ok := runBoxes.Load(dir); ok {
		return b.(*secretbox.Box), nil
	}
	b, err := secretbox.Open(context.Background(), dir, secretbox.Options{DisableKeyring: true})
	if err != nil {
		return nil, err
	}
	runBoxes.Store(dir, b)
	return b, nil
}

func TestSessionsMatchEngineRuns(t *testing.T) {
	clk := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clk))
	op := h.localToken()
	agents := &simAgents{h: h}
	h.svc.SetAgents(agents)
	for i, d := range simRunDefs {
		h.mustPublish(op, d.collection, d.src, fmt.Sprintf("sim-def-%d", i))
	}
	fences, err := platformtest.Fences("../docs/workflow-language.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fences {
		if f.Info == "yaml" && strings.HasPrefix(f.Body, "kind: decisionTable") {
			h.mustPublish(op, "decision-tables", f.Body, "sim-table-"+fmt.Sprint(f.Line))
		}
	}
	var examples []simExample
	seen := map[string]bool{}
	for _, f := range fences {
		if f.Info != "yaml" || !strings.HasPrefix(f.Body, "kind: workflow") {
			continue
		}
		var res struct {
			OK       bool            `json:"ok"`
			Artifact json.RawMessage `json:"artifact"`
		}
		h.must(200, h.post(pPath(h)+"/compiler/compile", op, catalog.CompileRequest{Source: f.Body, Format: "yaml"}), &res)
		if !res.OK {
			continue
		}
		var art struct {
			ID    string           `json:"id"`
			Input any              `json:"input"`
			Nodes []map[string]any `json:"nodes"`
		}
		if err := json.Unmarshal(res.Artifact, &art); err != nil {
			t.Fatal(err)
		}
		if seen[art.ID] || art.ID == "acme/kyc-check" {
			continue
		}
		seen[art.ID] = true
		r := h.publish(op, "workflows", f.Body, "sim-wf-"+fmt.Sprint(f.Line))
		if r.status != 201 {
			continue // e.g. the walkthrough's workflow, published under another version elsewhere
		}
		var v catalog.Version
		r.json(t, &v)
		ex := simExample{id: art.ID, line: f.Line, artifact: res.Artifact, nodes: map[string]map[string]any{}, input: art.Input,
			activation: h.mustActivate(ePath(h), op, map[string]any{"published_version_id": v.ID}, "sim-act-"+fmt.Sprint(f.Line), "").ID}
		for _, n := range art.Nodes {
			id, _ := n["id"].(string)
			ex.nodes[id] = n
			ex.order = append(ex.order, id)
		}
		examples = append(examples, ex)
	}
	if len(examples) < 14 {
		t.Fatalf("only %d examples published", len(examples))
	}
	schemas := simOutputSchemas(h, op)
	rng := rand.New(rand.NewPCG(16, 2027))
	w := h.workerToken("sim-worker", wtEnv(h))
	compared, ends := 0, map[string]int{}
	for _, ex := range examples {
		input := json.RawMessage(simRunInputs[ex.id])
		if len(input) == 0 && ex.input != nil {
			input = platformtest.ValueJSON(ex.input)
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		for round := range 3 {
			world := ex.randomWorld(rng, schemas)
			sessionView, ok := simDriveSession(h, ex, input, world, rng)
			if !ok {
				break // the example's values are secret-marked: no session
			}
			world.calls = map[string]int{}
			agents.set(world)
			op = h.refreshTokens()
			w = h.ext.token(t, "sim-worker", fakeTimes(clk))
			runStatus, runVars, ok := simDriveRun(h, clk, &w, ex, input, world, round)
			if !ok {
				t.Logf("%s: a run does not start with input %s", ex.id, input)
				break
			}
			compared++
			ends[string(sessionView.Status)]++
			got, _ := json.Marshal(sessionView.Variables)
			want, _ := json.Marshal(runVars)
			if string(sessionView.Status) != runStatus || string(got) != string(want) {
				t.Fatalf("%s (line %d, round %d): session %s\n%s\nrun %s\n%s\nmocks %s\ndiagnostics %+v", ex.id, ex.line, round,
					sessionView.Status, got, runStatus, want, world.mocks(), sessionView.Diagnostics)
			}
		}
	}
	t.Logf("%d comparisons over %d examples; ends %v", compared, len(examples), ends)
	if compared < 30 || ends["succeeded"] == 0 || ends["suspended"] == 0 {
		t.Fatalf("too few or too uniform comparisons: %d %v", compared, ends)
	}
}

// fakeTimes dates an external token on the fake clock (the platform
// verifies tokens with its own clock).
func fakeTimes(clk *fakeClock) func(map[string]any) {
	return func(c map[string]any) {
		c["iat"], c["exp"] = clk.Now().Unix(), clk.Now().Add(10*time.Minute).Unix()
	}
}

// refreshTokens signs the local operator in again (after the fake clock
// moved past its token's life).
func (h *harness) refreshTokens() string {
	h.opTok = ""
	return h.localToken()
}

// randomWorld gives every action, agent and workflow node 1 to 3 random
// outcomes (mostly successes; retryable and non-retryable failures and
// unknown outcomes of actions, failures and unknown outcomes of agents;
// called workflows always succeed, with one output per world).
func (ex simExample) randomWorld(rng *rand.Rand, schemas map[string]any) *simWorld {
	w := &simWorld{outcomes: map[string][]simOutcome{}, calls: map[string]int{}}
	for _, id := range ex.order {
		n := ex.nodes[id]
		kind, _ := n["kind"].(string)
		var out json.RawMessage
		switch kind {
		case "action":
			ref, _ := n["ref"].(string)
			out = platformtest.ValueJSON(schemas[ref])
		case "agent":
			a, _ := n["agent"].(map[string]any)
			if a["output"] != nil {
				out = platformtest.ValueJSON(a["output"])
			} else {
				out = json.RawMessage(`"an answer"`)
			}
		case "workflow":
			w.child = json.RawMessage(`{"passed":true,"reason":"checked"}`)
			w.outcomes[id] = []simOutcome{{Output: w.child}}
			continue
		default:
			continue
		}
		count := 1 + rng.IntN(3)
		for i := range count {
			o := simOutcome{Output: out}
			if i < count-1 || rng.IntN(6) == 0 {
				switch r := rng.IntN(8); {
				case r == 0 && kind == "action":
					o = simOutcome{Error: &kernel.TaskError{Code: "BROKEN", Message: "mocked"}}
				case r == 1:
					o = simOutcome{Outcome: "unknown"}
				case r >= 2 && r <= 4:
					o = simOutcome{Error: &kernel.TaskError{Code: "BUSY", Message: "mocked"}, Retryable: true}
				}
			}
			w.outcomes[id] = append(w.outcomes[id], o)
		}
	}
	return w
}

// simOutputSchemas reads the pinned output schemas of the project's
// actions from its catalog lock, by reference (id@version).
func simOutputSchemas(h *harness, op string) map[string]any {
	var lock lang.CatalogLock
	h.must(200, h.get(pPath(h)+"/catalog", op), &lock)
	out := map[string]any{}
	for _, d := range lock.Definitions {
		var v any
		if len(d.OutputSchema) > 0 {
			_ = json.Unmarshal(d.OutputSchema, &v)
		}
		out[fmt.Sprintf("%s@%d", d.ID, d.Version)] = v
	}
	return out
}

// mocks are the world's outcomes as session mocks (node:<id> keys).
func (w *simWorld) mocks() json.RawMessage {
	m := map[string][]simOutcome{}
	for node, list := range w.outcomes {
		m["node:"+node] = list
	}
	b, _ := json.Marshal(m)
	return b
}

// simEnv is what a waiting run gets next: a decision for the first open
// human task, else a signal for the first signal step waiting, else the
// clock moved to the next due time (whole seconds). Both drivers choose
// it by instance key from what the run waits for.
type simEnv struct {
	kind, instance, signal, decision string
	data                             json.RawMessage
	seconds                          int64
}

func (ex simExample) chooseEnv(waits []sim.Wait, now time.Time) (simEnv, bool) {
	sort.SliceStable(waits, func(i, j int) bool { return waits[i].Instance < waits[j].Instance })
	for _, wt := range waits {
		if wt.Kind == "human" && len(wt.Decisions) > 0 {
			var form any
			if hn, ok := ex.nodes[wt.NodeID]["human"].(map[string]any); ok {
				form = hn["form"]
			}
			return simEnv{kind: "human", instance: wt.Instance, decision: wt.Decisions[0], data: platformtest.ValueJSON(form)}, true
		}
	}
	for _, wt := range waits {
		if wt.Kind == "signal" {
			return simEnv{kind: "signal", instance: wt.Instance, signal: wt.Signal, data: platformtest.ValueJSON(ex.nodes[wt.NodeID]["schema"])}, true
		}
	}
	var due *time.Time
	for _, wt := range waits {
		if wt.Due != nil && (due == nil || wt.Due.Before(*due)) {
			due = wt.Due
		}
	}
	if due == nil {
		return simEnv{}, false
	}
	return simEnv{kind: "time", seconds: int64((due.Sub(now) + time.Second - 1) / time.Second)}, true
}

// simDriveSession runs a debug session over HTTP to its end with random
// commands; false when the session refuses the example's values as
// secret.
func simDriveSession(h *harness, ex simExample, input json.RawMessage, world *simWorld, rng *rand.Rand) (sim.View, bool) {
	t := h.t
	op := h.localToken()
	P := pPath(h) + "/debug/sessions"
	r := h.post(P, op, map[string]any{"artifact": ex.artifact, "input": input, "mocks": world.mocks(), "now": h.now().Format(time.RFC3339Nano)})
	if r.status == 422 && strings.Contains(string(r.body), sim.CodeSecretValue) {
		return sim.View{}, false
	}
	var s sim.SessionBody
	h.must(201, r, &s)
	apply := func(cmd any) {
		t.Helper()
		r := h.do(req{method: "POST", path: P + "/" + s.ID + "/commands", token: op, hdr: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, s.Revision)}, body: cmd})
		h.must(200, r, &s)
	}
	// After a signal, a decision or a time advance the session waits
	// until a next or continue moves it.
	moved := true
	for i := 0; i < 2000 && !s.View.Status.Ended() && s.View.Status != sim.StatusSuspended; i++ {
		if v := s.View; v.Status == sim.StatusWaiting && moved {
			env, ok := ex.chooseEnv(append([]sim.Wait{}, v.Boundary.Waits...), v.Now)
			if !ok {
				break
			}
			switch env.kind {
			case "human":
				apply(map[string]any{"human_decision": map[string]any{"name": env.instance, "payload": map[string]any{"decision": env.decision, "data": env.data}}})
			case "signal":
				apply(map[string]any{"signal": map[string]any{"name": env.signal, "payload": env.data}})
			case "time":
				apply(map[string]any{"advance_time": map[string]any{"seconds": env.seconds}})
			}
			moved = false
		}
		switch rng.IntN(5) {
		case 0:
			bps := []string{}
			for _, id := range ex.order {
				if rng.IntN(3) == 0 {
					bps = append(bps, id)
				}
			}
			apply(map[string]any{"breakpoints": map[string]any{"node_ids": bps}})
		case 1, 2:
			apply(map[string]any{"next": map[string]any{}})
			moved = true
		default:
			apply(map[string]any{"continue": map[string]any{}})
			moved = true
		}
	}
	return s.View, true
}

// simDriveRun starts a real run of the example and answers its effects
// with world's outcomes until it ends, or is suspended or waits and the
// rule gives nothing more; it answers the run's status and variables
// (false when the run does not start). Like a session, it answers one
// issued call at a time, oldest first, once the run has reduced all it
// could: the run's log gives the order the calls were issued in.
func simDriveRun(h *harness, clk *fakeClock, w *string, ex simExample, input json.RawMessage, world *simWorld, round int) (string, sim.Variables, bool) {
	t := h.t
	op := h.localToken()
	r := h.startRun(op, map[string]any{"activation_id": ex.activation, "input": input}, fmt.Sprintf("sim-run-%d-%d", ex.line, round))
	if r.status == 422 {
		// An input the simulator cannot judge: a file reference must
		// name a file of the environment.
		return "", sim.Variables{}, false
	}
	var run engine.Run
	h.must(201, r, &run)
	e := ePath(h)
	// After the clock moves the engine notices within its poll interval.
	var quietUntil time.Time
	advance := func(d time.Duration) {
		quietUntil = time.Now().Add(engine.PollInterval + 100*time.Millisecond)
		clk.Set(clk.Now().Add(d))
		op = h.refreshTokens()
		*w = h.ext.token(t, "sim-worker", fakeTimes(clk))
	}
	var outstanding []engine.ClaimedTask // claimed, not answered yet
	var lastSeq int64 = -1
	stable := 0
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, err := readRunState(h, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		var claimed engine.ClaimResponse
		h.must(200, h.post(e+"/tasks/claim", *w, map[string]any{"worker_id": "sim", "queues": []string{"sim"}, "max_tasks": 100, "lease_seconds": 3600}), &claimed)
		outstanding = append(outstanding, claimed.Tasks...)
		// A suspended run holds its ready tokens at the barrier.
		busy := (len(st.Ready) > 0 && len(st.ActiveIncidents()) == 0) || len(claimed.Tasks) > 0 || st.Seq != lastSeq
		for _, tk := range st.Tasks {
			if tk.Status == kernel.TaskRunning && tk.Executor == kernel.ExecutorAgent {
				busy = true // the agent runner answers it
			}
		}
		lastSeq = st.Seq
		if busy {
			stable = 0
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if stable++; stable < 3 || time.Now().Before(quietUntil) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		stable = 0
		if st.Status.Terminal() {
			return string(st.Status), (&sim.Session{State: st}).View().Variables, true
		}
		if len(outstanding) > 0 {
			order := issueOrder(h, op, run.ID)
			sort.SliceStable(outstanding, func(i, j int) bool {
				pi, pj := order(outstanding[i]), order(outstanding[j])
				if pi != pj {
					return pi < pj
				}
				return outstanding[i].Instance < outstanding[j].Instance
			})
			ct := outstanding[0]
			outstanding = outstanding[1:]
			var o simOutcome
			if ct.Action == "acme/kyc-probe@1" {
				o = simOutcome{Output: world.child}
			} else {
				o = world.next(ct.NodeID)
			}
			switch {
			case o.Error != nil:
				h.must(200, h.post(e+"/tasks/fail", *w, map[string]any{"task_id": ct.ID, "worker_id": "sim", "error": o.Error, "retryable": o.Retryable}), nil)
			case o.Outcome != "":
				// The lease runs out: the outcome is unknown.
				h.must(200, h.post(e+"/tasks/heartbeat", *w, map[string]any{"task_id": ct.ID, "worker_id": "sim", "lease_seconds": 5}), nil)
				advance(6 * time.Second)
			default:
				h.must(200, h.post(e+"/tasks/complete", *w, map[string]any{"task_id": ct.ID, "worker_id": "sim", "output": o.Output}), nil)
			}
			continue
		}
		if len(st.ActiveIncidents()) > 0 {
			return string(st.Status), (&sim.Session{State: st}).View().Variables, true
		}
		if next, ok := kernel.NextDue(st); ok && next.Kind == kernel.TimerRetryBackoff {
			advance(max(next.Due.Sub(clk.Now()), 0))
			continue
		}
		env, ok := ex.chooseEnv(runWaits(st), clk.Now())
		if !ok {
			return string(st.Status), (&sim.Session{State: st}).View().Variables, true
		}
		switch env.kind {
		case "human":
			var tasks struct{ Items []engine.HumanTask }
			h.must(200, h.get(e+"/human-tasks?run_id="+run.ID, op), &tasks)
			var task *engine.HumanTask
			for i := range tasks.Items {
				if tasks.Items[i].Instance == env.instance && tasks.Items[i].ClosedAt == nil {
					task = &tasks.Items[i]
				}
			}
			if task == nil {
				t.Fatalf("%s: no human task %s in %+v", ex.id, env.instance, tasks.Items)
			}
			key := map[string]string{"Idempotency-Key": "sim-" + task.ID}
			h.must(200, h.do(req{method: "POST", path: e + "/human-tasks/" + task.ID + "/claim", token: op, hdr: key, body: map[string]any{}}), nil)
			h.must(200, h.do(req{method: "POST", path: e + "/human-tasks/" + task.ID + "/complete", token: op, hdr: key,
				body: map[string]any{"decision": env.decision, "data": env.data}}), nil)
		case "signal":
			h.must(202, h.signalRun(op, run.ID, map[string]any{"name": env.signal, "payload": env.data}, ""), nil)
		case "time":
			advance(time.Duration(env.seconds) * time.Second)
		}
	}
	st, _ := readRunState(h, run.ID)
	t.Fatalf("%s: the run did not settle: status %s ready %v tasks %d children %d outstanding %d timers %d", ex.id, st.Status, st.Ready,
		len(st.Tasks), len(st.Children), len(outstanding), len(st.Timers))
	return "", sim.Variables{}, false
}

// issueOrder answers, for a claimed task, the place in the run's log where
// it was issued: its node's attempt queued, or for a called workflow's
// task the child run's start.
func issueOrder(h *harness, op, run string) func(engine.ClaimedTask) int {
	var page struct{ Items []engine.LogEntry }
	h.must(200, h.get(ePath(h)+"/runs/"+run+"/logs?type=task_queued,child_started&limit=500", op), &page)
	return func(ct engine.ClaimedTask) int {
		for i, l := range page.Items {
			switch {
			case ct.RunID != run && l.Type == "child_started" && strings.Contains(l.Message, ct.RunID):
				return i
			case ct.RunID == run && l.Type == "task_queued" && l.NodeID != nil && *l.NodeID == ct.NodeID &&
				strings.HasPrefix(l.Message, fmt.Sprintf("attempt %d ", ct.Attempt)):
				return i
			}
		}
		return len(page.Items)
	}
}

// runWaits lists what a run's state waits for, as a session's boundary
// shows it.
func runWaits(st kernel.State) []sim.Wait {
	var out []sim.Wait
	for _, tok := range st.Tokens {
		switch {
		case tok.Signal != "":
			out = append(out, sim.Wait{Kind: "signal", NodeID: tok.Node, Instance: tok.Instance, Signal: tok.Signal, Due: tok.Deadline})
		case tok.HumanID != "":
			wt := sim.Wait{Kind: "human", NodeID: tok.Node, Instance: tok.Instance, Due: tok.Deadline}
			if hm := st.Humans[tok.HumanID]; hm != nil {
				wt.Decisions = hm.Decisions
			}
			out = append(out, wt)
		case tok.TimerID != "":
			wt := sim.Wait{Kind: "timer", NodeID: tok.Node, Instance: tok.Instance}
			if tm := st.Timers[tok.TimerID]; tm != nil {
				d := tm.Due
				wt.Due = &d
			}
			out = append(out, wt)
		}
	}
	return out
}
