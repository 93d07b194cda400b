package bridge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Bounds of workflow-run requests.
const (
	maxTemplateID     = 256
	maxWorkflowInputs = 256
	// maxWorkflowRunList is how many runs GET /v1/bridge/workflow-runs
	// lists, newest first.
	maxWorkflowRunList = 200
)

// WorkflowRunner starts and reads the platform runs behind the bridge's
// workflow runs. The platform implements it; package wire binds it once
// both subsystems are built (WorkflowRuns.Bind).
type WorkflowRunner interface {
	// StartWorkflowRun starts a run of the workflow TemplateID names in the
	// local workspace. Refusals are *Error values with the codes
	// CodeUnknownTemplate, CodeTemplateNotActive or CodeInvalidInputs; an
	// error of Record is answered as is.
	StartWorkflowRun(ctx context.Context, start WorkflowStart) (PlatformRun, error)
	// WorkflowRun reads a platform run; ErrPlatformRunNotFound when it
	// does not exist.
	WorkflowRun(ctx context.Context, id string) (PlatformRun, error)
}

// ErrPlatformRunNotFound is what a WorkflowRunner wraps for an unknown run.
var ErrPlatformRunNotFound = errors.New("platform run not found")

// WorkflowStart is a run start.
type WorkflowStart struct {
	// TemplateID is a workflow id, optionally with "@version".
	TemplateID string
	// Inputs is the run input: a JSON object of strings.
	Inputs json.RawMessage
	// Record runs in the transaction that creates the platform run: the
	// bridge's record commits with the run or not at all.
	Record func(tx *sql.Tx, run PlatformRun) error
}

// PlatformRun is what the bridge reads of a platform run.
type PlatformRun struct {
	ID     string
	Status string
	// Workflow is "id@version".
	Workflow string
	// Input is the run input as the platform holds it (activation defaults
	// filled in, secret values redacted); Output and Error are set once the
	// run has ended.
	Input, Output        json.RawMessage
	Error                *WorkflowRunError
	CreatedAt, UpdatedAt time.Time
	// Path is the run's path on the services listener.
	Path string
}

// WorkflowRun is the API's view of a workflow run.
type WorkflowRun struct {
	ID            string            `json:"id"`
	Client        string            `json:"client"`
	TemplateID    string            `json:"templateId"`
	Workflow      string            `json:"workflow"`
	Status        string            `json:"status"`
	Inputs        json.RawMessage   `json:"inputs"`
	Output        json.RawMessage   `json:"output"`
	Error         *WorkflowRunError `json:"error"`
	CreatedAt     time.Time         `json:"createdAt"`
	UpdatedAt     time.Time         `json:"updatedAt"`
	PlatformRunID string            `json:"platformRunId"`
	Links         map[string]string `json:"links"`
}

// WorkflowRunError says why a run failed.
type WorkflowRunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WorkflowRuns serves /v1/bridge/workflow-runs for a bridge.
type WorkflowRuns struct {
	s *Service

	mu     sync.RWMutex
	runner WorkflowRunner
}

// WorkflowRuns returns the workflow-run routes of s; until Bind they answer
// 503 workflows_unavailable.
func (s *Service) WorkflowRuns() *WorkflowRuns { return &WorkflowRuns{s: s} }

// Bind sets the platform the routes start and read runs with (nil unbinds).
func (w *WorkflowRuns) Bind(r WorkflowRunner) {
	w.mu.Lock()
	w.runner = r
	w.mu.Unlock()
}

func (w *WorkflowRuns) platform() (WorkflowRunner, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.runner == nil {
		return nil, errf(CodeWorkflowsUnavailable, "workflow runs need the workflow platform, which does not run in this daemon")
	}
	return w.runner, nil
}

// WorkflowRunRequest is the body of POST /v1/bridge/workflow-runs.
type WorkflowRunRequest struct {
	TemplateID *string                    `json:"templateId"`
	Inputs     map[string]json.RawMessage `json:"inputs"`
}

// canonicalRun is a validated request in the form that is hashed: key
// order and whitespace of the body do not matter.
type canonicalRun struct {
	TemplateID string            `json:"templateId"`
	Inputs     map[string]string `json:"inputs"`
}

// validate checks a request against spec 1's bounds and returns its
// canonical form.
func (req WorkflowRunRequest) validate() (canonicalRun, error) {
	if req.TemplateID == nil {
		return canonicalRun{}, errf(CodeInvalidRequest, "templateId is required")
	}
	if n := utf8.RuneCountInString(*req.TemplateID); n < 1 || n > maxTemplateID || strings.TrimSpace(*req.TemplateID) != *req.TemplateID {
		return canonicalRun{}, errf(CodeInvalidRequest, "templateId must be a workflow id of 1 to %d characters, optionally with @version", maxTemplateID)
	}
	if req.Inputs == nil {
		return canonicalRun{}, errf(CodeInvalidRequest, "inputs is required: an object whose values are all strings")
	}
	if len(req.Inputs) > maxWorkflowInputs {
		return canonicalRun{}, errf(CodeInvalidRequest, "inputs may hold at most %d entries", maxWorkflowInputs)
	}
	out := canonicalRun{TemplateID: *req.TemplateID, Inputs: make(map[string]string, len(req.Inputs))}
	for k, raw := range req.Inputs {
		var v string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			return canonicalRun{}, errf(CodeInvalidRequest, "inputs.%s must be a string (every value of inputs is a string)", k)
		}
		out.Inputs[k] = v
	}
	return out, nil
}

// workflowRecord is the bridge's row of a workflow run.
type workflowRecord struct {
	ID, Client, TemplateID, PlatformRunID string
	Hash                                  []byte
	CreatedAt                             time.Time
}

// errKeyTaken undoes a start whose Idempotency-Key another request took
// meanwhile.
var errKeyTaken = errors.New("idempotency key taken meanwhile")

// Start starts a run of a workflow published and active in the local
// project. With an Idempotency-Key, a repeat of the same request answers
// the run the first one started (replayed true); a different body is
// idempotency_conflict.
func (w *WorkflowRuns) Start(ctx context.Context, p Principal, r WorkflowRunRequest, key string) (run WorkflowRun, replayed bool, err error) {
	req, err := r.validate()
	if err != nil {
		return WorkflowRun{}, false, err
	}
	runner, err := w.platform()
	if err != nil {
		return WorkflowRun{}, false, err
	}
	canonical, err := json.Marshal(req)
	if err != nil {
		return WorkflowRun{}, false, err
	}
	sum := sha256.Sum256(canonical)
	hash := sum[:]
	replay := func() (WorkflowRun, bool, error) {
		rec, err := recordByKey(ctx, w.s.db.Reader(), p.Client, key)
		if err != nil || rec == nil {
			return WorkflowRun{}, false, err
		}
		if string(rec.Hash) != string(hash) {
			return WorkflowRun{}, true, errf(CodeIdempotencyConflict, "Idempotency-Key was already used with a different body")
		}
		v, err := w.view(ctx, runner, *rec)
		return v, true, err
	}
	if key != "" {
		if v, done, err := replay(); done || err != nil {
			return v, done, err
		}
	}
	inputs, err := json.Marshal(req.Inputs)
	if err != nil {
		return WorkflowRun{}, false, err
	}
	rec := workflowRecord{ID: uuid.NewString(), Client: p.Client, TemplateID: req.TemplateID, Hash: hash, CreatedAt: w.s.now().UTC()}
	started, err := runner.StartWorkflowRun(ctx, WorkflowStart{TemplateID: req.TemplateID, Inputs: inputs,
		Record: func(tx *sql.Tx, run PlatformRun) error {
			if key != "" {
				if taken, err := recordByKey(ctx, txq{tx}, p.Client, key); err != nil {
					return err
				} else if taken != nil {
					return errKeyTaken
				}
			}
			rec.PlatformRunID = run.ID
			return insertWorkflowRecord(ctx, tx, rec, key)
		}})
	if errors.Is(err, errKeyTaken) {
		if v, done, err := replay(); done || err != nil {
			return v, done, err
		}
	}
	if err != nil {
		return WorkflowRun{}, false, err
	}
	return workflowView(rec, started), false, nil
}

// WorkflowRunList is p's workflow runs, newest first (JSON name order).
type WorkflowRunList struct {
	HasMore      bool          `json:"hasMore"`
	WorkflowRuns []WorkflowRun `json:"workflowRuns"`
}

// List reads the newest maxWorkflowRunList runs p may see.
func (w *WorkflowRuns) List(ctx context.Context, p Principal) (WorkflowRunList, error) {
	runner, err := w.platform()
	if err != nil {
		return WorkflowRunList{}, err
	}
	recs, err := w.s.workflowRecords(ctx, p, maxWorkflowRunList+1)
	if err != nil {
		return WorkflowRunList{}, fmt.Errorf("list workflow runs: %w", err)
	}
	more := len(recs) > maxWorkflowRunList
	if more {
		recs = recs[:maxWorkflowRunList]
	}
	runs := make([]WorkflowRun, 0, len(recs))
	for _, rec := range recs {
		v, err := w.view(ctx, runner, rec)
		if err != nil {
			return WorkflowRunList{}, err
		}
		runs = append(runs, v)
	}
	return WorkflowRunList{WorkflowRuns: runs, HasMore: more}, nil
}

// Get reads one run p may see.
func (w *WorkflowRuns) Get(ctx context.Context, p Principal, id string) (WorkflowRun, error) {
	runner, err := w.platform()
	if err != nil {
		return WorkflowRun{}, err
	}
	rec, err := w.s.workflowRecord(ctx, p, id)
	if errors.Is(err, sql.ErrNoRows) {
		return WorkflowRun{}, errf(CodeNotFound, "no workflow run %s", id)
	}
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("read workflow run: %w", err)
	}
	return w.view(ctx, runner, rec)
}

// view reads the platform run of rec. A platform run that no longer
// exists shows status unknown.
func (w *WorkflowRuns) view(ctx context.Context, runner WorkflowRunner, rec workflowRecord) (WorkflowRun, error) {
	run, err := runner.WorkflowRun(ctx, rec.PlatformRunID)
	if errors.Is(err, ErrPlatformRunNotFound) {
		return workflowView(rec, PlatformRun{ID: rec.PlatformRunID, Status: "unknown",
			Error: &WorkflowRunError{Code: "run_missing", Message: "the platform has no run " + rec.PlatformRunID}}), nil
	}
	if err != nil {
		return WorkflowRun{}, err
	}
	return workflowView(rec, run), nil
}

func workflowView(rec workflowRecord, run PlatformRun) WorkflowRun {
	v := WorkflowRun{ID: rec.ID, Client: rec.Client, TemplateID: rec.TemplateID, Workflow: run.Workflow, Status: run.Status,
		Inputs: run.Input, Output: run.Output, Error: run.Error, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt,
		PlatformRunID: rec.PlatformRunID, Links: map[string]string{}}
	if len(v.Inputs) == 0 {
		v.Inputs = json.RawMessage("{}")
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt, v.UpdatedAt = rec.CreatedAt, rec.CreatedAt
	}
	if run.Path != "" {
		v.Links["platformRun"] = run.Path
	}
	return v
}
