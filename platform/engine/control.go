package engine

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
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

// registerControl adds signals, pause, resume and replay.
func (s *Service) registerControl(add func(api.Route)) {
	add(api.Route{Method: "GET", Path: base + "/{run}/replay", Capability: auth.CapRunRead, Handler: s.replay,
		OperationID: "replayRun", Tag: tagRuns, Summary: "Replay a run's history",
		Description: "Feeds the run's recorded events to the kernel again, from an empty state, and compares the result with the " +
			"stored state: consistent, inconsistent (an event refused, out of order, or a different state) or incomplete " +
			"(events missing). It uses recorded facts only.",
		Response: ReplayReport{}})
	add(api.Route{Method: "POST", Path: base + "/{run}/signals", Capability: auth.CapRunSignal, Idempotency: api.PolicyOptional,
		Handler: s.signal, OperationID: "signalRun", Tag: tagRuns, Summary: "Send a signal to a run", Status: http.StatusAccepted,
		Description: "Accepts a named signal for a run that has not ended. The signal step waiting longest for that name receives it; " +
			"a signal nobody waits for yet is buffered (at most 1000 per run: 429 PF-OPERATION-CAPACITY). A signal accepted strictly " +
			"before the waiting step's deadline wins; accepted exactly at the deadline it is too late and is buffered. A payload that " +
			"violates a waiting step's schema answers 422 PF-VALIDATION and changes nothing; an ended run answers 409 PF-RUNTIME-STATE. " +
			"While the run is paused the signal is checked against the paused state, then held (held: true) and applied in arrival order on resume.",
		Request: SignalRequest{}, Response: SignalAccepted{}, MaxBody: payloadBodyBytes})
	add(api.Route{Method: "POST", Path: base + "/{run}/pause", Capability: auth.CapRunCancel, Idempotency: api.PolicyRequired,
		Handler: s.pause(true), OperationID: "pauseRun", Tag: tagRuns, Summary: "Pause a run",
		Description: "Stops a run from advancing: no step starts, timers and dispatches wait, and events that arrive (task outcomes, " +
			"signals, human task completions, child run ends) are held in arrival order. Work already issued may still finish. " +
			"Cancellation still applies at once. Pausing a paused run answers the run unchanged; an ended run answers 409 PF-RUNTIME-STATE.",
		Request: PauseRequest{}, Response: Run{}, ETag: true})
	add(api.Route{Method: "POST", Path: base + "/{run}/resume", Capability: auth.CapRunCancel, Idempotency: api.PolicyRequired,
		Handler: s.pause(false), OperationID: "resumeRun", Tag: tagRuns, Summary: "Resume a paused run",
		Description: "Applies the held events in arrival order, then timers that fell due meanwhile (late, at the resume time) and " +
			"pending dispatches. Resuming a run that is not paused answers it unchanged; an ended run answers 409 PF-RUNTIME-STATE.",
		Request: PauseRequest{}, Response: Run{}, ETag: true})
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

// replay serves GET E/runs/{run}/replay: the run's recorded events are fed
// to the kernel again from an empty state and the result compared with
// the stored state, from recorded facts only (no clock, no I/O).
func (s *Service) replay(c *api.Call) error {
	q := s.db.Reader()
	r, p, err := s.read(c, q)
	if err != nil {
		return err
	}
	if err := refuseArchived(c.Context(), q, r.ID); err != nil {
		return err
	}
	var history []kernel.Event
	for after := int64(0); ; {
		rows, err := s.listEvents(c.Context(), q, r.ID, after, 1000)
		if err != nil {
			return err
		}
		for _, row := range rows {
			var e kernel.Event
			if err := json.Unmarshal(row.Payload, &e); err != nil {
				return fmt.Errorf("engine: stored event %d of run %s: %w", row.Seq, r.ID, err)
			}
			history = append(history, e)
			after = row.Seq
		}
		if len(rows) < 1000 {
			break
		}
	}
	res := kernel.Replay(p.p, history, r.State)
	return c.OK(ReplayReport{RunID: r.ID, Verdict: string(res.Verdict), Seq: res.Seq, Events: len(history), Detail: res.Detail})
}

// signal serves POST E/runs/{run}/signals.
func (s *Service) signal(c *api.Call) error {
	var req SignalRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := checkText("name", req.Name, MaxSignalNameLen, true); err != nil {
		return err
	}
	payload := bytes.TrimSpace(req.Payload)
	if len(payload) > MaxPayloadBytes {
		return api.Invalid("/payload", "payload has %d bytes; at most %d are accepted", len(payload), MaxPayloadBytes)
	}
	if _, err := c.UUIDParam("run", "run"); err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		r, p, err := s.read(c, tx)
		if err != nil {
			return nil, err
		}
		if r.State.Status.Terminal() {
			return nil, api.Conflict(kernel.CodeRuntimeState, "run %s has ended (status %s); it accepts no signals", r.ID, r.State.Status)
		}
		payload, err := s.attachFiles(c.Context(), tx, r.Environment, r.ID, "/payload", payload, p.files.Signals[req.Name],
			FileAccess{Environment: mayReadFiles(c, c.PathScope())})
		if err != nil {
			return nil, err
		}
		r, _, held, err := s.Deliver(c.Context(), tx, r.Environment, r.ID, kernel.Event{Kind: kernel.EventSignalReceived,
			Signal: req.Name, Payload: json.RawMessage(payload)})
		if err != nil {
			return nil, refusal(err)
		}
		return &api.Result{Body: SignalAccepted{RunID: r.ID, Name: req.Name, AcceptedSequence: r.State.Seq, Held: held,
			Status: string(r.State.Status)}}, nil
	}, s.notify)
}

// pause serves POST E/runs/{run}/pause (on) and /resume (!on).
func (s *Service) pause(on bool) func(c *api.Call) error {
	return func(c *api.Call) error {
		var req PauseRequest
		if err := c.DecodeOptional(&req); err != nil {
			return err
		}
		if err := checkText("reason", req.Reason, MaxReasonLen, false); err != nil {
			return err
		}
		if _, err := c.UUIDParam("run", "run"); err != nil {
			return err
		}
		return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
			r, p, err := s.read(c, tx)
			if err != nil {
				return nil, err
			}
			if r.State.Status.Terminal() {
				return nil, api.Conflict(kernel.CodeRuntimeState, "run %s has ended (status %s)", r.ID, r.State.Status)
			}
			if r.Paused != on {
				if err := s.setPaused(c, tx, &r, on, req.Reason); err != nil {
					return nil, err
				}
			}
			return &api.Result{Body: view(r, p), Revision: r.State.Seq}, nil
		}, s.notify)
	}
}

// setPaused flips a run's paused flag with its log line and outbox event;
// resuming flags the run for the loop (held events, late timers).
func (s *Service) setPaused(c *api.Call, tx *sql.Tx, r *runRow, on bool, reason string) error {
	ctx := c.Context()
	typ, what := EventRunResumed, "resumed"
	if on {
		typ, what = EventRunPaused, "paused"
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET paused = ?, needs_work = CASE WHEN ? THEN needs_work ELSE 1 END WHERE id = ?`,
		on, on, r.ID); err != nil {
		return err
	}
	r.Paused = on
	msg := "run " + what + " by " + c.Caller.Principal.ID
	if reason != "" {
		msg += ": " + reason
	}
	if err := writeLog(ctx, tx, r.ID, logLine{At: s.timestamp(), Seq: r.State.Seq, Type: "run_" + what, Message: msg,
		Data: map[string]string{"principal_id": c.Caller.Principal.ID, "reason": reason}}); err != nil {
		return err
	}
	s.dispatchPending.Store(true)
	return s.emitOutbox(ctx, tx, r, typ, map[string]string{"principal_id": c.Caller.Principal.ID, "reason": reason})
}
