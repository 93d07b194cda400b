package platform_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/file"
	"github.com/agentbridge/bridge/platform/kernel"
)

// Tests of the paths where the engine writes a run advanced by one
// transaction once, at flush (run row, events, log lines, outbox): the
// rows must land in the order the run's events happened.

// TestFlushRefusedHeldEvent holds two approvals while a run is paused
// (both apply to the paused state); on resume the first ends the run and
// the second no longer applies: it is dropped with an event_refused log
// line (docs/platform-api.md, run logs), written after the lines of the
// event that ended the run, at that event's seq, and the history is the
// history of the first approval alone.
func TestFlushRefusedHeldEvent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupApproval(op)
	run := h.startWaiting(op, act, "flush-refused")
	before := h.runHistory(op, run.ID)

	var paused engine.Run
	h.must(200, h.pauseRun(op, run.ID, "pause", nil, "flush-refused-p"), &paused)
	for _, who := range []string{"ada", "bob"} {
		var acc engine.SignalAccepted
		h.must(202, h.signalRun(op, run.ID, map[string]any{"name": "order.approved", "payload": map[string]any{"approver": who}}, "flush-refused-"+who), &acc)
		is.True(acc.Held)
	}
	h.must(200, h.pauseRun(op, run.ID, "resume", nil, "flush-refused-r"), nil)
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"approver":"ada"}`)

	var logs []engine.LogEntry
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs = listAll[engine.LogEntry](h, op, ePath(h)+"/runs/"+run.ID+"/logs", nil)
		if n := len(logs); n > 0 && logs[n-1].Type == "event_refused" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The refusal is the last line, after the lines of the event that
	// ended the run (flushed first), at that event's seq.
	n := len(logs)
	is.True(n >= 3)
	refused := logs[n-1]
	is.Equal(refused.Type, "event_refused")
	is.Equal(refused.Level, "warn")
	is.True(refused.Seq != nil && *refused.Seq == done.AcceptedSequence)
	is.Equal(refused.NodeID, nil)
	is.Equal(string(refused.Data), "null")
	is.True(strings.HasPrefix(refused.Message, "signal_received refused: "))
	is.True(strings.Contains(refused.Message, "PF-RUNTIME-STATE"))
	is.Equal(logs[n-2].Type, "run_succeeded")
	is.True(logs[n-2].ID < refused.ID)
	is.True(!refused.At.Before(logs[n-2].At))
	is.Equal(len(logs), len(listAll[engine.LogEntry](h, op, ePath(h)+"/runs/"+run.ID+"/logs", qs("type", "event_refused")))+n-1)
	var signals []string
	for _, l := range logs {
		if l.Type == "signal_received" {
			is.Equal(*l.Seq, done.AcceptedSequence)
			signals = append(signals, l.Type)
		}
		if l.Seq != nil {
			is.True(*l.Seq <= done.AcceptedSequence)
		}
	}
	is.Equal(len(signals), 1)

	// The history holds the first approval alone; the refused event left
	// no event, and the inbox is empty.
	hist := h.runHistory(op, run.ID)
	is.Equal(historyKinds(hist), []string{"started", "signal_received"})
	is.Equal(hist[:len(before)], before)
	is.Equal(hist[1].Seq, done.AcceptedSequence)
	is.True(strings.Contains(string(hist[1].Event), `"approver":"ada"`))
	var cur engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &cur)
	is.Equal(cur.AcceptedSequence, done.AcceptedSequence)
	is.Equal(cur.Status, "succeeded")
	var held int
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_run_inbox WHERE run_id = ?`, run.ID).Scan(&held))
	is.Equal(held, 0)
}

// fileEchoWorkflow ends at once with what its input's file is.
const fileEchoWorkflow = `kind: workflow
id: acme/file-echo
version: 1
input:
  type: object
  properties:
    invoice: {type: object, x-file: true}
output: {type: object}
steps:
  - id: done
    succeed:
      result:
        name: '=has(input.invoice) ? input.invoice.name : "none"'
        size: '=has(input.invoice) ? input.invoice.size : 0'
        sha256: '=has(input.invoice) ? input.invoice.sha256 : ""'
`

// TestFlushStartWithInputFile starts runs of a workflow whose input
// declares a file: the run's row is inserted before the file is attached
// (the reference names the run), and the cursor's flush then updates it
// rather than inserting it again (a second insert, or none, fails the
// start). platform_file_refs has no foreign key to the run, so the order
// itself is not observable here. The run ends in its start, its input and
// history carry the file's metadata, the file is referred to by the run,
// and once the run has ended deleting the file keeps nothing for it
// (docs/platform-api.md, Files).
func TestFlushStartWithInputFile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	E := ePath(h)
	act := h.activateHTTP("file-echo", fileEchoWorkflow)
	content := randomBytes(t, 1000)
	invoice := h.uploadFile(op, "invoice.pdf", content, 0)

	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"invoice": map[string]any{"file_id": invoice.ID}}}, "flush-file-1")
	is.Equal(run.Status, "succeeded") // ended in its start transaction
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(done.AcceptedSequence, run.AcceptedSequence)
	var in map[string]map[string]any
	is.NoErr(json.Unmarshal(done.State.Input, &in))
	is.Equal(in["invoice"]["file_id"], invoice.ID)
	is.Equal(in["invoice"]["name"], "invoice.pdf")
	is.Equal(in["invoice"]["sha256"], invoice.SHA256)
	is.Equal(in["invoice"]["size"], float64(len(content)))
	var out map[string]any
	is.NoErr(json.Unmarshal(done.State.Output, &out))
	is.Equal(out, map[string]any{"name": "invoice.pdf", "sha256": invoice.SHA256, "size": float64(len(content))})
	hist := h.runHistory(op, run.ID)
	is.Equal(historyKinds(hist), []string{"started"})
	is.True(strings.Contains(string(hist[0].Event), `"sha256":"`+invoice.SHA256+`"`))
	logs := listAll[engine.LogEntry](h, op, E+"/runs/"+run.ID+"/logs", nil)
	is.Equal(logTypes(logs), []string{"step_started", "run_succeeded"})
	var refs int
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_file_refs WHERE file_id = ? AND run_id = ?`, invoice.ID, run.ID).Scan(&refs))
	is.Equal(refs, 1)

	// The same workflow without the file starts and ends the same way.
	bare := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{}}, "flush-file-2")
	is.Equal(bare.Status, "succeeded")
	is.Equal(string(h.waitRun(op, bare.ID, "succeeded").State.Output), `{"name":"none","sha256":"","size":0}`)

	// The run has ended: deleting the file keeps nothing for it.
	var del file.Deletion
	h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + invoice.ID, token: op}), &del)
	is.Equal(del.RetainedForRuns, 0)
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/files/"+invoice.ID, op))
}

// mismatchAction echoes its input, which its output schema refuses.
const (
	mismatchAction = `kind: action
id: acme/mismatch
version: 1
sideEffect: read_only
input: {type: object}
output:
  type: object
  required: [answer]
  properties:
    answer: {type: string}
connector: echo
`
	mismatchWorkflow = `kind: workflow
id: acme/mismatch-flow
version: 1
steps:
  - id: ask
    action: acme/mismatch@1
    with: {}
  - id: done
    succeed:
      result: {}
`
)

// TestFlushRefusedInStart: the inline echo of a new run's first step
// answers an output its schema refuses, in the run's start transaction,
// where the run's row is not stored yet: the start flushes the row first,
// then notes the refusal (its line names the run by the row's key) at the
// started event's seq. The refusal then fails the step (task_failed with
// OUTPUT_INVALID), which suspends the run on a PF-TASK-FAILED incident.
func TestFlushRefusedInStart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	E := ePath(h)
	act := h.activateHTTP("mismatch", mismatchWorkflow, mismatchAction)

	run := h.mustStartRun(op, map[string]any{"activation_id": act}, "flush-mismatch")
	// The refused output fails the step, which suspends the run on an
	// incident: nobody else would complete a built-in step's task.
	is.Equal(run.Status, "suspended")
	logs := listAll[engine.LogEntry](h, op, E+"/runs/"+run.ID+"/logs", nil)
	is.Equal(logTypes(logs), []string{"step_started", "event_refused", "run_suspended"})
	refused := logs[1]
	is.Equal(refused.Level, "warn")
	is.True(refused.Seq != nil && *refused.Seq == *logs[0].Seq) // logged at the event it refused
	is.Equal(refused.NodeID, nil)
	is.Equal(string(refused.Data), "null")
	is.True(strings.HasPrefix(refused.Message, "task_completed refused: "))
	is.True(strings.Contains(refused.Message, "PF-VALIDATION"))
	hist := h.runHistory(op, run.ID)
	is.Equal(historyKinds(hist), []string{"started", "task_failed"})
	is.Equal(hist[1].Seq, run.AcceptedSequence)
	var incs []engine.Incident
	h.must(200, h.get(E+"/runs/"+run.ID+"/incidents", op), &incs)
	is.Equal(len(incs), 1)
	is.Equal(incs[0].Status, "active")
	is.Equal(incs[0].Code, "PF-TASK-FAILED")
	is.True(incs[0].Error != nil)
	is.Equal(*incs[0].Error, kernel.TaskError{Code: "OUTPUT_INVALID", Message: "the output does not match the output schema"})
}
