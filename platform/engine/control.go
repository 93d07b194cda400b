package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
)

// Signal limits.
const (
	MaxSignalNameLen = 200
	MaxPayloadBytes  = 1 << 20
)

// SignalRequest is the body of POST E/runs/{run}/signals.
type SignalRequest struct {
	Name    string          `json:"name" api:"required" doc:"the signal name a signal step waits for, 1 to 200 characters"`
	Payload json.RawMessage `json:"payload,omitempty" doc:"any JSON value, at most 1 MiB; validated against the schema of the signal steps that wait for that name"`
}

// SignalAccepted answers POST E/runs/{run}/signals.
type SignalAccepted struct {
	RunID string `json:"run_id" format:"uuid"`
	Name  string `json:"name"`
	// AcceptedSequence is the sequence of the signal_received event (the
	// run's last accepted event while held).
	AcceptedSequence int64 `json:"accepted_sequence"`
	// Held: the run is paused; the signal is applied in arrival order when
	// it resumes.
	Held   bool   `json:"held"`
	Status string `json:"status" doc:"the run's status after the signal"`
}

// PauseRequest is the optional body of pause and resume.
type PauseRequest struct {
	Reason string `json:"reason,omitempty" doc:"at most 2000 characters"`
}

// ReplayReport answers GET E/runs/{run}/replay.
type ReplayReport struct {
	RunID   string `json:"run_id" format:"uuid"`
	Verdict string `json:"verdict" doc:"consistent, inconsistent or incomplete"`
	// Seq is the last event replayed, or the first one that disagreed.
	Seq    int64  `json:"seq"`
	Events int    `json:"events" doc:"the recorded events fed to the kernel"`
	Detail string `json:"detail,omitempty" doc:"what disagreed, or what is missing"`
}

// Replay feeds the recorded events of run id of environment sc to the
// kernel again, from an empty state, and compares the result with the
// stored state, from recorded facts only (no clock, no I/O).
func (s *Service) Replay(ctx context.Context, sc auth.Scope, id string) (ReplayReport, error) {
	q := s.db.Reader()
	r, p, err := s.readRun(ctx, q, sc, id)
	if err != nil {
		return ReplayReport{}, err
	}
	if err := refuseArchivedRun(r); err != nil {
		return ReplayReport{}, err
	}
	var history []kernel.Event
	for after := int64(0); ; {
		rows, err := s.listEvents(ctx, q, r.ID, after, 1000)
		if err != nil {
			return ReplayReport{}, err
		}
		for _, row := range rows {
			var e kernel.Event
			if err := json.Unmarshal(row.Payload, &e); err != nil {
				return ReplayReport{}, fmt.Errorf("engine: stored event %d of run %s: %w", row.Seq, r.ID, err)
			}
			history = append(history, e)
			after = row.Seq
		}
		if len(rows) < 1000 {
			break
		}
	}
	res := kernel.Replay(p.p, history, r.State)
	return ReplayReport{RunID: r.ID, Verdict: string(res.Verdict), Seq: res.Seq, Events: len(history), Detail: res.Detail}, nil
}

// checkSignal validates a signal and answers its payload (trimmed).
func checkSignal(req *SignalRequest) (json.RawMessage, error) {
	if err := checkText("name", req.Name, MaxSignalNameLen, true); err != nil {
		return nil, err
	}
	payload := bytes.TrimSpace(req.Payload)
	if len(payload) > MaxPayloadBytes {
		return nil, invalid("/payload", "payload has %d bytes; at most %d are accepted", len(payload), MaxPayloadBytes)
	}
	return payload, nil
}

// Signal delivers the signal req to run id of environment sc (see within
// for tx): the signal step waiting longest for its name receives it, or it
// is buffered; while the run is paused it is checked, then held. files
// says which files the payload may refer to. An ended run is
// PF-RUNTIME-STATE, a payload a waiting step's schema refuses
// PF-VALIDATION.
func (s *Service) Signal(ctx context.Context, tx *sql.Tx, sc auth.Scope, id string, req SignalRequest, files FileAccess) (SignalAccepted, error) {
	payload, err := checkSignal(&req)
	if err != nil {
		return SignalAccepted{}, err
	}
	var out SignalAccepted
	err = s.within(ctx, tx, func(tx *sql.Tx) error {
		r, p, err := s.readRun(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		if r.State.Status.Terminal() {
			return refused(CodeRuntimeState, "run %s has ended (status %s); it accepts no signals", r.ID, r.State.Status)
		}
		payload, err := s.attachFiles(ctx, tx, r.Environment, r.ID, "/payload", payload, p.files.Signals[req.Name], files)
		if err != nil {
			return err
		}
		r, _, held, err := s.Deliver(ctx, tx, r.Environment, r.ID, kernel.Event{Kind: kernel.EventSignalReceived,
			Signal: req.Name, Payload: json.RawMessage(payload)})
		if err != nil {
			return refusal(err)
		}
		out = SignalAccepted{RunID: r.ID, Name: req.Name, AcceptedSequence: r.State.Seq, Held: held, Status: string(r.State.Status)}
		return nil
	})
	return out, err
}

// checkPause validates the reason of a pause or resume.
func checkPause(reason string) error { return checkText("reason", reason, MaxReasonLen, false) }

// Pause stops run id of environment sc from advancing, as principal by
// (see within for tx): no step starts, timers and dispatches wait, and
// events that arrive are held in arrival order. Pausing a paused run
// answers it unchanged; an ended run is PF-RUNTIME-STATE.
func (s *Service) Pause(ctx context.Context, tx *sql.Tx, sc auth.Scope, by, id, reason string) (Run, error) {
	return s.setPause(ctx, tx, sc, by, id, reason, true)
}

// Resume lets paused run id of environment sc advance again, as principal
// by (see within for tx): the held events apply in arrival order, then the
// timers that fell due. Resuming a run that is not paused answers it
// unchanged; an ended run is PF-RUNTIME-STATE.
func (s *Service) Resume(ctx context.Context, tx *sql.Tx, sc auth.Scope, by, id, reason string) (Run, error) {
	return s.setPause(ctx, tx, sc, by, id, reason, false)
}

// setPause is Pause (on) and Resume (!on).
func (s *Service) setPause(ctx context.Context, tx *sql.Tx, sc auth.Scope, by, id, reason string, on bool) (Run, error) {
	if err := checkPause(reason); err != nil {
		return Run{}, err
	}
	var out Run
	err := s.within(ctx, tx, func(tx *sql.Tx) error {
		r, p, err := s.readRun(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		if r.State.Status.Terminal() {
			return refused(CodeRuntimeState, "run %s has ended (status %s)", r.ID, r.State.Status)
		}
		if r.Paused != on {
			if err := s.setPaused(ctx, tx, &r, by, on, reason); err != nil {
				return err
			}
		}
		out = view(r, p)
		return nil
	})
	return out, err
}

// setPaused flips a run's paused flag with its log line and outbox event;
// resuming flags the run for the loop (held events, late timers).
func (s *Service) setPaused(ctx context.Context, tx *sql.Tx, r *runRow, by string, on bool, reason string) error {
	typ, what := EventRunResumed, "resumed"
	if on {
		typ, what = EventRunPaused, "paused"
	}
	if err := setPausedFlag(ctx, tx, r.ID, on); err != nil {
		return err
	}
	r.Paused = on
	msg := "run " + what + " by " + by
	if reason != "" {
		msg += ": " + reason
	}
	if err := writeLog(ctx, tx, r.ID, logLine{At: s.timestamp(), Seq: r.State.Seq, Type: "run_" + what, Message: msg,
		Data: map[string]string{"principal_id": by, "reason": reason}}); err != nil {
		return err
	}
	s.dispatchPending.Store(true)
	return s.emitOutbox(ctx, tx, r, typ, map[string]string{"principal_id": by, "reason": reason})
}
