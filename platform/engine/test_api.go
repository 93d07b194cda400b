package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/platform/auth"
)

// This file serves platform/steptest: the in-process controls a step test
// needs of its run (docs/platform-api.md, "Step tests and test
// activations"), with the same code as the HTTP routes.

// CancelRun cancels a run of the environment sc with reason through
// Cancel, as POST E/runs/{run}/cancel does; an ended run (or one whose
// deadline has passed: its due timer ends it) is left as it is, the
// refusal (PF-RUNTIME-STATE) having changed nothing.
func (s *Service) CancelRun(ctx context.Context, sc auth.Scope, runID, reason string) error {
	if _, err := s.Cancel(ctx, nil, sc, runID, reason); err != nil && !errors.Is(err, ErrRunState) {
		return err
	}
	return nil
}

// PendingPerson is a human task of a run waiting for a person.
type PendingPerson struct {
	TaskID, NodeID, Instance string
	Decisions                []string
}

// PendingPeople answers the open and claimed human tasks of a run, in
// opening order.
func (s *Service) PendingPeople(ctx context.Context, env, runID string) ([]PendingPerson, error) {
	var out []PendingPerson
	for _, status := range []string{humanOpen, humanClaimed} {
		rows, err := listHumans(ctx, s.db.Reader(), env, humanFilter{Status: status, RunID: runID}, "", 100)
		if err != nil {
			return nil, err
		}
		for _, h := range rows {
			out = append(out, PendingPerson{TaskID: h.ID, NodeID: h.NodeID, Instance: h.Instance, Decisions: h.Decisions})
		}
	}
	return out, nil
}

// CompleteHuman completes the open human task id of the environment sc
// with decision (no data) as principal by, as POST
// E/human-tasks/{id}/complete does.
func (s *Service) CompleteHuman(ctx context.Context, sc auth.Scope, id, by, decision string) error {
	return s.db.WriteThen(ctx, func(tx *sql.Tx) error {
		h, err := getHuman(ctx, tx, sc.Environment, id)
		if err != nil {
			return err
		}
		if h.Status == humanCompleted || h.Status == humanClosed {
			return refused(CodeRuntimeState, "human task %s is %s", id, h.Status)
		}
		// The step test's creator answers for the people the step names.
		h.Assignees = nil
		if h.Status == humanClaimed {
			h.ClaimedBy = by
		}
		if _, err := s.completeTask(ctx, tx, h, by, decision, nil, s.timestamp()); err != nil {
			return fmt.Errorf("engine: complete human task %s: %w", id, err)
		}
		return nil
	}, s.notify)
}
