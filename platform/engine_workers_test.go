package platform_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/identity"
)

// Worker-bound actions: an unsafe charge on queue billing and a read-only
// rate lookup on queue rates (three attempts, 10 ms apart).
const (
	wtChargeAction = `kind: action
id: acme/charge
version: 1
sideEffect: unsafe
input:
  type: object
  required: [amount]
  properties:
    amount: {type: integer}
output:
  type: object
  required: [receipt]
  properties:
    receipt: {type: string}
worker: billing
`
	wtRateAction = `kind: action
id: acme/lookup-rate
version: 1
sideEffect: read_only
input:
  type: object
  properties:
    currency: {type: string}
output:
  type: object
  required: [rate]
  properties:
    rate: {type: number}
worker: rates
`
	wtChargeWorkflow = `kind: workflow
id: acme/charge-flow
version: 1
input: {type: object, required: [amount], properties: {amount: {type: integer}}}
output: {type: object, properties: {receipt: {type: string}}}
steps:
  - id: charge
    action: acme/charge@1
    with:
      amount: =input.amount
  - id: done
    succeed:
      result:
        receipt: =steps.charge.output.receipt
`
	wtRateWorkflow = `kind: workflow
id: acme/rate-flow
version: 1
input: {type: object}
output: {type: object, properties: {rate: {type: number}}}
steps:
  - id: rate
    action: acme/lookup-rate@1
    with:
      currency: EUR
    retry:
      maxAttempts: 3
      initialInterval: 10ms
  - id: done
    succeed:
      result:
        rate: =steps.rate.output.rate
`
)

// wtFixture is a daemon with the worker test definitions published and
// both workflows activated.
type wtFixture struct {
	h *harness
	// op is the local operator's token, w a worker principal's (the worker
	// role in the environment).
	op, w string
	// charge and rate are the activations of the charge and rate flows.
	charge, rate string
}

// newWorkerFixture starts the daemon, publishes and activates the worker
// test definitions and links the worker principal sub.
func newWorkerFixture(t *testing.T, sub string) wtFixture {
	t.Helper()
	h := newHarness(t)
	f := wtFixture{h: h, op: h.localToken()}
	h.mustPublish(f.op, "actions", wtChargeAction, "wt-charge-action")
	h.mustPublish(f.op, "actions", wtRateAction, "wt-rate-action")
	cw := h.mustPublish(f.op, "workflows", wtChargeWorkflow, "wt-charge-flow").ID
	rw := h.mustPublish(f.op, "workflows", wtRateWorkflow, "wt-rate-flow").ID
	f.charge = h.mustActivate(ePath(h), f.op, map[string]any{"published_version_id": cw}, "wt-charge-activation", "").ID
	f.rate = h.mustActivate(ePath(h), f.op, map[string]any{"published_version_id": rw}, "wt-rate-activation", "").ID
	f.w = h.workerToken(sub, wtEnv(h))
	return f
}

// start starts a run of activation act with input (nil: none).
func (f wtFixture) start(act, key string, input map[string]any) engine.Run {
	f.h.t.Helper()
	body := map[string]any{"activation_id": act}
	if input != nil {
		body["input"] = input
	}
	return f.h.mustStartRun(f.op, body, key)
}

// wtEnv is the bootstrapped environment's scope.
func wtEnv(h *harness) identity.Scope {
	return identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
}

// workerToken links a worker principal for sub, grants it the worker role
// at scope and answers its token.
func (h *harness) workerToken(sub string, scope identity.Scope) string {
	h.t.Helper()
	h.grant(h.link("worker", sub), scope, "worker")
	return h.ext.token(h.t, sub, nil)
}

// taskCall posts body to E/tasks/<verb>.
func (h *harness) taskCall(tok, verb string, body any) resp {
	h.t.Helper()
	return h.post(ePath(h)+"/tasks/"+verb, tok, body)
}

func (h *harness) mustClaim(tok string, body any) []engine.ClaimedTask {
	h.t.Helper()
	var out engine.ClaimResponse
	h.must(200, h.taskCall(tok, "claim", body), &out)
	return out.Tasks
}

// claimOne polls queue until it hands worker a task (10 s at most).
func (h *harness) claimOne(tok, worker, queue string) engine.ClaimedTask {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tasks := h.mustClaim(tok, map[string]any{"worker_id": worker, "queues": []string{queue}}); len(tasks) == 1 {
			return tasks[0]
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no task of queue %s became claimable", queue)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type taskPage struct {
	Items      []engine.QueuedTask `json:"items"`
	NextCursor *string             `json:"next_cursor"`
}

func (h *harness) listTasks(tok, query string) taskPage {
	h.t.Helper()
	var p taskPage
	h.must(200, h.get(ePath(h)+"/tasks"+query, tok), &p)
	return p
}

// runIncidentsOf reads the incidents of a run.
func (h *harness) runIncidentsOf(tok, run string) []engine.Incident {
	h.t.Helper()
	var incs []engine.Incident
	h.must(200, h.get(ePath(h)+"/runs/"+run+"/incidents", tok), &incs)
	return incs
}

func complete(id, worker string, output any) map[string]any {
	return map[string]any{"task_id": id, "worker_id": worker, "output": output}
}

func failure(id, worker, code string, retryable bool) map[string]any {
	return map[string]any{"task_id": id, "worker_id": worker, "error": map[string]any{"code": code, "message": "it broke"}, "retryable": retryable}
}

func TestWorkerTaskLifecycle(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "billing-worker")
	h, op, w := f.h, f.op, f.w
	run := f.start(f.charge, "wt-run", map[string]any{"amount": 42})

	// The task is queued with the state that issued it.
	list := h.listTasks(op, "")
	is.Equal(len(list.Items), 1)
	queued := list.Items[0]
	is.Equal(queued.RunID, run.ID)
	is.Equal(queued.Status, "ready")
	is.Equal(queued.Queue, "billing")
	is.Equal(queued.Action, "acme/charge@1")
	is.Equal(queued.WorkerID, "")
	is.True(queued.LeaseExpiresAt == nil)
	raw := h.get(ePath(h)+"/tasks", op)
	is.True(!bytes.Contains(raw.body, []byte(`"input"`))) // lists carry no input

	// Claim it: the lease, the input and the keys a worker needs.
	before := time.Now()
	claim := map[string]any{"worker_id": "billing-1", "queues": []string{"billing"}}
	tasks := h.mustClaim(w, claim)
	is.Equal(len(tasks), 1)
	task := tasks[0]
	is.Equal(task.ID, queued.ID)
	is.Equal(task.RunID, run.ID)
	is.Equal(task.NodeID, "charge")
	is.Equal(task.Instance, "charge")
	is.Equal(task.Attempt, 1)
	is.Equal(task.Queue, "billing")
	is.Equal(task.Action, "acme/charge@1")
	is.Equal(task.SideEffect, "unsafe")
	is.Equal(task.Status, "leased")
	is.Equal(task.WorkerID, "billing-1")
	is.Equal(string(task.Input), `{"amount":42}`)
	is.True(task.OperationKey != "")
	is.Equal(task.IdempotencyKey, task.OperationKey)
	is.True(task.Deadline != nil && task.Deadline.After(time.Now().Add(4*time.Minute))) // the default 5m timeout
	is.True(task.LeaseExpiresAt != nil)
	is.True(!task.LeaseExpiresAt.Before(before.Add(59*time.Second)) && !task.LeaseExpiresAt.After(time.Now().Add(61*time.Second)))

	// Nothing else is ready; the list shows the lease.
	is.Equal(len(h.mustClaim(w, claim)), 0)
	is.Equal(len(h.listTasks(op, "?status=ready").Items), 0)
	leased := h.listTasks(op, "?status=leased&queue=billing").Items
	is.Equal(len(leased), 1)
	is.Equal(leased[0].WorkerID, "billing-1")
	is.Equal(len(h.listTasks(op, "?queue=rates").Items), 0)

	// Heartbeats extend the lease from now; only the holder may send them.
	var lease engine.Lease
	h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "billing-1", "lease_seconds": 600}), &lease)
	is.Equal(lease.ID, task.ID)
	is.Equal(lease.WorkerID, "billing-1")
	is.True(lease.LeaseExpiresAt.After(task.LeaseExpiresAt.Add(8 * time.Minute)))
	is.Equal(*lease.Deadline, *task.Deadline)
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "billing-2"}))
	other := h.workerToken("billing-worker-2", wtEnv(h))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(other, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "billing-1"}))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(other, "complete", complete(task.ID, "billing-1", map[string]any{"receipt": "r"})))

	// An output the pinned schema refuses changes nothing; the lease is kept.
	h.problem(422, "PF-VALIDATION", h.taskCall(w, "complete", complete(task.ID, "billing-1", map[string]any{"receipt": 7})))
	h.problem(422, "PF-VALIDATION", h.taskCall(w, "complete", complete(task.ID, "billing-1", map[string]any{})))
	is.Equal(len(h.listTasks(op, "?status=leased").Items), 1)
	h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "billing-1"}), nil)

	// Complete: the run continues with the output.
	body := complete(task.ID, "billing-1", map[string]any{"receipt": "rc-1"})
	res := h.taskCall(w, "complete", body)
	var report engine.TaskReport
	h.must(200, res, &report)
	is.Equal(report.ID, task.ID)
	is.Equal(report.RunID, run.ID)
	is.Equal(report.Outcome, "completed")
	is.Equal(report.Held, false)
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"receipt":"rc-1"}`)
	is.True(report.AcceptedSequence >= 2)
	is.Equal(historyKinds(h.runHistory(op, run.ID))[1], "task_completed")
	is.Equal(len(h.listTasks(op, "").Items), 0)

	// The same report again answers the same result; anything else about
	// the ended task is a conflict.
	again := h.taskCall(w, "complete", map[string]any{"output": map[string]any{"receipt": "rc-1"}, "worker_id": "billing-1", "task_id": task.ID})
	is.Equal(again.status, 200)
	is.Equal(string(again.body), string(res.body))
	p := h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "complete", complete(task.ID, "billing-1", map[string]any{"receipt": "rc-2"})))
	is.True(strings.Contains(p.Message, "completed"))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(other, "complete", body))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "fail", failure(task.ID, "billing-1", "OOPS", true)))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "billing-1"}))

	// An Idempotency-Key makes a claim safe to retry.
	run2 := f.start(f.charge, "wt-run-2", map[string]any{"amount": 1})
	send := func() resp {
		return h.do(req{method: "POST", path: ePath(h) + "/tasks/claim", token: w, body: claim, hdr: map[string]string{"Idempotency-Key": "claim-1"}})
	}
	first := send()
	var got engine.ClaimResponse
	h.must(200, first, &got)
	is.Equal(len(got.Tasks), 1)
	is.Equal(got.Tasks[0].RunID, run2.ID)
	replay := send()
	is.Equal(replay.status, 200)
	is.Equal(replay.header.Get("Idempotent-Replayed"), "true")
	is.Equal(string(replay.body), string(first.body))
}

func TestWorkerTaskRetryAndFailure(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "rates-worker")
	h, op, w := f.h, f.op, f.w
	run := f.start(f.rate, "wt-rate", nil)

	// A retryable failure: the retry policy issues attempt 2 as a new task.
	t1 := h.claimOne(w, "rates-1", "rates")
	is.Equal(string(t1.Input), `{"currency":"EUR"}`)
	is.Equal(t1.SideEffect, "read_only")
	// The service asked for 300 ms: the backoff (10 ms) is lengthened.
	var report engine.TaskReport
	limited := failure(t1.ID, "rates-1", "RATE_LIMITED", true)
	limited["retry_after_ms"] = 300
	failedAt := time.Now()
	h.must(200, h.taskCall(w, "fail", limited), &report)
	is.Equal(report.Outcome, "failed")
	is.Equal(report.RunStatus, "running")
	t2 := h.claimOne(w, "rates-2", "rates")
	is.True(time.Since(failedAt) >= 290*time.Millisecond)
	// Replayed alike with the wait; another wait is another report.
	h.must(200, h.taskCall(w, "fail", limited), nil)
	limited["retry_after_ms"] = 301
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "fail", limited))
	is.True(t2.ID != t1.ID)
	is.Equal(t2.Attempt, 2)
	is.Equal(t2.OperationKey, t1.OperationKey)
	is.Equal(t2.WorkerID, "rates-2")
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": t1.ID, "worker_id": "rates-1"}))

	// A failure that is not retryable opens PF-TASK-FAILED.
	body := failure(t2.ID, "rates-2", "NO_SUCH_CURRENCY", false)
	res := h.taskCall(w, "fail", body)
	h.must(200, res, &report)
	is.Equal(report.RunStatus, "suspended")
	h.waitRun(op, run.ID, "suspended")
	incs := h.runIncidentsOf(op, run.ID)
	is.Equal(len(incs), 1)
	is.Equal(incs[0].Code, "PF-TASK-FAILED")
	is.Equal(incs[0].TaskID, t2.ID)
	is.Equal(incs[0].Error.Code, "NO_SUCH_CURRENCY")
	is.Equal(incs[0].Error.Message, "it broke")
	is.Equal(len(h.listTasks(op, "").Items), 0)
	// Replayed alike; another report about it conflicts.
	again := h.taskCall(w, "fail", body)
	is.Equal(again.status, 200)
	is.Equal(string(again.body), string(res.body))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "fail", failure(t2.ID, "rates-2", "NO_SUCH_CURRENCY", true)))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "complete", complete(t2.ID, "rates-2", map[string]any{"rate": 1.1})))
}

func TestWorkerLeaseExpiry(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "lost-worker")
	h, op, w := f.h, f.op, f.w
	unsafe := f.start(f.charge, "wt-unsafe", map[string]any{"amount": 5})
	safe := f.start(f.rate, "wt-safe", nil)
	tasks := h.mustClaim(w, map[string]any{"worker_id": "lost", "queues": []string{"billing", "rates"}, "max_tasks": 2, "lease_seconds": 5})
	is.Equal(len(tasks), 2)
	byRun := map[string]engine.ClaimedTask{tasks[0].RunID: tasks[0], tasks[1].RunID: tasks[1]}
	tu, ts := byRun[unsafe.ID], byRun[safe.ID]

	// The worker goes silent. An unsafe attempt whose lease expired is
	// ambiguous: an incident, never a repeat.
	h.waitRun(op, unsafe.ID, "suspended")
	incs := h.runIncidentsOf(op, unsafe.ID)
	is.Equal(len(incs), 1)
	is.Equal(incs[0].Code, "PF-TASK-AMBIGUOUS")
	is.Equal(incs[0].TaskID, tu.ID)
	// A safe one is tried again as a new task.
	next := h.claimOne(w, "fresh", "rates")
	is.True(next.ID != ts.ID)
	is.Equal(next.Attempt, 2)
	is.Equal(next.RunID, safe.ID)
	is.Equal(len(h.mustClaim(w, map[string]any{"worker_id": "fresh", "queues": []string{"billing"}})), 0)

	// The late worker learns that its leases are gone.
	p := h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": tu.ID, "worker_id": "lost"}))
	is.True(strings.Contains(p.Message, "expired"))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "complete", complete(tu.ID, "lost", map[string]any{"receipt": "late"})))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "complete", complete(ts.ID, "lost", map[string]any{"rate": 1.5})))

	// The new attempt completes the safe run.
	h.must(200, h.taskCall(w, "complete", complete(next.ID, "fresh", map[string]any{"rate": 1.5})), nil)
	is.Equal(string(h.waitRun(op, safe.ID, "succeeded").State.Output), `{"rate":1.5}`)
}

func TestWorkerTaskPausedAndCancelledRuns(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "pause-worker")
	h, op, w := f.h, f.op, f.w
	claim := map[string]any{"worker_id": "p-1", "queues": []string{"rates"}}

	// A paused run's task is not handed out until the run resumes.
	run := f.start(f.rate, "wt-pause", nil)
	h.must(200, h.pauseRun(op, run.ID, "pause", map[string]any{}, "wt-p1"), nil)
	is.Equal(len(h.mustClaim(w, claim)), 0)
	is.Equal(h.listTasks(op, "").Items[0].Status, "ready")
	h.must(200, h.pauseRun(op, run.ID, "resume", map[string]any{}, "wt-r1"), nil)
	task := h.claimOne(w, "p-1", "rates")
	is.Equal(task.RunID, run.ID)

	// An outcome reported while the run is paused is checked now and held.
	h.must(200, h.pauseRun(op, run.ID, "pause", map[string]any{}, "wt-p2"), nil)
	h.problem(422, "PF-VALIDATION", h.taskCall(w, "complete", complete(task.ID, "p-1", map[string]any{"rate": "high"})))
	h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "p-1"}), nil)
	var report engine.TaskReport
	h.must(200, h.taskCall(w, "complete", complete(task.ID, "p-1", map[string]any{"rate": 0.9})), &report)
	is.Equal(report.Held, true)
	is.Equal(report.RunStatus, "running")
	var r engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &r)
	is.Equal(r.Status, "running")
	is.True(r.Paused)
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "p-1"}))
	h.must(200, h.pauseRun(op, run.ID, "resume", map[string]any{}, "wt-r2"), nil)
	is.Equal(string(h.waitRun(op, run.ID, "succeeded").State.Output), `{"rate":0.9}`)

	// Cancelling a run withdraws its ready task...
	ready := f.start(f.rate, "wt-cancel-ready", nil)
	is.Equal(len(h.listTasks(op, "").Items), 1)
	h.must(200, h.cancelRun(op, ready.ID, map[string]string{"reason": "not needed"}), nil)
	is.Equal(len(h.listTasks(op, "").Items), 0)
	is.Equal(len(h.mustClaim(w, claim)), 0)
	// ...and revokes the lease of a claimed one.
	leased := f.start(f.rate, "wt-cancel-leased", nil)
	lt := h.claimOne(w, "p-2", "rates")
	is.Equal(lt.RunID, leased.ID)
	var cancelled engine.Run
	h.must(200, h.cancelRun(op, leased.ID, map[string]string{"reason": "stop"}), &cancelled)
	is.Equal(*cancelled.ExternalEffectsMayContinue, true)
	p := h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": lt.ID, "worker_id": "p-2"}))
	is.True(strings.Contains(p.Message, "withdrawn"))
	h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "complete", complete(lt.ID, "p-2", map[string]any{"rate": 1})))
	is.Equal(len(h.listTasks(op, "").Items), 0)
}

// Leases live in the database: a worker keeps its lease across a restart of
// the daemon and reports the outcome afterwards.
func TestWorkerLeaseSurvivesRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "steady-worker")
	h, w := f.h, f.w
	run := f.start(f.charge, "wt-restart", map[string]any{"amount": 9})
	task := h.claimOne(w, "steady", "billing")
	h.restart(true)
	h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": task.ID, "worker_id": "steady"}), nil)
	h.must(200, h.taskCall(w, "complete", complete(task.ID, "steady", map[string]any{"receipt": "after-restart"})), nil)
	is.Equal(string(h.waitRun(h.localToken(), run.ID, "succeeded").State.Output), `{"receipt":"after-restart"}`)
}

// A ready task nobody claims is withdrawn by the kernel's own timers: the
// slow workflow's step deadline opens PF-TASK-DEADLINE and the task goes.
func TestWorkerReadyTaskDeadline(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupSlow(h)
	w := h.workerToken("slow-worker", wtEnv(h))
	_, inc := h.suspendedRun(op, act, "wt-slow")
	is.Equal(inc.Code, "PF-TASK-DEADLINE")
	is.Equal(len(h.listTasks(op, "").Items), 0)
	is.Equal(len(h.mustClaim(w, map[string]any{"worker_id": "late", "queues": []string{"billing"}})), 0)
	p := h.problem(409, "PF-RUNTIME-STATE", h.taskCall(w, "heartbeat", map[string]any{"task_id": inc.TaskID, "worker_id": "late"}))
	is.True(strings.Contains(p.Message, "withdrawn"))
}

// rawClaim claims without the harness (safe in goroutines).
func rawClaim(h *harness, tok string, body any) (engine.ClaimResponse, error) {
	var out engine.ClaimResponse
	data, _ := json.Marshal(body)
	hr, err := http.NewRequest("POST", h.base+ePath(h)+"/tasks/claim", bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	hr.Header.Set("Authorization", "Bearer "+tok)
	hr.Header.Set("Content-Type", "application/json")
	res, err := h.hc.Do(hr)
	if err != nil {
		return out, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return out, fmt.Errorf("claim: status %d", res.StatusCode)
	}
	return out, json.NewDecoder(res.Body).Decode(&out)
}

func TestWorkerConcurrentClaims(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "crowd")
	h, op, w := f.h, f.op, f.w
	const runs = 12
	for i := range runs {
		f.start(f.rate, fmt.Sprintf("wt-crowd-%d", i), nil)
	}
	// Oldest first.
	all := h.listTasks(op, "").Items
	is.Equal(len(all), runs)

	var mu sync.Mutex
	seen := map[string]string{}
	var problems []string
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w-%d", g)
			for {
				out, err := rawClaim(h, w, map[string]any{"worker_id": worker, "queues": []string{"rates"}, "max_tasks": 2})
				mu.Lock()
				if err != nil {
					problems = append(problems, err.Error())
				}
				for _, task := range out.Tasks {
					if prev, dup := seen[task.ID]; dup {
						problems = append(problems, fmt.Sprintf("task %s claimed by %s and %s", task.ID, prev, worker))
					}
					seen[task.ID] = worker
				}
				mu.Unlock()
				if err != nil || len(out.Tasks) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	is.Equal(problems, nil)
	is.Equal(len(seen), runs)
	for _, task := range h.listTasks(op, "").Items {
		is.Equal(task.Status, "leased")
		is.Equal(task.WorkerID, seen[task.ID])
	}

	// A claim of several hands them out oldest first.
	for i := range 3 {
		f.start(f.rate, fmt.Sprintf("wt-order-%d", i), nil)
	}
	batch := h.mustClaim(w, map[string]any{"worker_id": "batch", "queues": []string{"rates", "billing"}, "max_tasks": 100})
	is.Equal(len(batch), 3)
	for i := 1; i < len(batch); i++ {
		is.True(!batch[i].CreatedAt.Before(batch[i-1].CreatedAt))
	}

	// Pages of the list, in id order.
	var ids []string
	path := "?limit=4&status=leased"
	for {
		page := h.listTasks(op, path)
		for _, task := range page.Items {
			ids = append(ids, task.ID)
		}
		if page.NextCursor == nil {
			break
		}
		path = "?limit=4&status=leased&cursor=" + *page.NextCursor
	}
	is.Equal(len(ids), runs+3)
	for i := 1; i < len(ids); i++ {
		is.True(ids[i-1] < ids[i])
	}
	// A cursor is bound to its filters.
	first := h.listTasks(op, "?limit=1&status=leased")
	h.problem(422, "PF-VALIDATION", h.get(ePath(h)+"/tasks?limit=1&status=ready&cursor="+*first.NextCursor, op))
}

func TestWorkerTaskValidation(t *testing.T) {
	t.Parallel()
	f := newWorkerFixture(t, "strict-worker")
	h, op, w := f.h, f.op, f.w
	f.start(f.charge, "wt-strict", map[string]any{"amount": 3})
	held := h.claimOne(w, "s-1", "billing")
	unknown := "0190a0b0-0000-7000-8000-00000000dead"
	long := func(n int) string { return strings.Repeat("w", n) }
	queues := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("q%d", i)
		}
		return out
	}
	q := []string{"nothing-here"}

	bad := map[string]map[string]map[string]any{
		"claim": {
			"no worker":        {"queues": q},
			"empty worker":     {"worker_id": "", "queues": q},
			"blank worker":     {"worker_id": "   ", "queues": q},
			"long worker":      {"worker_id": long(201), "queues": q},
			"control worker":   {"worker_id": "a\nb", "queues": q},
			"worker type":      {"worker_id": 7, "queues": q},
			"no queues":        {"worker_id": "s"},
			"empty queues":     {"worker_id": "s", "queues": []string{}},
			"null queues":      {"worker_id": "s", "queues": nil},
			"21 queues":        {"worker_id": "s", "queues": queues(21)},
			"empty queue":      {"worker_id": "s", "queues": []string{""}},
			"bad queue":        {"worker_id": "s", "queues": []string{"1st"}},
			"long queue":       {"worker_id": "s", "queues": []string{"q" + long(200)}},
			"repeated queue":   {"worker_id": "s", "queues": []string{"a", "a"}},
			"max_tasks 0":      {"worker_id": "s", "queues": q, "max_tasks": 0},
			"max_tasks 101":    {"worker_id": "s", "queues": q, "max_tasks": 101},
			"max_tasks -1":     {"worker_id": "s", "queues": q, "max_tasks": -1},
			"max_tasks 1.5":    {"worker_id": "s", "queues": q, "max_tasks": 1.5},
			"lease 4":          {"worker_id": "s", "queues": q, "lease_seconds": 4},
			"lease 3601":       {"worker_id": "s", "queues": q, "lease_seconds": 3601},
			"lease string":     {"worker_id": "s", "queues": q, "lease_seconds": "60"},
			"unknown property": {"worker_id": "s", "queues": q, "extra": 1},
		},
		"heartbeat": {
			"no task":          {"worker_id": "s-1"},
			"bad task":         {"task_id": "nope", "worker_id": "s-1"},
			"upper task":       {"task_id": strings.ToUpper(held.ID), "worker_id": "s-1"},
			"no worker":        {"task_id": held.ID},
			"empty worker":     {"task_id": held.ID, "worker_id": ""},
			"long worker":      {"task_id": held.ID, "worker_id": long(201)},
			"lease 4":          {"task_id": held.ID, "worker_id": "s-1", "lease_seconds": 4},
			"lease 3601":       {"task_id": held.ID, "worker_id": "s-1", "lease_seconds": 3601},
			"unknown property": {"task_id": held.ID, "worker_id": "s-1", "lease": 60},
		},
		"complete": {
			"no output":        {"task_id": held.ID, "worker_id": "s-1"},
			"no task":          {"worker_id": "s-1", "output": map[string]any{}},
			"bad task":         {"task_id": "nope", "worker_id": "s-1", "output": map[string]any{}},
			"no worker":        {"task_id": held.ID, "output": map[string]any{}},
			"long worker":      {"task_id": held.ID, "worker_id": long(201), "output": map[string]any{}},
			"unknown property": {"task_id": held.ID, "worker_id": "s-1", "output": map[string]any{}, "extra": true},
		},
		"fail": {
			"no error":         {"task_id": held.ID, "worker_id": "s-1", "retryable": true},
			"no code":          {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"message": "m"}, "retryable": true},
			"empty code":       {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": ""}, "retryable": true},
			"lower code":       {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "oops"}, "retryable": true},
			"digit code":       {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "9LIVES"}, "retryable": true},
			"long code":        {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E" + strings.Repeat("X", 100)}, "retryable": true},
			"long message":     {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E", "message": long(2001)}, "retryable": true},
			"error property":   {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E", "detail": "x"}, "retryable": true},
			"no retryable":     {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}},
			"retryable string": {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": "yes"},
			"no worker":        {"task_id": held.ID, "error": map[string]any{"code": "E"}, "retryable": true},
			"bad task":         {"task_id": "nope", "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": true},
			"unknown property": {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": true, "x": 1},
			"negative wait":    {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": true, "retry_after_ms": -1},
			"wait over a day":  {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": true, "retry_after_ms": 86_400_001},
			"wait, final":      {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": false, "retry_after_ms": 5},
			"wait not integer": {"task_id": held.ID, "worker_id": "s-1", "error": map[string]any{"code": "E"}, "retryable": true, "retry_after_ms": 1.5},
		},
	}
	for verb, cases := range bad {
		for name, body := range cases {
			t.Run(verb+"/"+name, func(t *testing.T) {
				checkProblem(t, 422, "PF-VALIDATION", h.taskCall(w, verb, body))
			})
		}
		t.Run(verb+"/not JSON", func(t *testing.T) {
			checkProblem(t, 422, "PF-VALIDATION", h.taskCall(w, verb, "{"))
			checkProblem(t, 422, "PF-VALIDATION", h.taskCall(w, verb, ""))
			checkProblem(t, 422, "PF-VALIDATION", h.taskCall(w, verb, "[]"))
		})
	}
	// The held task survived every refused call.
	h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": held.ID, "worker_id": "s-1"}), nil)

	// The bounds themselves are accepted.
	for name, body := range map[string]map[string]any{
		"long worker": {"worker_id": long(200), "queues": q},
		"20 queues":   {"worker_id": "s", "queues": queues(20)},
		"long queue":  {"worker_id": "s", "queues": []string{"q" + long(199)}},
		"max_tasks":   {"worker_id": "s", "queues": q, "max_tasks": 1},
		"max_tasks ↑": {"worker_id": "s", "queues": q, "max_tasks": 100},
		"lease 5":     {"worker_id": "s", "queues": q, "lease_seconds": 5},
		"lease 3600":  {"worker_id": "s", "queues": q, "lease_seconds": 3600},
		"null lease":  {"worker_id": "s", "queues": q, "lease_seconds": nil},
	} {
		t.Run("claim ok/"+name, func(t *testing.T) {
			var out engine.ClaimResponse
			res := h.taskCall(w, "claim", body)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			res.json(t, &out)
			if len(out.Tasks) != 0 {
				t.Fatalf("claimed %d tasks", len(out.Tasks))
			}
		})
	}
	for _, n := range []int{5, 3600} {
		var l engine.Lease
		h.must(200, h.taskCall(w, "heartbeat", map[string]any{"task_id": held.ID, "worker_id": "s-1", "lease_seconds": n}), &l)
		if d := time.Until(l.LeaseExpiresAt); d < time.Duration(n-2)*time.Second || d > time.Duration(n+1)*time.Second {
			t.Fatalf("lease_seconds %d: expires in %s", n, d)
		}
	}
	// Valid bodies about an unknown task reach the lookup: 404.
	h.problem(404, "PF-NOT-FOUND", h.taskCall(w, "heartbeat", map[string]any{"task_id": unknown, "worker_id": long(200), "lease_seconds": 3600}))
	h.problem(404, "PF-NOT-FOUND", h.taskCall(w, "complete", complete(unknown, "s-1", map[string]any{})))
	h.problem(404, "PF-NOT-FOUND", h.taskCall(w, "fail", map[string]any{"task_id": unknown, "worker_id": "s-1",
		"error": map[string]any{"code": "E" + strings.Repeat("X", 99), "message": long(2000)}, "retryable": false}))
	h.problem(404, "PF-NOT-FOUND", h.taskCall(w, "fail", map[string]any{"task_id": unknown, "worker_id": "s-1",
		"error": map[string]any{"code": "E"}, "retryable": true}))
	for _, wait := range []int{0, 86_400_000} {
		h.problem(404, "PF-NOT-FOUND", h.taskCall(w, "fail", map[string]any{"task_id": unknown, "worker_id": "s-1",
			"error": map[string]any{"code": "E"}, "retryable": true, "retry_after_ms": wait}))
	}

	// List query parameters.
	for _, query := range []string{"?status=open", "?status=LEASED", "?queue=1st", "?limit=0", "?limit=101", "?cursor=forged", "?other=1", "?status=ready&status=leased"} {
		h.problem(422, "PF-VALIDATION", h.get(ePath(h)+"/tasks"+query, op))
	}
	h.must(200, h.get(ePath(h)+"/tasks?limit=100&status=leased&queue=billing", op), nil)
}

func TestWorkerTaskAccess(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "env-worker")
	h, op, E := f.h, f.op, ePath(f.h)
	w := h.workerToken("access-worker", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID})
	f.start(f.charge, "wt-access", map[string]any{"amount": 3})
	task := h.claimOne(w, "a-1", "billing")
	bodies := map[string]any{
		"claim":     map[string]any{"worker_id": "a-1", "queues": []string{"billing"}},
		"heartbeat": map[string]any{"task_id": task.ID, "worker_id": "a-1"},
		"complete":  complete(task.ID, "a-1", map[string]any{"receipt": "r"}),
		"fail":      failure(task.ID, "a-1", "E", true),
	}

	// 401 without a token.
	for verb, body := range bodies {
		h.problem(401, "PF-UNAUTHENTICATED", h.taskCall("", verb, body))
	}
	h.problem(401, "PF-UNAUTHENTICATED", h.get(E+"/tasks", ""))

	// People do not claim work, whatever their role; workers do not list.
	_, viewer := h.user("vera", "viewer", wtEnv(h))
	for _, tok := range []string{viewer, op} {
		for verb, body := range bodies {
			h.problem(403, "PF-FORBIDDEN", h.taskCall(tok, verb, body))
		}
	}
	h.must(200, h.get(E+"/tasks", viewer), nil)
	h.problem(403, "PF-FORBIDDEN", h.get(E+"/tasks", w))
	// A worker granted elsewhere has no access here.
	other := h.environment(h.ws.ProjectID, "staging")
	OE := h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)
	narrow := h.workerToken("narrow-worker", identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: other.ID})
	h.problem(403, "PF-FORBIDDEN", h.taskCall(narrow, "claim", bodies["claim"]))

	// 404: an unknown environment, a task of another environment.
	gone := h.envPath(h.ws.TenantID, h.ws.ProjectID, "0190a0b0-0000-7000-8000-00000000dead")
	h.problem(404, "PF-NOT-FOUND", h.post(gone+"/tasks/claim", w, bodies["claim"]))
	h.problem(404, "PF-NOT-FOUND", h.get(gone+"/tasks", op))
	h.problem(404, "PF-NOT-FOUND", h.post(OE+"/tasks/heartbeat", w, bodies["heartbeat"]))
	h.problem(404, "PF-NOT-FOUND", h.post(OE+"/tasks/complete", w, bodies["complete"]))
	h.problem(404, "PF-NOT-FOUND", h.post(OE+"/tasks/fail", w, bodies["fail"]))
	is.Equal(len(h.listTasks(op, "").Items), 1)
	var empty taskPage
	h.must(200, h.get(OE+"/tasks", op), &empty)
	is.Equal(len(empty.Items), 0)
	var none engine.ClaimResponse // its own environment has nothing
	h.must(200, h.post(OE+"/tasks/claim", narrow, map[string]any{"worker_id": "n", "queues": []string{"billing"}}), &none)
	is.Equal(len(none.Tasks), 0)

	// The compatibility path serves the same routes.
	h.must(200, h.post(strings.TrimPrefix(E, "/api/v1")+"/tasks/heartbeat", w, bodies["heartbeat"]), nil)
	h.must(200, h.taskCall(w, "complete", bodies["complete"]), nil)
}

// An attempt nobody claims by its claim deadline (here 300 ms before its
// 3 s timeout) certainly did not run: it fails as TASK_NOT_CLAIMED under
// the retry policy, so once the attempts are spent the incident is
// PF-TASK-RETRIES-EXHAUSTED, not PF-TASK-AMBIGUOUS, even for an unsafe
// action.
func TestWorkerUnclaimedAttemptTimesOut(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	h.mustPublish(op, "actions", `kind: action
id: acme/unclaimed
version: 1
sideEffect: unsafe
input: {type: object}
output: {type: object}
timeout: 3s
retry: {maxAttempts: 1}
worker: nobody
`, "unclaimed-action")
	wf := h.mustPublish(op, "workflows", `kind: workflow
id: acme/unclaimed-flow
version: 1
steps:
  - id: call
    action: acme/unclaimed@1
    with: {}
`, "unclaimed-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "unclaimed-activation", "").ID
	run := h.mustStartRun(op, map[string]any{"activation_id": act}, "unclaimed-run")
	r := h.waitRun(op, run.ID, "suspended")
	is.Equal(r.Status, "suspended")
	var incs []engine.Incident
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID+"/incidents", op), &incs)
	is.Equal(len(incs), 1)
	is.Equal(incs[0].Code, "PF-TASK-RETRIES-EXHAUSTED")
	is.Equal(incs[0].Attempt, 1)
	is.Equal(incs[0].Error.Code, "TASK_NOT_CLAIMED")
}
