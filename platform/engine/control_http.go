package engine

import (
	"database/sql"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

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

// replay serves GET E/runs/{run}/replay.
func (s *Service) replay(c *api.Call) error {
	out, err := s.Replay(c.Context(), c.PathScope(), c.Params.ByName("run"))
	if err != nil {
		return err
	}
	return c.OK(out)
}

// signal serves POST E/runs/{run}/signals.
func (s *Service) signal(c *api.Call) error {
	var req SignalRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if _, err := checkSignal(&req); err != nil {
		return err
	}
	id, err := c.UUIDParam("run", "run")
	if err != nil {
		return err
	}
	ctx, sc := c.Context(), c.PathScope()
	files := FileAccess{Environment: mayReadFiles(c, sc)}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		out, err := s.Signal(ctx, tx, sc, id, req, files)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: out}, nil
	}, s.notify)
}

// pause serves POST E/runs/{run}/pause (on) and /resume (!on).
func (s *Service) pause(on bool) func(c *api.Call) error {
	change := s.Resume
	if on {
		change = s.Pause
	}
	return func(c *api.Call) error {
		var req PauseRequest
		if err := c.DecodeOptional(&req); err != nil {
			return err
		}
		if err := checkPause(req.Reason); err != nil {
			return err
		}
		id, err := c.UUIDParam("run", "run")
		if err != nil {
			return err
		}
		ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
		return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
			run, err := change(ctx, tx, sc, by, id, req.Reason)
			if err != nil {
				return nil, err
			}
			return &api.Result{Body: run, Revision: run.AcceptedSequence}, nil
		}, s.notify)
	}
}
