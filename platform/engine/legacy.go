package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentbridge/bridge/platform/kernel"
)

// cancelLegacy cancels a run whose state cannot be shown (docs/platform-api.md: "cancelling
// it still works and replaces the state with an explicit unavailable
// terminal state"): the state becomes a cancelled state of the current
// format that says so, its timers, inbox, dispatches and worker tasks go,
// and the answer is the new state. No kernel event is appended: the old
// history cannot be stepped. Work issued earlier may still finish.
func (s *Service) cancelLegacy(ctx context.Context, tx *sql.Tx, r runRow, reason string) (Run, error) {
	now := s.timestamp()
	st := kernel.State{Format: kernel.StateFormat, RunID: r.ID, Status: kernel.StatusCancelled, Seq: r.State.Seq, Now: now,
		Vars: map[string]json.RawMessage{}, Error: &kernel.RunError{Code: CodeLegacyUnavailable,
			Message: "the run's earlier state could not be shown; it was cancelled: " + reason},
		ExternalEffectsMayContinue: true}
	raw, err := json.Marshal(st)
	if err != nil {
		return Run{}, fmt.Errorf("engine: encode state: %w", err)
	}
	if err := storeLegacyCancel(ctx, tx, r.ID, raw, now); err != nil {
		return Run{}, err
	}
	r.State, r.UpdatedAt, r.Legacy = st, now, false
	if err := writeLog(ctx, tx, r.ID, logLine{At: now, Seq: st.Seq, Level: "warn", Type: "run_cancelled",
		Message: "legacy run cancelled; its state was replaced by an unavailable terminal state: " + reason}); err != nil {
		return Run{}, err
	}
	if err := s.emitOutbox(ctx, tx, &r, "platform.run.cancelled", st.Error); err != nil {
		return Run{}, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	if err != nil {
		return Run{}, err
	}
	v := view(r, p)
	may := true
	v.ExternalEffectsMayContinue = &may
	return v, nil
}

// skipLegacy takes a legacy run out of the loop: it has no work the engine
// can do until it is cancelled.
func (s *Service) skipLegacy(ctx context.Context, tx *sql.Tx, id string) error {
	s.log.Warn("engine: run state cannot be read by this version; the run is left until it is cancelled", "run", id)
	return dropLegacyWork(ctx, tx, id)
}
