package steptest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
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
	art, effect, err := d.art.oneStep(req.StepID, req.Kind, req.RealTools, limit)
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
	if err := s.checkMocks(ctx, sc, b, req); err != nil {
		s.unbind(ctx, sc, b, by)
		return StepTestCreated{}, err
	}
	var effects map[string]string
	for _, name := range req.RealTools {
		if effects == nil {
			effects = map[string]string{}
		}
		effects[name] = d.art.toolEffect(name)
	}
	id, created := s.newID(), s.timestamp()
	row := stepRow{ID: id, Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment, ActivationID: b.activationID,
		DraftID: req.DraftID, DraftRevision: req.DraftRevision, StepID: req.StepID, Kind: req.Kind, SideEffect: effect,
		Options: options{TimeoutSeconds: req.TimeoutSeconds, ConnectionBindings: req.ConnectionBindings, ReleaseBindings: req.ReleaseBindings,
			ToolMocks: req.ToolMocks, RealTools: req.RealTools, RealToolEffects: effects},
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
		s.unbind(ctx, sc, b, by)
		return StepTestCreated{}, startProblem(err)
	}
	return StepTestCreated{ID: id, RunID: info.ID, Status: StatusRunning, SideEffect: effect, ExpiresAt: row.ExpiresAt}, nil
}

// unbind retires the test activation of a step test that was refused
// after it was bound.
func (s *Service) unbind(ctx context.Context, sc auth.Scope, b binding, by string) {
	if err := s.db.Write(ctx, func(tx *sql.Tx) error {
		return s.retire(ctx, tx, sc.Environment, b.activationID, by, "step test refused")
	}); err != nil {
		s.log.Warn("steptest: retire the activation of a refused step test", "activation", b.activationID, "err", err)
	}
}

// checkMocks answers 422 PF-STEPTEST-TOOLS when a mocked output does not
// fit its tool's pinned output schema (checked against the bound version,
// the same check a real call's output gets).
func (s *Service) checkMocks(ctx context.Context, sc auth.Scope, b binding, req StepTestRequest) error {
	names := make([]string, 0, len(req.ToolMocks))
	for name := range req.ToolMocks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		err := s.runs.CheckToolOutput(ctx, sc.Project, b.versionID, req.StepID, name, req.ToolMocks[name])
		var ke *kernel.Error
		switch {
		case errors.As(err, &ke):
			return at422(CodeTools, "/tool_mocks/"+jsonPointerToken(name), "the mock of %s does not fit the tool's output schema: %s", name, ke.Msg)
		case err != nil:
			return err
		}
	}
	return nil
}

// jsonPointerToken escapes a name as a JSON Pointer reference token.
func jsonPointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// busy answers 429 PF-STEPTEST-BUSY when the creator or the environment
// has as many live step tests as allowed.
func (s *Service) busy(ctx context.Context, q store.Querier, env, by string) error {
	mine, all, err := liveSteps(ctx, q, env, by)
	if err != nil {
		return err
	}
	if mine >= MaxLivePerCreator || all >= MaxLivePerEnvironment {
		return refused(CodeBusy,
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
	var items []itemRow
	if !ended(status) {
		// An agent call or answer held for the creator makes the step
		// test wait, although its run is running.
		all, err := pendingItems(ctx, s.db.Reader(), r.ID)
		if err != nil {
			return StepTest{}, err
		}
		for _, it := range all {
			if s.waits.live(it.ID) {
				items = append(items, it)
			}
		}
		if len(items) > 0 {
			status = StatusWaiting
		}
	}
	v := StepTest{StepTestCreated: StepTestCreated{ID: r.ID, RunID: r.RunID, Status: status, SideEffect: r.SideEffect, ExpiresAt: r.ExpiresAt},
		Kind: r.Kind, StepID: r.StepID, DraftID: r.DraftID, DraftRevision: r.DraftRevision, TimeoutSeconds: r.Options.TimeoutSeconds,
		CreatedAt: r.CreatedAt, CreatedBy: r.CreatedBy}
	switch {
	case status == StatusWaiting:
		for _, it := range items {
			at := it.CreatedAt
			v.Pending = append(v.Pending, PendingItem{Kind: it.Kind, NodeID: it.NodeID, InstanceKey: it.InstanceKey, Tool: it.Detail.Tool,
				SideEffect: it.Detail.SideEffect, Input: it.Detail.Input, Output: it.Detail.Output, CreatedAt: &at})
		}
		people, err := s.runs.PendingPeople(ctx, r.Environment, r.RunID)
		if err != nil {
			return StepTest{}, err
		}
		for _, p := range people {
			v.Pending = append(v.Pending, PendingItem{Kind: PendingPerson, NodeID: p.NodeID, InstanceKey: p.Instance, Decisions: p.Decisions})
		}
	case status == StatusSucceeded:
		v.Output = info.State.Output
	case status == StatusFailed && r.Ended == StatusFailed:
		// Ended by a rejected review (Answer): the run was cancelled.
		if it, ok, err := declinedReview(ctx, s.db.Reader(), r.ID); err != nil {
			return StepTest{}, err
		} else if ok {
			v.Error, _ = json.Marshal(map[string]string{"code": answerRejected,
				"message": fmt.Sprintf("the agent's answer (%s) was rejected in review by %s", it.InstanceKey, it.AnsweredBy)})
		}
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

// Answer answers a pending item of a waiting step test of principal by,
// once (docs/platform-api.md, "Step tests and test activations"):
//   - confirm: true runs the held tool call for real, false refuses it (the
//     agent reads STEPTEST_DECLINED);
//   - review: true lets the agent's answer become the step's output, false
//     rejects it and ends the step test failed (its run is cancelled);
//   - person: the human task is completed with the step's first decision
//     (true) or its last (false; a step with a single decision cancels the
//     step test instead).
//
// An ended step test is 422 PF-STEPTEST-ENDED; an item answered before
// 422 PF-STEPTEST-ANSWERED; nothing pending with the key 422
// PF-STEPTEST-ANSWER.
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
	it, err := getItem(ctx, s.db.Reader(), id, a.InstanceKey)
	switch {
	case err == nil && it.Status != itemPending:
		return StepTest{}, answered(it)
	case err != nil && !errors.Is(err, errNotFound):
		return StepTest{}, err
	}
	if err == nil {
		return s.answerItem(ctx, sc, by, id, it, a.Confirm)
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
		if decision != "" {
			if err := s.runs.CompleteHuman(ctx, sc, p.TaskID, by, decision); err != nil {
				return StepTest{}, startProblem(err)
			}
		}
		if err := s.recordPerson(ctx, id, p, a.Confirm, by); err != nil {
			return StepTest{}, err
		}
		if decision == "" {
			return s.Cancel(ctx, sc, by, id)
		}
		return s.Step(ctx, sc, by, id)
	}
	return StepTest{}, at422(CodeAnswer, "/instance_key", "nothing pending has instance_key %q", a.InstanceKey)
}

// answered is the refusal of a second answer.
func answered(it itemRow) error {
	verdict := "confirm: true"
	if it.Status == itemDeclined {
		verdict = "confirm: false"
	}
	at := ""
	if it.AnsweredAt != nil {
		at = " at " + it.AnsweredAt.UTC().Format(time.RFC3339)
	}
	return at422(CodeAnswered, "/instance_key", "the %s item %q was answered already (%s%s); an item takes one answer",
		it.Kind, it.InstanceKey, verdict, at)
}

// answerItem answers a held confirm or review item.
func (s *Service) answerItem(ctx context.Context, sc auth.Scope, by, id string, it itemRow, confirm bool) (StepTest, error) {
	if !s.waits.live(it.ID) {
		// Nothing waits for it any more (the daemon restarted meanwhile).
		return StepTest{}, at422(CodeAnswer, "/instance_key", "nothing pending has instance_key %q", it.InstanceKey)
	}
	status := itemConfirmed
	if !confirm {
		status = itemDeclined
	}
	var ok bool
	if err := s.db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		ok, err = answerItem(ctx, tx, it.ID, status, by, s.timestamp())
		return err
	}); err != nil {
		return StepTest{}, err
	}
	if !ok {
		it, err := itemByID(ctx, s.db.Reader(), it.ID)
		if err != nil {
			return StepTest{}, err
		}
		return StepTest{}, answered(it)
	}
	if it.Kind == PendingReview && !confirm {
		// The rejected answer never becomes the step's output: the step
		// test ends failed before its agent task reports.
		r, err := getStep(ctx, s.db.Reader(), sc.Environment, id, by)
		if err != nil {
			return StepTest{}, err
		}
		if err := s.end(ctx, r, StatusFailed, "the agent's answer was rejected in review by "+by); err != nil {
			return StepTest{}, err
		}
	}
	s.waits.wake(it.ID)
	return s.Step(ctx, sc, by, id)
}

// recordPerson records the creator's answer to a person item, so that a
// second answer is refused as such.
func (s *Service) recordPerson(ctx context.Context, id string, p engine.PendingPerson, confirm bool, by string) error {
	status := itemConfirmed
	if !confirm {
		status = itemDeclined
	}
	at := s.timestamp()
	return s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := insertAnswered(ctx, tx, itemRow{ID: s.newID(), StepTestID: id, Kind: PendingPerson, NodeID: p.NodeID,
			InstanceKey: p.Instance, TaskID: p.TaskID, Status: status, CreatedAt: at, AnsweredAt: &at, AnsweredBy: by})
		return err
	})
}
