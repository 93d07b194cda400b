package platform_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"github.com/agentbridge/bridge/platform/platformtest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

// callerWorkflow runs acme/flow (platformtest.FlowWorkflow) as a child.
const (
	callerWorkflow = `kind: workflow
id: acme/caller
version: 1
input:
  type: object
  required: [name]
  properties:
    name: {type: string}
    mode: {type: string}
    pause: {type: string}
output:
  type: object
  properties:
    greeting: {type: string}
steps:
  - id: child
    workflow: acme/flow@1
    with:
      name: =input.name
      mode: '=has(input.mode) ? input.mode : "plain"'
      pause: '=has(input.pause) ? input.pause : "1s"'
  - id: done
    succeed:
      result:
        greeting: =steps.child.output.greeting
`
)

func (h *harness) setupApproval(op string) string {
	h.t.Helper()
	wf := h.mustPublish(op, "workflows", platformtest.ApprovalWorkflow, "approval-workflow").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "approval-activation", "").ID
}

// startWaiting starts a run of activation act and waits until it waits
// (for the approval signal).
func (h *harness) startWaiting(tok, act, key string) engine.Run {
	h.t.Helper()
	run := h.mustStartRun(tok, map[string]any{"activation_id": act}, key)
	h.waitRun(tok, run.ID, "waiting")
	return run
}

func (h *harness) signalRun(tok, id string, body any, key string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return h.do(req{method: "POST", path: ePath(h) + "/runs/" + id + "/signals", token: tok, body: body, hdr: hdr})
}

func (h *harness) pauseRun(tok, id, verb string, body any, key string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return h.do(req{method: "POST", path: ePath(h) + "/runs/" + id + "/" + verb, token: tok, body: body, hdr: hdr})
}

func TestSignalDeliversAndValidates(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupApproval(op)
	run := h.startWaiting(op, act, "sig-1")
	base := ePath(h) + "/runs/"

	// Bad input changes nothing.
	for _, body := range []any{
		map[string]any{},
		map[string]any{"name": ""},
		map[string]any{"name": "   "},
		map[string]any{"name": strings.Repeat("n", 201)},
		map[string]any{"name": "order.approved", "extra": 1},
		map[string]any{"name": "order.approved", "payload": map[string]any{"approver": 7}},
		map[string]any{"name": "order.approved", "payload": map[string]any{}},
	} {
		h.problem(422, "PF-VALIDATION", h.signalRun(op, run.ID, body, ""))
	}
	// The payload is at most 1 MiB; a body far beyond it is refused before
	// it is read.
	h.problem(422, "PF-VALIDATION", h.signalRun(op, run.ID, mibApproval(1), ""))
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.signalRun(op, run.ID, mibApproval(64<<10), ""))
	h.problem(404, "PF-NOT-FOUND", h.signalRun(op, "0194f3a0-0000-7000-8000-000000000000", map[string]any{"name": "x"}, ""))
	h.problem(401, "PF-UNAUTHENTICATED", h.signalRun("", run.ID, map[string]any{"name": "x"}, ""))
	_, viewer := h.user("viewer-sig", "viewer", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.signalRun(viewer, run.ID, map[string]any{"name": "x"}, ""))
	var cur engine.Run
	h.must(200, h.get(base+run.ID, op), &cur)
	is.Equal(cur.AcceptedSequence, run.AcceptedSequence) // nothing accepted

	// A 200-character name passes the bound; the workflow declares no such
	// signal.
	p := h.problem(422, "PF-VALIDATION", h.signalRun(op, run.ID, map[string]any{"name": strings.Repeat("n", 200)}, ""))
	is.True(strings.Contains(p.Message, "declares no signal"))

	// The waiting step receives its signal; an idempotent replay answers
	// the same acceptance.
	body := map[string]any{"name": "order.approved", "payload": map[string]any{"approver": "ada"}}
	var acc engine.SignalAccepted
	h.must(202, h.signalRun(op, run.ID, body, "approve-1"), &acc)
	is.Equal(acc.RunID, run.ID)
	var again engine.SignalAccepted
	h.must(202, h.signalRun(op, run.ID, body, "approve-1"), &again)
	is.Equal(again, acc)
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.signalRun(op, run.ID, map[string]any{"name": "order.approved", "payload": map[string]any{"approver": "bob"}}, "approve-1"))
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"approver":"ada"}`)
	kinds := historyKinds(h.runHistory(op, run.ID))
	is.Equal(kinds[len(kinds)-1], "signal_received")
	var rep engine.ReplayReport
	h.must(200, h.get(base+run.ID+"/replay", op), &rep)
	is.Equal(rep.Verdict, "consistent")
	is.Equal(rep.Events, len(kinds))
	h.problem(404, "PF-NOT-FOUND", h.get(base+"0194f3a0-0000-7000-8000-000000000000/replay", op))
	// A tampered state no longer matches its history. (An ended run's
	// state is stored packed: it is tampered with as JSON.)
	var stored []byte
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT state FROM platform_runs WHERE id = ?`, run.ID).Scan(&stored))
	plain, err := store.Unpack(stored)
	is.NoErr(err)
	is.NoErr(h.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE platform_runs SET state = json_set(?, '$.vars.tampered', 1) WHERE id = ?`, string(plain), run.ID)
		return err
	}))
	h.must(200, h.get(base+run.ID+"/replay", op), &rep)
	is.Equal(rep.Verdict, "inconsistent")
	// An ended run accepts no signals.
	h.problem(409, "PF-RUNTIME-STATE", h.signalRun(op, run.ID, body, ""))

	// A payload of exactly 1 MiB is accepted.
	big := h.startWaiting(op, act, "sig-mib")
	h.must(202, h.signalRun(op, big.ID, mibApproval(0), ""), nil)
	h.waitRun(op, big.ID, "succeeded")
}

func TestPauseHoldsEventsUntilResume(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupApproval(op)
	run := h.startWaiting(op, act, "pause-1")

	h.problem(422, "PF-IDEMPOTENCY", h.pauseRun(op, run.ID, "pause", map[string]any{}, ""))
	h.problem(422, "PF-VALIDATION", h.pauseRun(op, run.ID, "pause", map[string]any{"reason": strings.Repeat("r", 2001)}, "p-bad"))
	h.problem(422, "PF-VALIDATION", h.pauseRun(op, run.ID, "pause", map[string]any{"why": "x"}, "p-bad2"))
	_, viewer := h.user("viewer-pause", "viewer", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.pauseRun(viewer, run.ID, "pause", map[string]any{}, "p-viewer"))

	var paused engine.Run
	h.must(200, h.pauseRun(op, run.ID, "pause", map[string]any{"reason": strings.Repeat("r", 2000)}, "p-1"), &paused)
	is.True(paused.Paused)
	// Pausing again changes nothing.
	var twice engine.Run
	h.must(200, h.pauseRun(op, run.ID, "pause", nil, "p-2"), &twice)
	is.True(twice.Paused)
	is.Equal(twice.AcceptedSequence, paused.AcceptedSequence)

	// A signal the paused state refuses answers now rather than being held
	// and dropped on resume.
	h.problem(422, "PF-VALIDATION", h.signalRun(op, run.ID, map[string]any{"name": "order.approved", "payload": map[string]any{"approver": 7}}, ""))
	var acc engine.SignalAccepted
	h.must(202, h.signalRun(op, run.ID, map[string]any{"name": "order.approved", "payload": map[string]any{"approver": "ada"}}, ""), &acc)
	is.True(acc.Held)
	is.Equal(acc.AcceptedSequence, paused.AcceptedSequence)
	// Held across a restart, and not applied while paused.
	h.restart(true)
	op = h.localToken()
	time.Sleep(3 * engine.PollInterval)
	var cur engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &cur)
	is.Equal(cur.Status, "waiting")
	is.True(cur.Paused)

	var resumed engine.Run
	h.must(200, h.pauseRun(op, run.ID, "resume", map[string]any{}, "r-1"), &resumed)
	is.True(!resumed.Paused)
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"approver":"ada"}`)
	h.problem(409, "PF-RUNTIME-STATE", h.pauseRun(op, run.ID, "pause", nil, "p-3"))
	h.problem(409, "PF-RUNTIME-STATE", h.pauseRun(op, run.ID, "resume", nil, "r-2"))
}

func TestCancelPausedRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupApproval(op)
	run := h.startWaiting(op, act, "pc-1")
	h.must(200, h.pauseRun(op, run.ID, "pause", nil, "pc-p"), nil)
	var r engine.Run
	h.must(200, h.cancelRun(op, run.ID, map[string]any{"reason": "not needed"}), &r)
	is.Equal(r.Status, "cancelled")
	is.True(!r.Paused)
}

func TestChildRunsReportToTheirCaller(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	setupFlow(h)
	wf := h.mustPublish(op, "workflows", callerWorkflow, "caller-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "caller-activation", "").ID

	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}}, "caller-1")
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"greeting":"hello ada"}`)

	// A failing child fails its caller's step, so the caller fails.
	bad := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada", "mode": "fail"}}, "caller-2")
	failed := h.waitRun(op, bad.ID, "failed")
	is.True(failed.State.Error != nil)
	is.Equal(failed.State.Error.Code, "ASKED_TO_FAIL")

	// Cancelling the caller cancels a waiting child.
	wait := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada", "mode": "wait", "pause": "1h"}}, "caller-3")
	h.waitRun(op, wait.ID, "running")
	var childID string
	deadline := time.Now().Add(10 * time.Second)
	for childID == "" {
		is.NoErr(h.d.DB.Reader().QueryRow(`SELECT coalesce(max(id), '') FROM platform_runs WHERE caller_run_id = ?`, wait.ID).Scan(&childID))
		if time.Now().After(deadline) {
			t.Fatal("no child run")
		}
	}
	h.waitRun(op, childID, "waiting")
	h.must(200, h.cancelRun(op, wait.ID, map[string]any{"reason": "stop"}), nil)
	h.waitRun(op, childID, "cancelled")

	// A paused child is cancelled too: a cancellation is never held.
	held := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada", "mode": "wait", "pause": "1h"}}, "caller-4")
	h.waitRun(op, held.ID, "running")
	childID = ""
	for childID == "" {
		is.NoErr(h.d.DB.Reader().QueryRow(`SELECT coalesce(max(id), '') FROM platform_runs WHERE caller_run_id = ?`, held.ID).Scan(&childID))
		if time.Now().After(deadline) {
			t.Fatal("no child run")
		}
	}
	h.waitRun(op, childID, "waiting")
	h.must(200, h.pauseRun(op, childID, "pause", nil, "caller-4-pause"), nil)
	h.must(200, h.cancelRun(op, held.ID, map[string]any{"reason": "stop"}), nil)
	child := h.waitRun(op, childID, "cancelled")
	is.True(!child.Paused)
}

// TestOutboxPublishesLifecycleEvents: run lifecycle events reach the
// broker through the outbox.
func TestOutboxPublishesLifecycleEvents(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)

	var mu sync.Mutex
	seen := map[string][]string{}
	sub, err := h.d.Broker.Subscribe(context.Background(), "test-outbox", []string{engine.OutboxTopic}, func(_ context.Context, m broker.Message) error {
		var ev engine.LifecycleEvent
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if m.Headers["event-type"] != ev.Type || m.Headers["event-id"] != ev.ID {
			t.Errorf("headers %v do not match %+v", m.Headers, ev)
		}
		seen[ev.Run.ID] = append(seen[ev.Run.ID], ev.Type)
		return nil
	})
	is.NoErr(err)
	defer sub.Close()

	ok := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}}, "ob-1")
	bad := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada", "mode": "fail"}}, "ob-2")
	h.waitRun(op, ok.ID, "succeeded")
	h.waitRun(op, bad.ID, "failed")
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		a, b := strings.Join(seen[ok.ID], ","), strings.Join(seen[bad.ID], ",")
		mu.Unlock()
		if a == "platform.run.started,platform.run.succeeded" && b == "platform.run.started,platform.run.failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events: %q, %q", a, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Relayed events are cleared (right after their publication).
	for {
		var n int
		is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_outbox`).Scan(&n))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events left in the outbox", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLegacyRunCanOnlyBeCancelled: a run whose stored state this version
// cannot show answers reads with 409 PF-LEGACY-UNAVAILABLE; cancelling it
// replaces the state with an explicit unavailable terminal state.
func TestLegacyRunCanOnlyBeCancelled(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupApproval(op)
	run := h.startWaiting(op, act, "legacy-1")
	is.NoErr(h.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE platform_runs SET state = json_set(state, '$.format', 0) WHERE id = ?`, run.ID)
		return err
	}))
	base := ePath(h) + "/runs/" + run.ID
	h.problem(409, "PF-LEGACY-UNAVAILABLE", h.get(base, op))
	h.problem(409, "PF-LEGACY-UNAVAILABLE", h.get(base+"/replay", op))
	h.problem(409, "PF-LEGACY-UNAVAILABLE", h.signalRun(op, run.ID, map[string]any{"name": "order.approved", "payload": map[string]any{"approver": "x"}}, ""))
	h.problem(409, "PF-LEGACY-UNAVAILABLE", h.pauseRun(op, run.ID, "pause", nil, "legacy-pause"))

	var r engine.Run
	h.must(200, h.cancelRun(op, run.ID, map[string]any{"reason": "cannot be shown"}), &r)
	is.Equal(r.Status, "cancelled")
	is.Equal(r.State.Error.Code, "PF-LEGACY-UNAVAILABLE")
	is.True(*r.ExternalEffectsMayContinue)
	var again engine.Run
	h.must(200, h.get(base, op), &again)
	is.Equal(again.Status, "cancelled")
	var timers int
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_run_timers WHERE run_id = ?`, run.ID).Scan(&timers))
	is.Equal(timers, 0)
}

// largeWorkflow keeps two copies of its input, then waits for a signal, so a
// run of a 600 KB input holds over 1 MiB of state.
const largeWorkflow = `kind: workflow
id: acme/large
version: 1
input:
  type: object
  required: [blob]
  properties:
    blob: {type: string}
vars:
  copy: {type: string, default: ""}
steps:
  - id: keep
    set:
      copy: =input.blob
  - id: approval
    signal: order.approved
    deadline: 1h
  - id: done
    succeed:
      result: {}
`

// Cancelling a run whose state is over 1 MiB answers the large-run
// acknowledgment without /state; a smaller run answers the run itself.
func TestCancelLargeRunAcknowledgesWithoutState(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	wf := h.mustPublish(op, "workflows", largeWorkflow, "large-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "large-activation", "").ID

	big := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"blob": strings.Repeat("x", 600<<10)}}, "large-1")
	h.waitRun(op, big.ID, "waiting")
	var ack map[string]any
	h.must(200, h.cancelRun(op, big.ID, map[string]any{"reason": "too big to show"}), &ack)
	is.Equal(ack["id"], big.ID)
	is.Equal(ack["status"], "cancelled")
	is.Equal(ack["capacity_limited"], true)
	is.Equal(ack["external_effects_may_continue"], false) // only a signal wait was issued
	is.True(ack["accepted_sequence"].(float64) > 0)
	is.Equal(ack["omitted"], []any{map[string]any{"path": "/state", "reason": "resource_limit"}})
	_, hasState := ack["state"]
	is.True(!hasState)
	// A second cancel answers the same acknowledgment and records nothing.
	var again map[string]any
	h.must(200, h.cancelRun(op, big.ID, map[string]any{"reason": "again"}), &again)
	is.Equal(again, ack)
	// The run itself can still be read in full.
	is.Equal(h.waitRun(op, big.ID, "cancelled").Status, "cancelled")

	small := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"blob": "x"}}, "large-2")
	h.waitRun(op, small.ID, "waiting")
	var run map[string]any
	h.must(200, h.cancelRun(op, small.ID, map[string]any{"reason": "small"}), &run)
	_, hasState = run["state"]
	is.True(hasState)
	_, limited := run["capacity_limited"]
	is.True(!limited)
}

// mibApproval is an order.approved signal whose payload is 1 MiB plus over
// bytes.
func mibApproval(over int) map[string]any {
	const frame = len(`{"approver":""}`)
	return map[string]any{"name": "order.approved", "payload": map[string]any{"approver": strings.Repeat("a", 1<<20-frame+over)}}
}

// bufferWorkflow waits an hour before it waits for ping, so pings buffer.
const bufferWorkflow = `kind: workflow
id: acme/buffer
version: 1
steps:
  - id: idle
    wait: 1h
  - id: ping
    signal: ping
`

// The 1,001st buffered signal of a run is the run's operation capacity
// (429 PF-OPERATION-CAPACITY), not the server's request capacity, and
// changes nothing.
func TestBufferedSignalsAreBounded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("1,000 signals; the kernel's TestEventLimits checks the bound in -short")
	}
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	wf := h.mustPublish(op, "workflows", bufferWorkflow, "buffer-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "buffer-activation", "").ID
	run := h.startWaiting(op, act, "buffer-1")
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 / 8 {
				res := h.signalRun(op, run.ID, map[string]any{"name": "ping"}, "")
				mu.Lock()
				statuses[res.status]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	is.Equal(statuses, map[int]int{202: 1000})
	var before engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &before)
	h.problem(429, "PF-OPERATION-CAPACITY", h.signalRun(op, run.ID, map[string]any{"name": "ping"}, ""))
	var after engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &after)
	is.Equal(after.AcceptedSequence, before.AcceptedSequence)
}
