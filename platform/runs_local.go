package platform

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
)

// Errors of StartLocalRun and LocalRun (they wrap a message for people).
var (
	ErrWorkflowNotPublished = engine.ErrWorkflowNotPublished
	ErrNoActiveActivation   = engine.ErrNoActiveActivation
	ErrInvalidInput         = engine.ErrInvalidInput
	ErrRunNotFound          = engine.ErrRunNotFound
)

// WorkflowStart is a run of the local workspace started in process by
// another subsystem (the bridge's POST /v1/bridge/workflow-runs).
type WorkflowStart struct {
	// Workflow names a workflow published in the local project: its id
	// ("acme/flow"), optionally with the version the active activation
	// must run ("acme/flow@2").
	Workflow string
	// Input is the run input, a JSON object ("{}" when empty).
	Input json.RawMessage
	// StringInputs: Input holds strings only; those given for properties
	// the workflow's input schema types otherwise are parsed as JSON.
	StringInputs bool
	// Commit, when set, runs in the transaction that creates the run, so a
	// record of the caller commits with the run or not at all; its error
	// undoes the start and is answered as is.
	Commit func(tx *sql.Tx, run LocalRun) error
}

// LocalRun is what another subsystem reads of a run.
type LocalRun struct {
	ID     string
	Status string
	// Workflow and Version are the published workflow version the run runs.
	Workflow string
	Version  int
	// Input is the run input as stored (secret values redacted); Output
	// and Error are set once the run has ended.
	Input, Output json.RawMessage
	ErrorCode     string
	ErrorMessage  string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Path is the run's canonical path on the services listener.
	Path string
}

// StartLocalRun starts a run in the local workspace's environment through
// the newest active activation of the workflow, with the same code as
// POST E/runs. created_by is the local operator: the bridge acts for the
// person at this machine, and the system principal holds no business
// access. Errors wrap ErrWorkflowNotPublished, ErrNoActiveActivation or
// ErrInvalidInput, or are internal.
func (s *Service) StartLocalRun(ctx context.Context, st WorkflowStart) (LocalRun, error) {
	id, version, err := ParseWorkflowRef(st.Workflow)
	if err != nil {
		return LocalRun{}, err
	}
	ls := engine.LocalStart{
		Scope:      auth.Scope{Tenant: s.local.TenantID, Project: s.local.ProjectID, Environment: s.local.EnvironmentID},
		WorkflowID: id, Version: version, Input: st.Input, StringInputs: st.StringInputs, By: s.local.OperatorID,
	}
	if st.Commit != nil {
		ls.Commit = func(tx *sql.Tx, run engine.RunInfo) error { return st.Commit(tx, localRun(run)) }
	}
	run, err := s.engine.StartActivated(ctx, ls)
	if err != nil {
		return LocalRun{}, err
	}
	return localRun(run), nil
}

// LocalRun reads a run by id (ErrRunNotFound when there is none).
func (s *Service) LocalRun(ctx context.Context, id string) (LocalRun, error) {
	run, err := s.engine.ReadRun(ctx, id)
	if err != nil {
		return LocalRun{}, err
	}
	return localRun(run), nil
}

// SetAgents binds the runner of agent steps (the bridge; see package wire).
func (s *Service) SetAgents(a engine.AgentRunner) { s.engine.SetAgents(a) }

// CheckAgentOutput answers the refusal an agent task's output would get:
// nil when the step's output schema accepts it.
func (s *Service) CheckAgentOutput(ctx context.Context, t engine.AgentTask, output json.RawMessage) error {
	return s.engine.CheckAgentOutput(ctx, t.RunID, t.TaskID, output)
}

// ParseWorkflowRef splits "id" or "id@version" (version >= 1; 0 when
// absent). It refuses an empty id or a malformed version with
// ErrWorkflowNotPublished: no such workflow can be published.
func ParseWorkflowRef(ref string) (string, int, error) {
	id, v, hasVersion := strings.Cut(ref, "@")
	if id == "" {
		return "", 0, engine.RefuseStart(ErrWorkflowNotPublished, "the workflow id is empty")
	}
	if !hasVersion {
		return id, 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || strconv.Itoa(n) != v {
		return "", 0, engine.RefuseStart(ErrWorkflowNotPublished, "%q is not a workflow id with an optional @version (a positive integer)", ref)
	}
	return id, n, nil
}

func localRun(r engine.RunInfo) LocalRun {
	out := LocalRun{ID: r.ID, Status: r.Status, Workflow: r.WorkflowID, Version: r.WorkflowVersion,
		Input: r.State.Input, Output: r.State.Output, Path: r.Path,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.State.Error != nil {
		out.ErrorCode, out.ErrorMessage = r.State.Error.Code, r.State.Error.Message
	}
	return out
}
