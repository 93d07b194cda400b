package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// cancelLegacy cancels a run whose state cannot be shown (docs/platform-api.md: "cancelling
// it still works and replaces the state with an explicit unavailable
// terminal state"): the state becomes a cancelled state of the current
// format that says so, its timers, inbox, dispatches and worker tasks go,
// and the answer is the new state. No kernel event is appended: the old
// history cannot be stepped. Work issued earlier may still finish.
func (s *Service) cancelLegacy(ctx context.Context, tx *sql.Tx, r runRow, reason string) (*api.Result, error) {
	now := s.timestamp()
	st := kernel.State{Format: kernel.StateFormat, RunID: r.ID, Status: kernel.StatusCancelled, Seq: r.State.Seq, Now: now,
		Vars: map[string]json.RawMessage{}, Error: &kernel.RunError{Code: CodeLegacyUnavailable,
			Message: "the run's earlier state could not be shown; it was cancelled: " + reason},
		ExternalEffectsMayContinue: true}
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("engine: encode state: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET status = 'cancelled', state = ?, needs_work = 0, paused = 0, updated_at = ?
		WHERE id = ?`, string(raw), store.Millis(now), r.ID); err != nil {
		return nil, fmt.Errorf("engine: cancel legacy run: %w", err)
	}
	if err := forgetWork(ctx, tx, r.ID); err != nil {
		return nil, err
	}
	// Its incidents ended with it, as any run's do.
	if _, err := tx.ExecContext(ctx, `UPDATE platform_run_incidents SET status = 'resolved' WHERE run_id = ?`, r.ID); err != nil {
		return nil, fmt.Errorf("engine: close incidents of legacy run: %w", err)
	}
	r.State, r.UpdatedAt, r.Legacy = st, now, false
	if err := writeLog(ctx, tx, r.ID, logLine{At: now, Seq: st.Seq, Level: "warn", Type: "run_cancelled",
		Message: "legacy run cancelled; its state was replaced by an unavailable terminal state: " + reason}); err != nil {
		return nil, err
	}
	if err := s.emitOutbox(ctx, tx, &r, "platform.run.cancelled", st.Error); err != nil {
		return nil, err
	}
	p, err := s.program(ctx, tx, r.Project, r.PublishedVersionID)
	if err != nil {
		return nil, err
	}
	return &api.Result{Body: cancelAnswer(view(r, p), true), Revision: st.Seq}, nil
}

// forgetWork deletes the scheduler's rows of run id: timers, held events,
// dispatches and worker tasks.
func forgetWork(ctx context.Context, tx *sql.Tx, id string) error {
	for _, table := range []string{"platform_run_timers", "platform_run_inbox", "platform_task_dispatches", "platform_worker_tasks"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE run_id = ?`, id); err != nil {
			return fmt.Errorf("engine: forget work of run %s: %w", id, err)
		}
	}
	return nil
}

// skipLegacy takes a legacy run out of the loop: it has no work the engine
// can do until it is cancelled.
func (s *Service) skipLegacy(ctx context.Context, tx *sql.Tx, id string) error {
	s.log.Warn("engine: run state cannot be read by this version; the run is left until it is cancelled", "run", id)
	if _, err := tx.ExecContext(ctx, `UPDATE platform_runs SET needs_work = 0 WHERE id = ?`, id); err != nil {
		return fmt.Errorf("engine: clear work flag: %w", err)
	}
	return forgetWork(ctx, tx, id)
}
