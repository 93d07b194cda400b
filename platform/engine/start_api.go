package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store"
)

// startPlan is a validated run start and what it read before its
// transaction: POST E/runs, its retry and StartActivated share it.
type startPlan struct {
	sc     auth.Scope
	req    StartRequest
	parent string
	input  json.RawMessage
	a      activationInfo
	p      *program
	// test marks the run a test run (LocalStart.Test).
	test bool
	// files says which files the input may refer to (the starter's).
	files FileAccess
}

// planStart validates a start of req in sc (the retry of parent when parent
// is not "") and reads the activation, the merged input and the program.
func (s *Service) planStart(ctx context.Context, sc auth.Scope, req StartRequest, parent string) (*startPlan, error) {
	input, err := checkStart(&req)
	if err != nil {
		return nil, err
	}
	if s.admit != nil {
		if err := s.admit(ctx, sc); err != nil {
			return nil, err
		}
	}
	r := s.db.Reader()
	if err := requireEnvironment(ctx, r, sc); err != nil {
		return nil, err
	}
	if parent != "" {
		if _, err := s.getRun(ctx, r, sc.Environment, parent); errors.Is(err, errNotFound) {
			return nil, notFound("run")
		} else if err != nil {
			return nil, err
		}
	}
	a, err := readActivation(ctx, r, sc.Environment, req.ActivationID)
	if err != nil {
		return nil, err
	}
	if input, err = mergeDefaults(input, a.defaults); err != nil {
		return nil, err
	}
	p, err := s.program(ctx, r, sc.Project, a.versionID)
	if err != nil {
		return nil, err
	}
	return &startPlan{sc: sc, req: req, parent: parent, input: input, a: a, p: p}, nil
}

// commitStart creates the run of pl in tx with created_by = by: the
// activation is checked again, the started event applied and the run's
// inline work done. A refusal of the kernel (input schema, capacity) is a
// problem.
func (s *Service) commitStart(ctx context.Context, tx *sql.Tx, pl *startPlan, by string) (runRow, error) {
	sc, req, parent := pl.sc, pl.req, pl.parent
	if _, err := readActivation(ctx, tx, sc.Environment, req.ActivationID); err != nil {
		return runRow{}, err
	}
	var parentID *string
	if parent != "" {
		pr, err := s.getRun(ctx, tx, sc.Environment, parent)
		if err != nil {
			return runRow{}, err
		}
		if !pr.State.Status.Terminal() {
			return runRow{}, refused(CodeRuntimeState, "run %s has not ended (status %s); only an ended run is retried", parent, pr.State.Status)
		}
		parentID = &parent
	}
	now := s.timestamp()
	run := runRow{ID: s.newID(), Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment, ActivationID: req.ActivationID,
		ParentRunID: parentID, CorrelationKey: optional(req.CorrelationKey), BusinessKey: optional(req.BusinessKey),
		CreatedAt: now, UpdatedAt: now, CreatedBy: by, PublishedVersionID: pl.a.versionID, Test: pl.test}
	if err := insertRun(ctx, tx, run); err != nil {
		return runRow{}, err
	}
	input, err := s.attachFiles(ctx, tx, sc.Environment, run.ID, "/input", pl.input, pl.p.files.Input, pl.files)
	if err != nil {
		return runRow{}, err
	}
	_, work, err := s.applyWork(ctx, tx, &run, pl.p, kernel.Event{Kind: kernel.EventStarted, RunID: run.ID, Input: input})
	if err != nil {
		return runRow{}, refusal(err)
	}
	if err := s.inline(ctx, tx, &run, pl.p, work); err != nil {
		return runRow{}, err
	}
	return run, nil
}

// Errors of StartActivated and ReadRun; they wrap a message for people.
var (
	// ErrWorkflowNotPublished: the project has no published workflow (or
	// version) of that id.
	ErrWorkflowNotPublished = errors.New("workflow not published")
	// ErrNoActiveActivation: the workflow (version) is published but has
	// no active activation in the environment.
	ErrNoActiveActivation = errors.New("no active activation")
	// ErrInvalidInput: the input does not fit the workflow's input schema
	// (or the start limits).
	ErrInvalidInput = errors.New("invalid input")
)

// LocalStart is a run start made in process by another subsystem of the
// daemon (the bridge's workflow runs) instead of over HTTP.
type LocalStart struct {
	// Scope is the environment the run starts in.
	Scope auth.Scope
	// WorkflowID names the workflow; the run starts through its active
	// activation in the environment. Version, when not 0, requires that
	// activation to run that version.
	WorkflowID string
	Version    int
	// ActivationID names the activation StartActivation starts.
	ActivationID string
	// Input is the run input (a JSON object; the activation's input
	// defaults fill absent top-level properties).
	Input json.RawMessage
	// StringInputs: the caller can only send strings (the bridge's
	// workflow-runs inputs); a string given for a property the input
	// schema types otherwise is parsed as JSON first (kernel
	// CoerceStringInput).
	StringInputs bool
	// By is the principal recorded as the run's created_by.
	By string
	// Test marks the run a test run (step tests and draft test
	// activations, package platform/steptest): run lists leave it out
	// unless include_test=true.
	Test bool
	// Commit, when set, runs in the transaction that creates the run,
	// after it: an error undoes the start and is answered as is.
	Commit func(tx *sql.Tx, run RunInfo) error
}

// RunInfo is a run with the workflow version it runs and its canonical
// path on the services listener.
type RunInfo struct {
	Run
	TenantID, ProjectID string
	WorkflowID          string
	WorkflowVersion     int
	Path                string
}

// StartActivated starts a run of the newest active activation of a
// workflow, with the same code as POST E/runs. Errors wrap
// ErrWorkflowNotPublished, ErrNoActiveActivation or ErrInvalidInput, or are
// internal.
func (s *Service) StartActivated(ctx context.Context, st LocalStart) (RunInfo, error) {
	sc := st.Scope
	id, version, err := activeActivation(ctx, s.db.Reader(), sc, st.WorkflowID, st.Version)
	if err != nil {
		return RunInfo{}, err
	}
	pl, err := s.planStart(ctx, sc, StartRequest{ActivationID: id, Input: st.Input}, "")
	if err != nil {
		return RunInfo{}, localError(err)
	}
	if st.StringInputs {
		if pl.input, err = pl.p.p.CoerceStringInput(pl.input); err != nil {
			return RunInfo{}, localError(api.Invalid("/input", "%v", err))
		}
	}
	info, err := s.commitLocal(ctx, pl, st, st.WorkflowID, version)
	if err != nil {
		return RunInfo{}, localError(err)
	}
	return info, nil
}

// ReadRun reads any run by id (ErrRunNotFound when there is none).
func (s *Service) ReadRun(ctx context.Context, id string) (RunInfo, error) {
	r := s.db.Reader()
	run, err := s.getRun(ctx, r, "", id)
	if errors.Is(err, errNotFound) {
		return RunInfo{}, fmt.Errorf("%w: no run %s", ErrRunNotFound, id)
	}
	if err != nil {
		return RunInfo{}, err
	}
	p, err := s.program(ctx, r, run.Project, run.PublishedVersionID)
	if err != nil {
		return RunInfo{}, err
	}
	info := RunInfo{Run: view(run, p), TenantID: run.Tenant, ProjectID: run.Project,
		Path: runPath(auth.Scope{Tenant: run.Tenant, Project: run.Project, Environment: run.Environment}, run.ID)}
	if info.WorkflowID, info.WorkflowVersion, err = versionWorkflow(ctx, r, run.PublishedVersionID); err != nil {
		return RunInfo{}, fmt.Errorf("engine: workflow of run %s: %w", id, err)
	}
	return info, nil
}

// CheckAgentOutput answers the refusal the output of agent task taskID of
// run runID would get (nil when the step's output schema accepts it, or
// when the task is no longer pending: its outcome is ignored then).
func (s *Service) CheckAgentOutput(ctx context.Context, runID, taskID string, output json.RawMessage) error {
	r := s.db.Reader()
	run, err := s.getRun(ctx, r, "", runID)
	if errors.Is(err, errNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	t, ok := run.State.Tasks[taskID]
	if !ok {
		return nil
	}
	p, err := s.program(ctx, r, run.Project, run.PublishedVersionID)
	if err != nil {
		return err
	}
	return p.p.CheckTaskOutput(t.Node, output)
}

// activeActivation answers the newest active activation of workflow in the
// environment and the version it runs.
func activeActivation(ctx context.Context, q store.Querier, sc auth.Scope, workflow string, version int) (string, int, error) {
	id, active, found, err := newestActiveActivation(ctx, q, sc.Environment, workflow)
	if err != nil {
		return "", 0, err
	}
	name := workflow
	if version != 0 {
		name = fmt.Sprintf("%s@%d", workflow, version)
	}
	if found && (version == 0 || version == active) {
		return id, active, nil
	}
	published, err := countPublished(ctx, q, sc.Project, workflow, version)
	if err != nil {
		return "", 0, err
	}
	switch {
	case published == 0:
		return "", 0, RefuseStart(ErrWorkflowNotPublished, "no workflow %s is published in the project", name)
	case id != "":
		return "", 0, RefuseStart(ErrNoActiveActivation, "the environment's active activation of %s runs version %d, not %d", workflow, active, version)
	}
	return "", 0, RefuseStart(ErrNoActiveActivation, "workflow %s has no active activation in the environment", name)
}

// localError maps the problems of the shared start code to the errors of
// StartActivated: validation refusals to ErrInvalidInput, a retired
// activation to ErrNoActiveActivation.
func localError(err error) error {
	err = asProblem(err)
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err
	}
	msg := ae.Message
	if len(ae.Diagnostics) > 0 {
		parts := make([]string, 0, len(ae.Diagnostics))
		for _, d := range ae.Diagnostics {
			parts = append(parts, d.Message)
		}
		msg = strings.Join(parts, "; ")
	}
	switch {
	case ae.IsInvalid():
		return RefuseStart(ErrInvalidInput, "%s", msg)
	case ae.Code == api.CodeConflict:
		return RefuseStart(ErrNoActiveActivation, "%s", msg)
	}
	return err
}
