package bridge

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/store"
)

// Error codes of the workflow-run routes.
const (
	CodeUnknownTemplate      = "unknown_template"      // 422: no workflow (version) of that id is published in the local project
	CodeTemplateNotActive    = "template_not_active"   // 422: published, but no active activation in the local environment
	CodeInvalidInputs        = "invalid_inputs"        // 422: the inputs do not fit the workflow's input schema
	CodeWorkflowsUnavailable = "workflows_unavailable" // 503: no workflow platform runs in this daemon
)

func init() {
	codeStatus[CodeUnknownTemplate] = http.StatusUnprocessableEntity
	codeStatus[CodeTemplateNotActive] = http.StatusUnprocessableEntity
	codeStatus[CodeInvalidInputs] = http.StatusUnprocessableEntity
	codeStatus[CodeWorkflowsUnavailable] = http.StatusServiceUnavailable
}

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

// Routes registers the workflow-run routes on the bridge listener (once;
// they appear in the bridge's OpenAPI document).
func (w *WorkflowRuns) Routes(r *httprouter.Router) {
	add := func(method, path, access string, h handlerFunc) { w.s.handle(r, method, path, access, h) }
	add("POST", "/v1/bridge/workflow-runs", ScopeWorkflows, w.handleStart)
	add("GET", "/v1/bridge/workflow-runs", ScopeRead, w.handleList)
	add("GET", "/v1/bridge/workflow-runs/:id", ScopeRead, w.handleGet)
}

// workflowRunRequest is the body of POST /v1/bridge/workflow-runs.
type workflowRunRequest struct {
	TemplateID *string                    `json:"templateId"`
	Inputs     map[string]json.RawMessage `json:"inputs"`
}

// canonicalRun is a validated request in the form that is hashed: key
// order and whitespace of the body do not matter.
type canonicalRun struct {
	TemplateID string            `json:"templateId"`
	Inputs     map[string]string `json:"inputs"`
}

func parseWorkflowRun(data []byte) (canonicalRun, error) {
	var req workflowRunRequest
	if err := decodeStrict(data, &req); err != nil {
		return canonicalRun{}, err
	}
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

const workflowCols = `id, client_id, template_id, platform_run_id, request_hash, created_at`

func scanWorkflowRecord(row scanner) (workflowRecord, error) {
	var rec workflowRecord
	var created string
	err := row.Scan(&rec.ID, &rec.Client, &rec.TemplateID, &rec.PlatformRunID, &rec.Hash, &created)
	rec.CreatedAt = parseTime(created)
	return rec, err
}

// recordByKey finds the run a client started with an Idempotency-Key.
func recordByKey(ctx context.Context, q store.Querier, client, key string) (*workflowRecord, error) {
	rec, err := scanWorkflowRecord(q.QueryRowContext(ctx, `SELECT `+workflowCols+` FROM bridge_workflow_runs
		WHERE client_id = ? AND idempotency_key = ?`, client, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read workflow run: %w", err)
	}
	return &rec, nil
}

// errKeyTaken undoes a start whose Idempotency-Key another request took
// meanwhile.
var errKeyTaken = errors.New("idempotency key taken meanwhile")

func (w *WorkflowRuns) handleStart(rw http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	if err := noQuery(r); err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	req, err := parseWorkflowRun(data)
	if err != nil {
		return err
	}
	runner, err := w.platform()
	if err != nil {
		return err
	}
	canonical, err := json.Marshal(req)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(canonical)
	hash := sum[:]
	ctx := r.Context()
	replay := func() (bool, error) {
		rec, err := recordByKey(ctx, w.s.db.Reader(), p.Client, key)
		if err != nil || rec == nil {
			return false, err
		}
		if string(rec.Hash) != string(hash) {
			return true, errf(CodeIdempotencyConflict, "Idempotency-Key was already used with a different body")
		}
		view, err := w.view(ctx, runner, *rec)
		if err != nil {
			return true, err
		}
		rw.Header().Set("Idempotent-Replayed", "true")
		rw.Header().Set("Location", "/v1/bridge/workflow-runs/"+rec.ID)
		return true, respond(rw, http.StatusAccepted, view)
	}
	if key != "" {
		if done, err := replay(); done || err != nil {
			return err
		}
	}
	inputs, err := json.Marshal(req.Inputs)
	if err != nil {
		return err
	}
	rec := workflowRecord{ID: uuid.NewString(), Client: p.Client, TemplateID: req.TemplateID, Hash: hash, CreatedAt: w.s.now().UTC()}
	run, err := runner.StartWorkflowRun(ctx, WorkflowStart{TemplateID: req.TemplateID, Inputs: inputs,
		Record: func(tx *sql.Tx, run PlatformRun) error {
			var idem any
			if key != "" {
				idem = key
				if taken, err := recordByKey(ctx, txq{tx}, p.Client, key); err != nil {
					return err
				} else if taken != nil {
					return errKeyTaken
				}
			}
			rec.PlatformRunID = run.ID
			_, err := tx.ExecContext(ctx, `INSERT INTO bridge_workflow_runs(id, client_id, template_id, idempotency_key, request_hash, platform_run_id, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, rec.ID, rec.Client, rec.TemplateID, idem, rec.Hash, rec.PlatformRunID, nowString(rec.CreatedAt))
			return err
		}})
	if errors.Is(err, errKeyTaken) {
		if done, err := replay(); done || err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	rw.Header().Set("Location", "/v1/bridge/workflow-runs/"+rec.ID)
	return respond(rw, http.StatusAccepted, workflowView(rec, run))
}

func (w *WorkflowRuns) handleList(rw http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	runner, err := w.platform()
	if err != nil {
		return err
	}
	ctx := r.Context()
	cond, args := visible(p)
	rows, err := w.s.db.Reader().QueryContext(ctx, `SELECT `+workflowCols+` FROM bridge_workflow_runs WHERE `+cond+
		` ORDER BY seq DESC LIMIT ?`, append(args, maxWorkflowRunList+1)...)
	if err != nil {
		return fmt.Errorf("list workflow runs: %w", err)
	}
	var recs []workflowRecord
	for rows.Next() {
		rec, err := scanWorkflowRecord(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("list workflow runs: %w", err)
		}
		recs = append(recs, rec)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list workflow runs: %w", err)
	}
	more := len(recs) > maxWorkflowRunList
	if more {
		recs = recs[:maxWorkflowRunList]
	}
	runs := make([]WorkflowRun, 0, len(recs))
	for _, rec := range recs {
		v, err := w.view(ctx, runner, rec)
		if err != nil {
			return err
		}
		runs = append(runs, v)
	}
	return respond(rw, http.StatusOK, map[string]any{"workflowRuns": runs, "hasMore": more})
}

func (w *WorkflowRuns) handleGet(rw http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id, err := jobID(ps) // the same UUID rule as job ids
	if err != nil {
		return errf(CodeInvalidParameter, "workflow run id must be a UUID")
	}
	runner, err := w.platform()
	if err != nil {
		return err
	}
	cond, args := visible(p)
	rec, err := scanWorkflowRecord(w.s.db.Reader().QueryRowContext(r.Context(), `SELECT `+workflowCols+` FROM bridge_workflow_runs
		WHERE id = ? AND `+cond, append([]any{id}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return errf(CodeNotFound, "no workflow run %s", id)
	}
	if err != nil {
		return fmt.Errorf("read workflow run: %w", err)
	}
	v, err := w.view(r.Context(), runner, rec)
	if err != nil {
		return err
	}
	return respond(rw, http.StatusOK, v)
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
