package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/bridge/provider"
	"github.com/agentbridge/bridge/httpx"
)

// Access levels of routes beyond the four scopes.
const (
	accessOwner = "owner" // the owner token only
	accessChat  = "read+submit"
	// accessTurn: the token of the job's running turn only (agent-step
	// tools, docs/workflow-language.md), never a client token.
	accessTurn = "turn"
)

type handlerFunc func(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error

type route struct {
	Method, Path, Access string
}

// Routes registers the bridge's handlers on the bridge listener.
func (s *Service) Routes(bridge, _ *httprouter.Router) {
	s.routes = nil
	add := func(method, path, access string, h handlerFunc) { s.handle(bridge, method, path, access, h) }
	add("GET", "/v1/bridge/status", ScopeRead, s.handleStatus)
	add("GET", "/v1/bridge/openapi.json", ScopeRead, s.handleOpenAPI)
	add("POST", "/v1/bridge/jobs", ScopeSubmit, s.handleCreateJob)
	add("GET", "/v1/bridge/jobs", ScopeRead, s.handleListJobs)
	add("GET", "/v1/bridge/jobs/:id", ScopeRead, s.jobView(s.viewJob))
	add("GET", "/v1/bridge/jobs/:id/audit", ScopeRead, s.handleAudit)
	add("GET", "/v1/bridge/jobs/:id/tools", ScopeRead, s.handleTools)
	add("GET", "/v1/bridge/jobs/:id/tools/:tool", ScopeRead, s.handleTool)
	// Authenticated by the running turn's own token, not a client token.
	bridge.POST("/v1/bridge/jobs/:id/mcp", s.handleAgentMCP)
	s.routes = append(s.routes, route{http.MethodPost, "/v1/bridge/jobs/:id/mcp", accessTurn})
	add("GET", "/v1/bridge/jobs/:id/attempts", ScopeRead, s.jobView(s.viewAttempts))
	add("POST", "/v1/bridge/jobs/:id/pause", ScopeControl, s.control(ActPause))
	add("POST", "/v1/bridge/jobs/:id/resume", ScopeControl, s.control(ActResume))
	add("POST", "/v1/bridge/jobs/:id/cancel", ScopeControl, s.control(ActCancel))
	add("POST", "/v1/bridge/jobs/:id/retry", ScopeControl, s.control(ActRetry))
	add("GET", "/v1/bridge/jobs/:id/result", ScopeRead, s.handleResult)
	add("GET", "/v1/bridge/jobs/:id/messages", ScopeRead, s.jobView(s.viewMessages))
	add("POST", "/v1/bridge/jobs/:id/messages", ScopeSubmit, s.handlePostMessage)
	add("GET", "/v1/bridge/events", ScopeRead, s.handleEvents)
	add("POST", "/v1/bridge/admin/tokens", accessOwner, s.handleMintToken)
	add("GET", "/v1/bridge/admin/tokens", accessOwner, s.handleListTokens)
	add("DELETE", "/v1/bridge/admin/clients/:client", accessOwner, s.handleRevoke)
	add("POST", "/v1/chat/completions", accessChat, s.handleChat)
	add("GET", "/v1/models", ScopeRead, s.handleModels)
	// A catch-all: model ids contain a slash (bridge/default), which
	// clients send as is or as %2F; both arrive here decoded.
	add("GET", "/v1/models/*model", ScopeRead, s.handleModel)
}

// handle registers one route (once) on r and lists it for the OpenAPI
// document. A GET route also answers HEAD with the same status and headers
// and no body (docs/bridge-api.md); net/http drops the body of a HEAD.
func (s *Service) handle(r *httprouter.Router, method, path, access string, h handlerFunc) {
	if slices.Contains(s.routes, route{method, path, access}) {
		return
	}
	s.routes = append(s.routes, route{method, path, access})
	r.Handle(method, path, s.wrap(access, h))
	if method == http.MethodGet {
		r.Handle(http.MethodHead, path, s.wrap(access, h))
	}
}

// maxBody bounds every request body: a message of 100,000 characters of
// 4-byte UTF-8 escaped as JSON fits well within it.
const maxBody = 2 << 20

// wrap authenticates, checks the access level and maps errors. Routes
// outside /v1/bridge/ (Chat Completions, models) answer in OpenAI's error
// shape, the others in the bridge's.
func (s *Service) wrap(access string, h handlerFunc) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		chat := !strings.HasPrefix(r.URL.Path, "/v1/bridge/")
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // net/http's own way to abort a response
			}
			s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.fail(w, r, chat, fmt.Errorf("panic: %v", v))
		}()
		p, err := s.authenticate(r)
		if err == nil {
			err = checkAccess(p, access)
		}
		if err == nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			err = h(w, r, p, ps)
		}
		if err != nil {
			s.fail(w, r, chat, err)
		}
	}
}

// fail answers err in the route's error shape. Only server faults (5xx)
// are logged as errors: a client's bad request is not the daemon's problem
// and is logged at debug level.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, chat bool, err error) {
	var status int
	if chat {
		status = writeOpenAIError(w, err)
	} else {
		status = writeError(w, err)
	}
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		return
	}
	s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
}

func checkAccess(p Principal, access string) error {
	switch access {
	case accessOwner:
		if !p.Owner {
			return errf(CodeOwnerOnly, "this operation needs the owner token")
		}
	case accessChat:
		if !p.Has(ScopeRead) || !p.Has(ScopeSubmit) {
			return errf(CodeInsufficientScope, "chat completions need the read and submit scopes")
		}
	default:
		if !p.Has(access) {
			return errf(CodeInsufficientScope, "this operation needs the %s scope", access)
		}
	}
	return nil
}

// query validates the query string: only the named parameters, each once.
type query struct {
	v   url.Values
	err error
}

func parseQuery(r *http.Request, allowed ...string) *query {
	v, err := url.ParseQuery(r.URL.RawQuery)
	q := &query{v: v}
	if err != nil {
		q.err = errf(CodeInvalidParameter, "malformed query string")
		return q
	}
	for k, vals := range v {
		if !slices.Contains(allowed, k) {
			q.err = errf(CodeInvalidParameter, "unknown query parameter %q", k)
			return q
		}
		if len(vals) > 1 {
			q.err = errf(CodeInvalidParameter, "query parameter %q given more than once", k)
			return q
		}
	}
	return q
}

func (q *query) intRange(name string, def, min, max int64) int64 {
	if q.err != nil || !q.v.Has(name) {
		return def
	}
	n, err := parseUint(q.v.Get(name))
	if err != nil || int64(n) < min || int64(n) > max || n > 1<<62 {
		if max == 1<<62 {
			q.err = errf(CodeInvalidParameter, "%s must be an integer >= %d", name, min)
		} else {
			q.err = errf(CodeInvalidParameter, "%s must be an integer from %d to %d", name, min, max)
		}
		return def
	}
	return int64(n)
}

func (q *query) boolean(name string) bool {
	if q.err != nil || !q.v.Has(name) {
		return false
	}
	switch q.v.Get(name) {
	case "true":
		return true
	case "false":
		return false
	}
	q.err = errf(CodeInvalidParameter, "%s must be true or false", name)
	return false
}

func (q *query) oneOf(name, def string, allowed ...string) string {
	if q.err != nil || !q.v.Has(name) {
		return def
	}
	v := q.v.Get(name)
	if !slices.Contains(allowed, v) {
		q.err = errf(CodeInvalidParameter, "%s must be one of %s", name, strings.Join(allowed, ", "))
		return def
	}
	return v
}

func jobID(ps httprouter.Params) (string, error) {
	id := ps.ByName("id")
	u, err := uuid.Parse(id)
	if err != nil || u.String() != strings.ToLower(id) || len(id) != 36 {
		return "", errf(CodeInvalidParameter, "job id must be a UUID")
	}
	return strings.ToLower(id), nil
}

// idempotencyKey reads the optional Idempotency-Key header (1..128 characters).
func idempotencyKey(r *http.Request) (string, error) {
	vals := r.Header.Values("Idempotency-Key")
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", errf(CodeInvalidParameter, "Idempotency-Key must be sent once")
	}
	k := vals[0]
	if k == "" || utf8.RuneCountInString(k) > 128 || !utf8.ValidString(k) {
		return "", errf(CodeInvalidParameter, "Idempotency-Key must be 1 to 128 characters")
	}
	return k, nil
}

// readBody reads the raw body (bounded by wrap) for decoding and hashing.
func readBody(r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := strings.Cut(ct, ";")
		if mt = strings.ToLower(strings.TrimSpace(mt)); mt != "application/json" {
			return nil, errf(CodeUnsupportedMedia, "Content-Type must be application/json")
		}
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, errf(CodeBodyTooLarge, "request body exceeds %d bytes", maxBody)
	}
	// encoding/json would take the last of two equal keys and replace bad
	// UTF-8 and lone surrogates with U+FFFD; the body is refused instead
	// (docs/bridge-api.md).
	if err := httpx.CheckJSON(data); err != nil {
		return nil, errf(CodeInvalidRequest, "%v", err)
	}
	return data, nil
}

func decodeStrict(data []byte, dst any) error {
	if err := httpx.DecodeBytes(data, dst, httpx.DecodeOptions{}); err != nil {
		return err
	}
	return nil
}

// emptyObject enforces "required JSON object with no properties".
func emptyObject(r *http.Request) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := httpx.DecodeBytes(data, &m, httpx.DecodeOptions{AllowUnknown: true}); err != nil || m == nil {
		return errf(CodeInvalidRequest, "the body must be the JSON object {}")
	}
	if len(m) > 0 {
		return errf(CodeInvalidRequest, "the body must be an empty JSON object; no properties are allowed")
	}
	return nil
}

func respond(w http.ResponseWriter, status int, v any) error {
	httpx.WriteJSON(w, status, v)
	return nil
}

func replayStored(w http.ResponseWriter, st *stored) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Idempotent-Replayed", "true")
	w.WriteHeader(st.status)
	_, err := w.Write(append(st.body, '\n'))
	return err
}

// jobRequest is the body of POST /v1/bridge/jobs.
type jobRequest struct {
	Profile  *string           `json:"profile"`
	Prompt   *string           `json:"prompt"`
	WorkDir  *string           `json:"workDir"`
	Metadata map[string]string `json:"metadata"`
}

// jobIdemForm is the canonical form of a job request that Idempotency-Key
// compares: the validated request, the default profile filled in. Metadata
// is never null in it, so an absent and an empty metadata are the same.
type jobIdemForm struct {
	Profile  string            `json:"profile"`
	Prompt   string            `json:"prompt"`
	WorkDir  string            `json:"workDir"`
	Metadata map[string]string `json:"metadata"`
}

// Bounds of job creation.
const (
	maxTextChars   = 100_000
	maxMetaEntries = 32
	maxMetaKey     = 64
	maxMetaValue   = 1024
	maxWorkDir     = 4096
)

func (s *Service) validateJob(p Principal, req jobRequest) (newJob, error) {
	nj := newJob{Profile: "default", Source: "api", Metadata: req.Metadata}
	if req.Prompt == nil {
		return nj, errf(CodeInvalidRequest, "prompt is required")
	}
	// A blank prompt is refused like an empty one: the agent CLIs answer it
	// with no result at all (see bridge/provider recorded transcripts).
	if n := utf8.RuneCountInString(*req.Prompt); n < 1 || n > maxTextChars || strings.TrimSpace(*req.Prompt) == "" {
		return nj, errf(CodeInvalidRequest, "prompt must be 1 to %d characters, not only whitespace", maxTextChars)
	}
	nj.Prompt = *req.Prompt
	if req.Profile != nil {
		nj.Profile = *req.Profile
	}
	if _, ok := s.profiles[nj.Profile]; !ok {
		return nj, errf(CodeUnknownProfile, "profile %q is not configured", nj.Profile)
	}
	if !p.MayUse(nj.Profile) {
		return nj, errf(CodeProfileNotAllowed, "this token may not use profile %q", nj.Profile)
	}
	if req.WorkDir != nil {
		if *req.WorkDir == "" || len(*req.WorkDir) > maxWorkDir || !isAbs(*req.WorkDir) {
			return nj, errf(CodeInvalidRequest, "workDir must be an absolute path of at most %d bytes", maxWorkDir)
		}
		if err := workDirOK(*req.WorkDir); err != nil {
			return nj, err
		}
		nj.WorkDir = *req.WorkDir
	}
	if len(req.Metadata) > maxMetaEntries {
		return nj, errf(CodeInvalidRequest, "metadata may hold at most %d entries", maxMetaEntries)
	}
	for k, v := range req.Metadata {
		if k == "" || utf8.RuneCountInString(k) > maxMetaKey {
			return nj, errf(CodeInvalidRequest, "metadata keys must be 1 to %d characters", maxMetaKey)
		}
		if utf8.RuneCountInString(v) > maxMetaValue {
			return nj, errf(CodeInvalidRequest, "metadata values must be at most %d characters", maxMetaValue)
		}
	}
	return nj, nil
}

func (s *Service) handleCreateJob(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	if r.URL.RawQuery != "" {
		return errf(CodeInvalidParameter, "this endpoint takes no query parameters")
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var req jobRequest
	if err := decodeStrict(data, &req); err != nil {
		return err
	}
	nj, err := s.validateJob(p, req)
	if err != nil {
		return err
	}
	form := jobIdemForm{Profile: nj.Profile, Prompt: nj.Prompt, WorkDir: nj.WorkDir, Metadata: nj.Metadata}
	if form.Metadata == nil {
		form.Metadata = map[string]string{}
	}
	k, err := newIdem("POST /v1/bridge/jobs", key, form, data)
	if err != nil {
		return err
	}
	job, replayed, err := s.createJob(r.Context(), p, nj, k)
	if err != nil {
		return err
	}
	if replayed != nil {
		return replayStored(w, replayed)
	}
	w.Header().Set("Location", "/v1/bridge/jobs/"+job.ID)
	return respond(w, http.StatusAccepted, job)
}

// jobsCursor is the position of GET /v1/bridge/jobs?after=.
type jobsCursor struct {
	Seq int64 `json:"s"`
}

func (s *Service) handleListJobs(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	q := parseQuery(r, "limit", "after", "order")
	limit := q.intRange("limit", 100, 1, 200)
	order := q.oneOf("order", "asc", "asc", "desc")
	if q.err != nil {
		return q.err
	}
	scope := "jobs|" + p.Client + "|" + order
	var cur jobsCursor
	if q.v.Has("after") {
		if err := s.cursors.Open(scope, q.v.Get("after"), &cur); err != nil {
			return errf(CodeInvalidParameter, "after is not a cursor of this list (cursors are bound to the client and order)")
		}
	}
	jobs, more, err := s.listJobs(r.Context(), p, cur.Seq, int(limit), order == "desc")
	if err != nil {
		return err
	}
	var next *string
	if more {
		c, err := s.cursors.Sign(scope, jobsCursor{Seq: jobs[len(jobs)-1].seq})
		if err != nil {
			return err
		}
		next = &c
	}
	return respond(w, http.StatusOK, map[string]any{"jobs": jobs, "next": next, "hasMore": more})
}

// jobFor resolves the :id of a job the principal may see.
func (s *Service) jobFor(r *http.Request, p Principal, ps httprouter.Params) (Job, error) {
	id, err := jobID(ps)
	if err != nil {
		return Job{}, err
	}
	return s.getJob(r.Context(), s.db.Reader(), p, id)
}

func noQuery(r *http.Request) error {
	if r.URL.RawQuery != "" {
		return errf(CodeInvalidParameter, "this endpoint takes no query parameters")
	}
	return nil
}

// jobView serves a read of one job that takes no query parameters.
func (s *Service) jobView(view func(ctx context.Context, j Job) (any, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
		if err := noQuery(r); err != nil {
			return err
		}
		job, err := s.jobFor(r, p, ps)
		if err != nil {
			return err
		}
		v, err := view(r.Context(), job)
		if err != nil {
			return err
		}
		return respond(w, http.StatusOK, v)
	}
}

func (s *Service) viewJob(_ context.Context, j Job) (any, error) { return j, nil }

func (s *Service) viewAttempts(ctx context.Context, j Job) (any, error) {
	atts, err := s.attempts(ctx, j.ID)
	return map[string]any{"jobId": j.ID, "current": j.Attempt, "attempts": atts}, err
}

func (s *Service) viewMessages(ctx context.Context, j Job) (any, error) {
	msgs, err := s.messages(ctx, j.ID)
	return map[string]any{"jobId": j.ID, "sessionId": j.SessionID, "messages": msgs}, err
}

// messageRequest is the body of POST .../messages: {text}, nothing else.
type messageRequest struct {
	Text *string `json:"text"`
}

func (s *Service) handlePostMessage(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	id, err := jobID(ps)
	if err != nil {
		return err
	}
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
	var req messageRequest
	if err := decodeStrict(data, &req); err != nil {
		return err
	}
	if req.Text == nil {
		return errf(CodeInvalidRequest, "text is required")
	}
	if n := utf8.RuneCountInString(*req.Text); n < 1 || n > maxTextChars || strings.TrimSpace(*req.Text) == "" {
		return errf(CodeInvalidRequest, "text must be 1 to %d characters, not only whitespace", maxTextChars)
	}
	k, err := newIdem("POST /v1/bridge/jobs/"+id+"/messages", key, messageRequest{Text: req.Text}, data)
	if err != nil {
		return err
	}
	out, replayed, err := s.addMessage(r.Context(), p, id, *req.Text, k)
	if err != nil {
		return err
	}
	if replayed != nil {
		return replayStored(w, replayed)
	}
	return respond(w, http.StatusAccepted, out)
}

// control handles pause, resume, cancel and retry.
func (s *Service) control(act Action) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
		id, err := jobID(ps)
		if err != nil {
			return err
		}
		if err := noQuery(r); err != nil {
			return err
		}
		if err := emptyObject(r); err != nil {
			return err
		}
		job, err := s.applyControl(r.Context(), p, id, act)
		if err != nil {
			return err
		}
		status := http.StatusOK
		if act == ActRetry {
			status = http.StatusAccepted
		}
		return respond(w, status, job)
	}
}

// applyControl changes a job's state on a client's request and stops or
// starts its agent accordingly.
func (s *Service) applyControl(ctx context.Context, p Principal, id string, act Action) (Job, error) {
	job, err := s.change(ctx, p, id, act, func(tx *sql.Tx, j *Job, ev *pending) error {
		now := s.now().UTC()
		switch act {
		case ActCancel:
			j.FinishedAt = &now
			if _, err := tx.Exec(`UPDATE bridge_messages SET status = 'cancelled' WHERE job_id = ? AND status = 'pending'`, j.ID); err != nil {
				return err
			}
		case ActRetry:
			j.Attempt++
			j.SessionID, j.LastError, j.resultText, j.FinishedAt, j.StartedAt = "", nil, "", nil, nil
			j.Usage = provider.Usage{}
			if _, err := tx.Exec(`INSERT INTO bridge_attempts(job_id, n, state, reason, created_at) VALUES (?, ?, ?, 'retry', ?)`, j.ID, j.Attempt, StateQueued, nowString(now)); err != nil {
				return err
			}
			seq, err := nextSeq(tx, "bridge_messages", j.ID)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO bridge_messages(job_id, seq, attempt, role, text, status, created_at) VALUES (?, ?, ?, 'user', ?, 'pending', ?)`, j.ID, seq, j.Attempt, j.Prompt, nowString(now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return job, err
	}
	switch act {
	case ActPause:
		s.sched.stop(id, errPaused)
		s.waiters.finish(job)
	case ActCancel:
		s.sched.stop(id, errCancelled)
		s.waiters.finish(job)
	case ActResume, ActRetry:
		s.sched.kick()
	}
	return job, nil
}

func (s *Service) handleResult(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	job, err := s.jobFor(r, p, ps)
	if err != nil {
		return err
	}
	body := map[string]any{"jobId": job.ID, "state": job.State, "attempt": job.Attempt, "result": nil, "error": job.LastError, "usage": job.Usage, "finishedAt": job.FinishedAt,
		"demo": job.Provider == provider.NameEcho} // the echo demo's answer is not an agent's (README "Agent providers")
	if !job.State.Terminal() {
		return respond(w, http.StatusAccepted, body)
	}
	if job.resultText != "" {
		body["result"] = job.resultText
	}
	return respond(w, http.StatusOK, body)
}

func (s *Service) handleMintToken(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var req TokenRequest
	if err := decodeStrict(data, &req); err != nil {
		return err
	}
	issued, err := MintToken(r.Context(), s.db, req, s.profileNames(), s.now())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return respond(w, http.StatusCreated, issued)
}

func (s *Service) handleListTokens(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	toks, err := ListTokens(r.Context(), s.db.Reader())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, map[string]any{"tokens": toks})
}

func (s *Service) handleRevoke(w http.ResponseWriter, r *http.Request, p Principal, ps httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	client := ps.ByName("client")
	if client == OwnerClient && s.ownerRevoke != nil {
		// The owner token is a file, not a row: revoking the owner signs
		// out the browser sessions that act with it (the web console).
		return respond(w, http.StatusOK, map[string]any{"client": client, "revokedTokens": 0, "closedStreams": 0, "endedSessions": s.ownerRevoke()})
	}
	n, err := RevokeClient(r.Context(), s.db, client, s.now())
	if err != nil {
		return err
	}
	closed := s.live.revoke(client)
	return respond(w, http.StatusOK, map[string]any{"client": client, "revokedTokens": n, "closedStreams": closed})
}

// OnOwnerRevoke sets what revoking the owner does (package wire: end the
// console's sessions); f returns how many sessions ended.
func (s *Service) OnOwnerRevoke(f func() int) { s.ownerRevoke = f }

func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || (len(p) > 2 && p[1] == ':' && (p[2] == '\\' || p[2] == '/'))
}
