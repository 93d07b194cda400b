package engine

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/agentbridge/bridge/platform/auth"
)

// This file serves platform/trigger: run starts of one activation made by
// schedules and webhook triggers, the check of such a start when it is
// configured, and the scheduler phases other packages add to the loop.

// StartActivation starts a run of the activation st.ActivationID of the
// environment st.Scope through Start, as POST E/runs does (st.WorkflowID
// and st.Version are ignored). Refusals are that route's problems
// (*api.Error): 422 PF-VALIDATION for an unknown activation or an input
// the workflow refuses, 409 PF-CONFLICT for a retired activation, 429 for
// a capacity refusal; other errors are internal.
func (s *Service) StartActivation(ctx context.Context, st LocalStart) (RunInfo, error) {
	rs, err := s.Start(ctx, st.Scope, StartRequest{ActivationID: st.ActivationID, Input: st.Input}, st.By,
		StartOptions{Test: st.Test, StringInputs: st.StringInputs})
	if err != nil {
		return RunInfo{}, asProblem(err)
	}
	info, err := s.commitLocal(ctx, rs, st, rs.p.p.ID(), rs.p.p.Version())
	return info, asProblem(err)
}

// commitLocal commits rs for an in-process caller, running st.Commit in
// the same transaction.
func (s *Service) commitLocal(ctx context.Context, rs *RunStart, st LocalStart, workflowID string, version int) (RunInfo, error) {
	sc := rs.sc
	var info RunInfo
	err := s.db.WriteThen(ctx, func(tx *sql.Tx) error {
		run, err := rs.Commit(ctx, tx)
		if err != nil {
			return err
		}
		info = RunInfo{Run: run, TenantID: sc.Tenant, ProjectID: sc.Project, WorkflowID: workflowID,
			WorkflowVersion: version, Path: runPath(sc, run.ID)}
		if st.Commit != nil {
			return st.Commit(tx, info)
		}
		return nil
	}, s.notify)
	if err != nil {
		return RunInfo{}, err
	}
	return info, nil
}

// CheckStart answers the refusal POST E/runs would give a start of
// activation with input in sc now (nil when it would start), without
// starting anything: schedules and triggers check their configuration
// with it when it is saved.
func (s *Service) CheckStart(ctx context.Context, sc auth.Scope, activation string, input json.RawMessage) error {
	rs, err := s.Start(ctx, sc, StartRequest{ActivationID: activation, Input: input}, "", StartOptions{})
	if err != nil {
		return asProblem(err)
	}
	return asProblem(rs.check())
}

// RedactInput answers input with the values the activation's workflow
// marks secret replaced, as run views show a run's input: schedules and
// triggers show their stored input so.
func (s *Service) RedactInput(ctx context.Context, sc auth.Scope, activation string, input json.RawMessage) (json.RawMessage, error) {
	r := s.db.Reader()
	version, err := activationVersion(ctx, r, sc.Environment, activation)
	if err != nil {
		return nil, err
	}
	p, err := s.program(ctx, r, sc.Project, version)
	if err != nil {
		return nil, err
	}
	return redact(input, p.sec.Input), nil
}

// Phase is a scheduler phase another package adds to the loop (the due
// schedules of platform/trigger). It answers whether its batch was full,
// so that the loop turns again at once.
type Phase func(ctx context.Context) (full bool, err error)

type namedPhase struct {
	name string
	run  Phase
}

// AddPhase adds a phase to every turn of the loop, after recoverable
// leases (the phase order of Service.turn), bounded like the others by
// PhaseLimit. Call it before Run.
func (s *Service) AddPhase(name string, p Phase) { s.phases = append(s.phases, namedPhase{name, p}) }

// runPhases runs the added phases and answers whether one was full.
func (s *Service) runPhases(ctx context.Context) bool {
	more := false
	for _, p := range s.phases {
		phase(ctx, func(ctx context.Context) {
			full, err := p.run(ctx)
			if err != nil {
				s.logErr(ctx, p.name, err)
			}
			more = more || full
		})
	}
	return more
}

// Admission refuses new runs in a scope (a problem such as 503
// PF-COMPATIBILITY with Retry-After), or answers nil to admit them.
type Admission func(ctx context.Context, sc auth.Scope) error

// SetAdmission makes every run start (POST E/runs, retries, schedules,
// triggers, test runs, the bridge's workflow runs) ask a first: package
// platform/compat refuses new work with effects in a project whose
// compatibility verdict is restricted. Call it before serving.
func (s *Service) SetAdmission(a Admission) { s.admit = a }

// CanRun answers why the engine cannot load published workflow version
// versionID of project (nil when it can): the compatibility scan asks it
// of every published workflow.
func (s *Service) CanRun(ctx context.Context, project, versionID string) error {
	_, err := s.program(ctx, s.db.Reader(), project, versionID)
	return err
}
