package factory

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/httpx/docsui"
)

// API paths, under the services listener (docs/factory-api.md).
const (
	apiPrefix = "/api/v1"
	pathRuns  = apiPrefix + "/runs"
	pathRun   = pathRuns + "/:id"
	// DocPath serves the factory's OpenAPI document.
	DocPath = docsui.FactoryDocURL
)

// maxBodyBytes bounds every request body.
const maxBodyBytes = 64 << 10

// handler is an HTTP handler that returns its error for writeError.
type handler func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// route is one endpoint: how it is served and how it is documented. The
// OpenAPI document is generated from the table Routes registers.
type route struct {
	method, path string
	public       bool
	read         bool // platform principals may use it (docs/factory-api.md, "Access")
	h            handler
	op           operation
}

// Routes registers the factory's endpoints on the services listener.
// Every /api/v1 route needs the owner token, or for the read routes a
// platform principal allowed to read the run's project (authorize); the
// OpenAPI document is public.
func (s *Service) Routes(r *httprouter.Router) {
	for _, rt := range s.routes() {
		r.Handle(rt.method, rt.path, s.serve(rt))
	}
}

func (s *Service) routes() []route {
	e400, e401, e403, e404, e409, e413, e415, e422 := 400, 401, 403, 404, 409, 413, 415, 422
	return []route{
		{method: http.MethodPost, path: pathRuns, h: s.handleCreate, op: operation{id: "createRun", summary: "Queue a build, maintenance or test run",
			description: "Records the repository's HEAD (source_revision, source_tree) and queues the run; it starts when a slot is free (2 active runs at most, 1 per repository).",
			body:        CreateRequest{}, status: http.StatusCreated, resp: Run{}, errs: []int{e400, e401, e403, e413, e415, e422}}},
		{method: http.MethodGet, path: pathRuns, read: true, h: s.handleList, op: operation{id: "listRuns", summary: "List runs, newest first",
			status: http.StatusOK, resp: RunPage{}, errs: []int{e400, e401, e403},
			query: []param{{"state", "only runs in this state"}, {"repo", "only runs of this repository root (absolute path)"},
				{"limit", "runs per page, 1 to 100 (default 20)"}, {"cursor", "next_cursor of the previous page"}}}},
		{method: http.MethodGet, path: pathRun, read: true, h: s.handleGet, op: operation{id: "getRun", summary: "A run with its tasks, agent turns (provider events, exit codes, outputs), verification attempts, changed files, diff and journal check",
			status: http.StatusOK, resp: Run{}, errs: []int{e401, e403, e404}}},
		{method: http.MethodGet, path: pathRun + "/plan", read: true, h: s.handlePlan, op: operation{id: "getPlan", summary: "The plan: tasks and the frozen product, source, provider, role, policy, runner and checks",
			status: http.StatusOK, resp: Plan{}, errs: []int{e401, e403, e404}}},
		{method: http.MethodGet, path: pathRun + "/journal", read: true, h: s.handleJournal, op: operation{id: "getJournal", summary: "Journal entries (intent, receipt, reconciliation) and valid, which confirms only the hash chain",
			status: http.StatusOK, resp: JournalView{}, errs: []int{e401, e403, e404}}},
		{method: http.MethodGet, path: pathRun + "/worker-messages", read: true, h: s.handleMessages, op: operation{id: "getWorkerMessages", summary: "Clarification requests of workers and their answers",
			description: "A worker asks by ending its answer with a QUESTION: line; the run is then paused until answered (POST .../answer) and resumed.",
			status:      http.StatusOK, resp: WorkerMessages{}, errs: []int{e401, e403, e404}}},
		{method: http.MethodGet, path: pathRun + "/diff", read: true, h: s.handleDiff, op: operation{id: "getDiff", summary: "The run diff (a git patch from source_revision to checkpoint_revision, at most 1 MB)",
			status: http.StatusOK, raw: "text/x-diff", errs: []int{e401, e403, e404, e409}}},
		{method: http.MethodGet, path: pathRun + "/artifacts/changes.zip", read: true, h: s.handleZip, op: operation{id: "getChangesZip", summary: "The retained changed-source export: manifest.json and files/<path> as in the checkpoint",
			status: http.StatusOK, raw: "application/zip", errs: []int{e401, e403, e404}}},
		{method: http.MethodPost, path: pathRun + "/cancel", h: s.handleCancel, op: operation{id: "cancelRun", summary: "Cancel a queued or running run",
			description: "A running run's agent and verification process groups are terminated; the answer comes once the run has ended. Completed effects (commits in the workspace) are not undone.",
			status:      http.StatusOK, resp: Run{}, errs: []int{e401, e403, e404, e409}}},
		{method: http.MethodPost, path: pathRun + "/retry", h: s.handleRetry, op: operation{id: "retryRun", summary: "Create a fresh run (new clone of the repository's current HEAD) with a finished run's settings",
			status: http.StatusCreated, resp: Run{}, errs: []int{e401, e403, e404, e409, e422}}},
		{method: http.MethodPost, path: pathRun + "/resume", h: s.handleResume, op: operation{id: "resumeRun", summary: "Queue a cancelled, interrupted or provider-stopped run again in the same workspace",
			description: "Its unfinished tasks are planned again as a new plan revision; the work done (commits, verification attempts, agent turns) is kept. The retained workspace must be at the commit the journal records.",
			status:      http.StatusOK, resp: Run{}, errs: []int{e401, e403, e404, e409}}},
		{method: http.MethodPost, path: pathRun + "/handoff", h: s.handleHandoff, op: operation{id: "handoffRun", summary: "Resume a run with another provider configuration (profile or provider)",
			description: "Source, policy, checks and evidence are kept; the plan gets a new revision.",
			body:        HandoffRequest{}, status: http.StatusOK, resp: Run{}, errs: []int{e400, e401, e403, e404, e409, e413, e415, e422}}},
		{method: http.MethodPost, path: pathRun + "/answer", h: s.handleAnswer, op: operation{id: "answerRun", summary: "Answer the question a paused run's worker asked; resume it afterwards",
			body: AnswerRequest{}, status: http.StatusOK, resp: Run{}, errs: []int{e400, e401, e403, e404, e409, e413, e415, e422}}},
		{method: http.MethodPost, path: pathRun + "/reconcile", h: s.handleReconcile, op: operation{id: "reconcileRun", summary: "Resolve a run in needs_reconciliation: journal the operator's note and end it failed",
			body: ReconcileRequest{}, status: http.StatusOK, resp: Run{}, errs: []int{e400, e401, e403, e404, e409, e413, e415, e422}}},
		{method: http.MethodGet, path: DocPath, public: true, h: s.handleDoc},
	}
}

func (s *Service) serve(rt route) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if !rt.public {
			w.Header().Set("Cache-Control", "no-store")
			ar, err := s.authorize(r, rt, p.ByName("id"))
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			r = ar
		}
		if err := rt.h(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// writeError is the one place that maps errors to problem+json responses.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p, body := httpx.BodyProblem(err, "FA")
	if !body {
		p = &httpx.Problem{Status: http.StatusInternalServerError, Code: "FA-INTERNAL", Message: "internal error"}
	}
	var e *Error
	switch {
	case body:
	case errors.As(err, &e):
		p.Message = e.Message
		switch e.Code {
		case EInvalid:
			p.Status, p.Code = http.StatusUnprocessableEntity, "FA-VALIDATION"
		case EBadRequest:
			p.Status, p.Code = http.StatusBadRequest, "FA-BAD-REQUEST"
		case ENotFound:
			p.Status, p.Code = http.StatusNotFound, "FA-NOT-FOUND"
		case EConflict:
			p.Status, p.Code = http.StatusConflict, "FA-CONFLICT"
		case ETooLarge:
			p.Status, p.Code = http.StatusConflict, "FA-DIFF-TOO-LARGE"
		case EUnauthorized:
			p.Status, p.Code = http.StatusUnauthorized, "FA-UNAUTHORIZED"
		case EForbidden:
			p.Status, p.Code = http.StatusForbidden, "FA-FORBIDDEN"
		case EUnavailable:
			p.Status, p.Code = http.StatusServiceUnavailable, "FA-UNAVAILABLE"
		default:
			p.Message = "internal error"
		}
		if e.Field != "" {
			p.Diagnostics = []any{fieldDiag{Field: e.Field, Message: e.Message}}
		}
	case errors.Is(err, context.Canceled):
		p.Status, p.Code, p.Message = http.StatusServiceUnavailable, "FA-UNAVAILABLE", "the request was cancelled"
	}
	if p.Status == http.StatusInternalServerError {
		s.log.Error("factory: request failed", "method", r.Method, "path", r.URL.Path, "request_id", httpx.RequestID(r), "err", err)
	}
	httpx.WriteProblem(w, r, p)
}

// fieldDiag is one diagnostic of a problem: the request field at fault.
type fieldDiag = httpx.FieldDiagnostic

// decodeBody reads a JSON body strictly (httpx.DecodeJSON): application/json,
// at most maxBodyBytes, valid UTF-8, no duplicate keys, no unknown
// properties.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	return httpx.DecodeJSON(w, r, dst, httpx.DecodeOptions{MaxBytes: maxBodyBytes, JSONOnly: true})
}

// noQuery refuses query parameters on routes that take none.
func noQuery(r *http.Request) error {
	for k := range r.URL.Query() {
		return errorf(EBadRequest, "unknown query parameter %q", k)
	}
	return nil
}

func (s *Service) handleCreate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req CreateRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	run, err := s.Create(r.Context(), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", pathRuns+"/"+run.ID)
	httpx.WriteJSON(w, http.StatusCreated, run)
	return nil
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var q ListQuery
	for key, vals := range r.URL.Query() {
		if len(vals) != 1 {
			return errorf(EBadRequest, "query parameter %q must be given once", key)
		}
		v := vals[0]
		switch key {
		case "state":
			q.State = v
		case "repo":
			q.Repo = v
		case "cursor":
			q.Cursor = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n == 0 {
				return errorf(EBadRequest, "limit must be a whole number from 1 to 100")
			}
			q.Limit = n
		default:
			return errorf(EBadRequest, "unknown query parameter %q (allowed: state, repo, limit, cursor)", key)
		}
	}
	page, err := s.List(r.Context(), q)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, page)
	return nil
}

func (s *Service) handleGet(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Get(r.Context(), p.ByName("id")) })
}

func (s *Service) handlePlan(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Plan(r.Context(), p.ByName("id")) })
}

func (s *Service) handleJournal(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Journal(r.Context(), p.ByName("id")) })
}

// WorkerMessages is the answer of GET /runs/{id}/worker-messages.
type WorkerMessages struct {
	RunID    string          `json:"run_id"`
	Messages []WorkerMessage `json:"messages"`
}

func (s *Service) handleMessages(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.answer(w, r, http.StatusOK, func() (any, error) {
		return s.Messages(r.Context(), p.ByName("id"))
	})
}

func (s *Service) handleCancel(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := emptyBody(w, r); err != nil {
		return err
	}
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Cancel(r.Context(), p.ByName("id")) })
}

func (s *Service) handleRetry(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := emptyBody(w, r); err != nil {
		return err
	}
	return s.answer(w, r, http.StatusCreated, func() (any, error) { return s.Retry(r.Context(), p.ByName("id")) })
}

func (s *Service) handleResume(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := emptyBody(w, r); err != nil {
		return err
	}
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Resume(r.Context(), p.ByName("id")) })
}

func (s *Service) handleHandoff(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req HandoffRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Handoff(r.Context(), p.ByName("id"), req) })
}

func (s *Service) handleAnswer(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req AnswerRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Answer(r.Context(), p.ByName("id"), req) })
}

func (s *Service) handleReconcile(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req ReconcileRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	return s.answer(w, r, http.StatusOK, func() (any, error) { return s.Reconcile(r.Context(), p.ByName("id"), req) })
}

// answer writes fn's value as JSON with status, after refusing a query
// string the route does not take.
func (s *Service) answer(w http.ResponseWriter, r *http.Request, status int, fn func() (any, error)) error {
	if err := noQuery(r); err != nil {
		return err
	}
	v, err := fn()
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, status, v)
	return nil
}

// emptyBody accepts no body or an empty JSON object: cancel and retry take
// no parameters.
func emptyBody(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength == 0 {
		return nil
	}
	var empty struct{}
	return decodeBody(w, r, &empty)
}

func (s *Service) handleDiff(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.serveArtifact(w, r, p.ByName("id"), "changes.patch", "text/x-diff; charset=utf-8")
}

func (s *Service) handleZip(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.serveArtifact(w, r, p.ByName("id"), "changes.zip", "application/zip")
}

func (s *Service) serveArtifact(w http.ResponseWriter, r *http.Request, id, name, contentType string) error {
	if err := noQuery(r); err != nil {
		return err
	}
	f, err := s.Artifact(r.Context(), id, name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	if name == "changes.zip" {
		w.Header().Set("Content-Disposition", `attachment; filename="changes-`+id+`.zip"`)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
	return nil
}
