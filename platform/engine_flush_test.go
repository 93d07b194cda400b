package platform_test

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
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
