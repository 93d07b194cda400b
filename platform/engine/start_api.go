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

// StartOptions are the parts of a run start that are not in its request
// body.
type StartOptions struct {
	// Files says which files the input may refer to: the starter's (the
	// HTTP routes: every file of the environment with file.read); the
	// zero value allows none but the run's own.
	Files FileAccess
	// Test marks the run a test run (step tests and draft test
	// activations): run lists leave it out unless include_test=true.
	Test bool
	// StringInputs: the caller can only send strings (the bridge's
	// workflow runs); a string given for a property the input schema
	// types otherwise is parsed as JSON first (kernel CoerceStringInput).
	StringInputs bool
}

// RunStart is a run start that Start or Retry checked and admitted, and
// whose activation, merged input and program they read, all outside the
// single writer: admission may itself write (the first compatibility
// scan of a project), and the writer is held only for Commit. Every run
// start goes through it: POST E/runs and its retry (runs_http.go),
// schedules, webhook triggers, provider sources and step tests
// (StartActivation), the bridge's workflow runs (StartActivated).
type RunStart struct {
	s      *Service
	sc     auth.Scope
	req    StartRequest
	by     string
	parent string
	opts   StartOptions
	input  json.RawMessage
	a      activationInfo
	p      *program
}

// Start checks a start of a run of req.ActivationID in environment sc for
// principal by (created_by) and reads what it needs; nothing is written
// until the answer's Commit. Refusals are engine.Error codes:
// PF-VALIDATION for the body (an unknown activation at /activation_id, an
// input that is not an object or over 1 MiB), PF-NOT-FOUND without the
// environment, PF-CONFLICT for a retired activation; the admission's own
// refusal (SetAdmission) passes unchanged.
func (s *Service) Start(ctx context.Context, sc auth.Scope, req StartRequest, by string, opts StartOptions) (*RunStart, error) {
	return s.planStart(ctx, sc, req, by, "", opts)
}

// Retry checks a retry of run runID of environment sc as a new run of req
// (parent_run_id = runID) for principal by, like Start; the retried run
// is unchanged. PF-NOT-FOUND when the environment has no such run; a run
// that has not ended is refused by Commit (PF-RUNTIME-STATE), in the
// transaction that would create the new run.
func (s *Service) Retry(ctx context.Context, sc auth.Scope, runID string, req StartRequest, by string, opts StartOptions) (*RunStart, error) {
	return s.planStart(ctx, sc, req, by, runID, opts)
}

// planStart validates a start of req in sc (the retry of parent when
// parent is not "") and reads the activation, the merged input and the
// program.
func (s *Service) planStart(ctx context.Context, sc auth.Scope, req StartRequest, by, parent string, opts StartOptions) (*RunStart, error) {
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
	a, aErr, err := readStartActivation(ctx, r, sc, req.ActivationID)
	if err != nil {
		return nil, err
	}
	if parent != "" {
		if _, err := s.getRun(ctx, r, sc.Environment, parent); errors.Is(err, errNotFound) {
			return nil, notFound("run")
		} else if err != nil {
			return nil, err
		}
	}
	if aErr != nil {
		return nil, aErr
	}
	if input, err = mergeDefaults(input, a.defaults); err != nil {
		return nil, err
	}
	p, err := s.program(ctx, r, sc.Project, a.versionID)
	if err != nil {
		return nil, err
	}
	if opts.StringInputs {
		if input, err = p.p.CoerceStringInput(input); err != nil {
			return nil, invalid("/input", "%v", err)
		}
	}
	return &RunStart{s: s, sc: sc, req: req, by: by, parent: parent, opts: opts, input: input, a: a, p: p}, nil
}

// Commit creates the run in tx (see within for tx): the activation is
// checked again (and a retried run's end), the started event applied and
// the run's inline work done. A refusal of the kernel (input schema,
// capacity) is an engine.Error of its code.
func (rs *RunStart) Commit(ctx context.Context, tx *sql.Tx) (Run, error) {
	var out Run
	err := rs.s.within(ctx, tx, func(tx *sql.Tx) error {
		run, err := rs.commit(ctx, tx)
		if err == nil {
			out = view(run, rs.p)
		}
		return err
	})
	return out, err
}

func (rs *RunStart) commit(ctx context.Context, tx *sql.Tx) (runRow, error) {
	s, sc, req, parent := rs.s, rs.sc, rs.req, rs.parent
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
		CreatedAt: now, UpdatedAt: now, CreatedBy: rs.by, PublishedVersionID: rs.a.versionID, Test: rs.opts.Test}
	// The run is new: no event is held for it, and its row is inserted
	// with its state by the cursor's flush, unless its input's files are
	// attached to it first.
	c := runCursor{r: run, p: rs.p, loaded: true, noInbox: true, unstored: len(rs.p.files.Input) == 0}
	if !c.unstored {
		if err := insertRun(ctx, tx, &c.r); err != nil {
			return runRow{}, err
		}
	}
	input, err := s.attachFiles(ctx, tx, sc.Environment, run.ID, "/input", rs.input, rs.p.files.Input, rs.opts.Files)
	if err != nil {
		return runRow{}, err
	}
	_, work, err := s.applyEvent(ctx, tx, &c.r, rs.p, kernel.Event{Kind: kernel.EventStarted, RunID: run.ID, Input: input}, &c)
	if err != nil {
		return runRow{}, refusal(err)
	}
	c.flagged = work
	if err := s.inline(ctx, tx, &c); err != nil {
		return runRow{}, err
	}
	return c.r, nil
}

// check answers the refusal the kernel would give the start now (nil when
// it would start), without starting anything.
func (rs *RunStart) check() error {
	_, _, err := kernel.Step(rs.p.p, kernel.State{}, kernel.Event{Kind: kernel.EventStarted, ID: "check", RunID: "check", Seq: 1,
		At: rs.s.timestamp(), Input: rs.input})
	return refusal(err)
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
// workflow through Start, as POST E/runs does. Errors wrap
// ErrWorkflowNotPublished, ErrNoActiveActivation or ErrInvalidInput, or are
// internal.
func (s *Service) StartActivated(ctx context.Context, st LocalStart) (RunInfo, error) {
	sc := st.Scope
	id, version, err := activeActivation(ctx, s.db.Reader(), sc, st.WorkflowID, st.Version)
	if err != nil {
		return RunInfo{}, err
	}
	rs, err := s.Start(ctx, sc, StartRequest{ActivationID: id, Input: st.Input}, st.By, StartOptions{Test: st.Test, StringInputs: st.StringInputs})
	if err != nil {
		return RunInfo{}, localError(err)
	}
	info, err := s.commitLocal(ctx, rs, st, st.WorkflowID, version)
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
