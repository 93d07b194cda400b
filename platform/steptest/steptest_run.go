package steptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store"
)

// CreateStep runs one step of a draft revision as a test run in the
// environment sc for principal by (POST E/step-tests). The checks come in
// this order: the policy (403), the draft and the step (422), the policy
// for the step's side effect (403), its acknowledgment (409), the live
// step tests (429); only then is anything stored or called.
func (s *Service) CreateStep(ctx context.Context, sc auth.Scope, by string, req StepTestRequest) (StepTestCreated, error) {
	limit, err := checkStepTest(&req)
	if err != nil {
		return StepTestCreated{}, err
	}
	rd := s.db.Reader()
	if ok, err := environmentExists(ctx, rd, sc.Tenant, sc.Project, sc.Environment); err != nil || !ok {
		if err == nil {
			err = api.NotFound("environment")
		}
		return StepTestCreated{}, err
	}
	pol, err := getPolicy(ctx, rd, sc.Environment)
	if err != nil {
		return StepTestCreated{}, err
	}
	if pol.TestCalls == CallsDisabled {
		return StepTestCreated{}, pol.permit(SideEffectNone)
	}
	d, err := s.compileDraft(ctx, sc, CodeDraft, req.DraftID, req.DraftRevision)
	if err != nil {
		return StepTestCreated{}, err
	}
	art, effect, err := d.art.oneStep(req.StepID, req.Kind, len(req.RealTools) > 0, limit)
	if err != nil {
		return StepTestCreated{}, err
	}
	if err := stepTools(d.art, req.StepID, &req); err != nil {
		return StepTestCreated{}, err
	}
	if err := pol.permit(effect); err != nil {
		return StepTestCreated{}, err
	}
	if err := confirm(effect, req.AcknowledgedSideEffect); err != nil {
		return StepTestCreated{}, err
	}
	if err := s.busy(ctx, rd, sc.Environment, by); err != nil {
		return StepTestCreated{}, err
	}
	var b binding
	if err := s.db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		b, err = s.bind(ctx, tx, sc, d, art, nil, req.ConnectionBindings, by)
		return err
	}); err != nil {
		return StepTestCreated{}, err
	}
	id, created := s.newID(), s.timestamp()
	row := stepRow{ID: id, Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment, ActivationID: b.activationID,
		DraftID: req.DraftID, DraftRevision: req.DraftRevision, StepID: req.StepID, Kind: req.Kind, SideEffect: effect,
		Options: options{TimeoutSeconds: req.TimeoutSeconds, ConnectionBindings: req.ConnectionBindings, ReleaseBindings: req.ReleaseBindings,
			ToolMocks: req.ToolMocks, RealTools: req.RealTools},
		CreatedBy: by, CreatedAt: created, ExpiresAt: created.Add(limit)}
	info, err := s.runs.StartActivation(ctx, engine.LocalStart{Scope: sc, ActivationID: b.activationID, Input: req.Input, By: by, Test: true,
		Commit: func(tx *sql.Tx, run engine.RunInfo) error {
			// Counted again in the start's transaction, so that two
			// concurrent creations never pass the bound together.
			if err := s.busy(ctx, tx, sc.Environment, by); err != nil {
				return err
			}
			row.RunID = run.ID
			if err := insertStep(ctx, tx, row); err != nil {
				return err
			}
			// The step test's activation starts this one run only.
			return s.retire(ctx, tx, sc.Environment, b.activationID, by, "step test "+id)
		}})
	if err != nil {
		if rerr := s.db.Write(ctx, func(tx *sql.Tx) error {
			return s.retire(ctx, tx, sc.Environment, b.activationID, by, "step test refused")
		}); rerr != nil {
			s.log.Warn("steptest: retire the activation of a refused step test", "activation", b.activationID, "err", rerr)
		}
		return StepTestCreated{}, startProblem(err)
	}
	return StepTestCreated{ID: id, RunID: info.ID, Status: StatusRunning, SideEffect: effect, ExpiresAt: row.ExpiresAt}, nil
}

// busy answers 429 PF-STEPTEST-BUSY when the creator or the environment
// has as many live step tests as allowed.
func (s *Service) busy(ctx context.Context, q store.Querier, env, by string) error {
	mine, all, err := liveSteps(ctx, q, env, by)
	if err != nil {
		return err
	}
	if mine >= MaxLivePerCreator || all >= MaxLivePerEnvironment {
		return refused(http.StatusTooManyRequests, CodeBusy,
			"too many step tests are running (at most %d per person and %d per environment); wait for one to end or cancel it",
			MaxLivePerCreator, MaxLivePerEnvironment)
	}
	return nil
}

// Step reads a step test of principal by (404 for anyone else's). A live
// step test past its time limit is ended here, as the expiry scan would.
func (s *Service) Step(ctx context.Context, sc auth.Scope, by, id string) (StepTest, error) {
	r, err := getStep(ctx, s.db.Reader(), sc.Environment, id, by)
	if errors.Is(err, errNotFound) {
		return StepTest{}, api.NotFound("step test")
	}
	if err != nil {
		return StepTest{}, err
	}
	return s.stepView(ctx, r)
}

// stepView builds the view of r from its run.
func (s *Service) stepView(ctx context.Context, r stepRow) (StepTest, error) {
	info, err := s.runs.ReadRun(ctx, r.RunID)
	if err != nil {
		return StepTest{}, err
	}
	status := r.Ended
	if status == "" {
		status = statusOf(info.Status, info.Paused)
		if !ended(status) && !s.timestamp().Before(r.ExpiresAt) {
			if err := s.end(ctx, r, StatusTimedOut, "the step test's time limit passed"); err != nil {
				return StepTest{}, err
			}
			return s.stepView(ctx, stepRow{ID: r.ID, Tenant: r.Tenant, Project: r.Project, Environment: r.Environment, RunID: r.RunID,
				ActivationID: r.ActivationID, DraftID: r.DraftID, DraftRevision: r.DraftRevision, StepID: r.StepID, Kind: r.Kind,
				SideEffect: r.SideEffect, Options: r.Options, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
				Ended: StatusTimedOut})
		}
	}
	v := StepTest{StepTestCreated: StepTestCreated{ID: r.ID, RunID: r.RunID, Status: status, SideEffect: r.SideEffect, ExpiresAt: r.ExpiresAt},
		Kind: r.Kind, StepID: r.StepID, DraftID: r.DraftID, DraftRevision: r.DraftRevision, TimeoutSeconds: r.Options.TimeoutSeconds,
		CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy}
	switch {
	case status == StatusWaiting:
		people, err := s.runs.PendingPeople(ctx, r.Environment, r.RunID)
		if err != nil {
			return StepTest{}, err
		}
		for _, p := range people {
			v.Pending = append(v.Pending, PendingItem{Kind: PendingPerson, NodeID: p.NodeID, InstanceKey: p.Instance, Decisions: p.Decisions})
		}
	case status == StatusSucceeded:
		v.Output = info.State.Output
	case ended(status) && info.State.Error != nil:
		if b, err := json.Marshal(info.State.Error); err == nil {
			v.Error = b
		}
	}
	return v, nil
}

// end stops a live step test's run and records status (cancelled or
// timed_out).
func (s *Service) end(ctx context.Context, r stepRow, status, reason string) error {
	sc := auth.Scope{Tenant: r.Tenant, Project: r.Project, Environment: r.Environment}
	if err := s.runs.CancelRun(ctx, sc, r.RunID, reason); err != nil {
		return err
	}
	return s.db.Write(ctx, func(tx *sql.Tx) error { return setEnded(ctx, tx, r.ID, status, s.timestamp()) })
}

// Cancel cancels a step test of principal by (POST .../cancel); an ended
// one answers unchanged.
func (s *Service) Cancel(ctx context.Context, sc auth.Scope, by, id string) (StepTest, error) {
	v, err := s.Step(ctx, sc, by, id)
	if err != nil || ended(v.Status) {
		return v, err
	}
	r, err := getStep(ctx, s.db.Reader(), sc.Environment, id, by)
	if err != nil {
		return StepTest{}, err
	}
	if err := s.end(ctx, r, StatusCancelled, "step test cancelled by "+by); err != nil {
		return StepTest{}, err
	}
	return s.Step(ctx, sc, by, id)
}

// Answer answers a pending item of a waiting step test of principal by: a
// person item is completed with the step's first decision (confirm true)
// or its last (false; a step with a single decision cancels the step
// test instead).
func (s *Service) Answer(ctx context.Context, sc auth.Scope, by, id string, a StepTestAnswer) (StepTest, error) {
	if a.InstanceKey == "" || len(a.InstanceKey) > 1000 {
		return StepTest{}, api.Invalid("/instance_key", "instance_key has 1 to 1000 characters")
	}
	v, err := s.Step(ctx, sc, by, id)
	if err != nil {
		return v, err
	}
	if ended(v.Status) {
		return StepTest{}, at422(CodeEnded, "", "the step test has ended (%s); it takes no answers", v.Status)
	}
	people, err := s.runs.PendingPeople(ctx, sc.Environment, v.RunID)
	if err != nil {
		return StepTest{}, err
	}
	for _, p := range people {
		if p.Instance != a.InstanceKey {
			continue
		}
		decision := ""
		switch {
		case a.Confirm && len(p.Decisions) > 0:
			decision = p.Decisions[0]
		case !a.Confirm && len(p.Decisions) > 1:
			decision = p.Decisions[len(p.Decisions)-1]
		}
		if decision == "" {
			return s.Cancel(ctx, sc, by, id)
		}
		if err := s.runs.CompleteHuman(ctx, sc, p.TaskID, by, decision); err != nil {
			return StepTest{}, startProblem(err)
		}
		return s.Step(ctx, sc, by, id)
	}
	return StepTest{}, at422(CodeAnswer, "/instance_key", "nothing pending has instance_key %q", a.InstanceKey)
}
