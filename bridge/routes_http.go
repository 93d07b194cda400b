package bridge

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

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

// Routes registers the bridge's route table on the bridge listener. Each
// entry declares its documentation (summary, parameters, request and
// response schemas), from which openapi.go builds the OpenAPI document.
func (s *Service) Routes(bridge, _ *httprouter.Router) {
	s.routes = nil
	s.register(bridge, []httpx.Route{
		s.route("GET", "/v1/bridge/status", ScopeRead, s.handleStatus, opDoc{summary: "Version, listener, provider availability and job counts", success: "200", response: "Status"}),
		s.route("GET", "/v1/bridge/openapi.json", ScopeRead, s.handleOpenAPI, opDoc{summary: "This document", success: "200"}),
		s.route("POST", "/v1/bridge/jobs", ScopeSubmit, s.handleCreateJob, opDoc{
			summary: "Submit a job (queued; 202)", params: []httpx.Param{idemHeader}, body: ref("JobRequest"), success: "202",
			response: "Job",
		}),
		s.route("GET", "/v1/bridge/jobs", ScopeRead, s.handleListJobs, opDoc{
			summary: "List this client's jobs",
			params: []httpx.Param{
				qparam("limit", "page size", pageLimit),
				qparam("after", "opaque cursor from `next`", map[string]any{"type": "string"}),
				qparam("order", "creation order", map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "asc"}),
			},
			success: "200", response: "JobPage",
		}),
		s.route("GET", "/v1/bridge/jobs/{id}", ScopeRead, jobView(s.Job), opDoc{summary: "One job", success: "200", response: "Job"}),
		s.route("GET", "/v1/bridge/jobs/{id}/audit", ScopeRead, s.handleAudit, opDoc{
			summary: "The job's append-only audit log",
			params: []httpx.Param{
				qparam("after", "entries after this seq", afterInt),
				qparam("limit", "page size", pageLimit),
				qparam("through", "fix pages to the first page's through for an immutable export", map[string]any{"type": "integer", "minimum": 0}),
				qparam("includePayloads", "complete tool inputs and results; pages stop at about 4 MB", boolParam),
			},
			success: "200", response: "AuditPage",
		}),
		s.route("GET", "/v1/bridge/jobs/{id}/tools", ScopeRead, s.handleTools, opDoc{
			summary: "Tool observations",
			params: []httpx.Param{
				qparam("after", "observations after this seq", afterInt),
				qparam("limit", "page size", pageLimit),
				qparam("filesOnly", "only tools that touched files", boolParam),
			},
			success: "200", response: "ToolPage",
		}),
		s.route("GET", "/v1/bridge/jobs/{id}/tools/{tool}", ScopeRead, s.handleTool, opDoc{summary: "One tool observation", success: "200", response: "Tool"}),
		// Authenticated by the running turn's own token, not a client token.
		{Method: "POST", Path: "/v1/bridge/jobs/{id}/mcp", Handler: s.handleAgentMCP,
			Doc: operation("/v1/bridge/jobs/{id}/mcp", accessTurn, opDoc{
				summary: "Model Context Protocol, streamable HTTP (stateless) for the agent of a workflow agent step's job: exactly the step's pinned tools; only the running turn's token is accepted (docs/workflow-language.md, Agent-step tools)",
				success: "200",
			})},
		s.route("GET", "/v1/bridge/jobs/{id}/attempts", ScopeRead, jobView(s.Attempts), opDoc{summary: "Attempts (retry creates one)", success: "200", response: "AttemptList"}),
		s.route("POST", "/v1/bridge/jobs/{id}/pause", ScopeControl, s.handleControl(ActPause), opDoc{
			summary: "Pause: hold a queued job, or stop a running agent keeping its conversation", body: emptyBody, success: "200",
			response: "Job",
		}),
		s.route("POST", "/v1/bridge/jobs/{id}/resume", ScopeControl, s.handleControl(ActResume), opDoc{summary: "Resume a paused job (queued again)", body: emptyBody, success: "200", response: "Job"}),
		s.route("POST", "/v1/bridge/jobs/{id}/cancel", ScopeControl, s.handleControl(ActCancel), opDoc{
			summary: "Cancel: kills the agent's whole process group", body: emptyBody, success: "200", response: "Job",
		}),
		s.route("POST", "/v1/bridge/jobs/{id}/retry", ScopeControl, s.handleControl(ActRetry), opDoc{
			summary: "Retry a finished job (succeeded, failed, cancelled or interrupted) as a new attempt", body: emptyBody,
			success: "202", response: "Job",
		}),
		s.route("GET", "/v1/bridge/jobs/{id}/result", ScopeRead, s.handleResult, opDoc{
			summary: "Result; 202 while the job is not terminal", success: "200", response: "Result",
			more: []httpx.Response{{Status: "202", Description: "not yet terminal", Media: "application/json", Schema: ref("Result")}},
		}),
		s.route("GET", "/v1/bridge/jobs/{id}/messages", ScopeRead, jobView(s.Messages), opDoc{summary: "The conversation", success: "200", response: "MessageList"}),
		s.route("POST", "/v1/bridge/jobs/{id}/messages", ScopeSubmit, s.handlePostMessage, opDoc{
			summary: "Continue the conversation", params: []httpx.Param{idemHeader}, body: ref("MessageRequest"), success: "202",
			response: "MessageAccepted",
		}),
		s.route("GET", "/v1/bridge/events", ScopeRead, s.handleEvents, opDoc{
			summary: "Server-sent events of this client's jobs",
			params:  []httpx.Param{{Name: "Last-Event-ID", In: "header", Schema: map[string]any{"type": "integer", "minimum": 0}, Description: "resume after this id; 409 cursor_expired when older than the retained events"}},
			success: "200",
		}),
		s.route("POST", "/v1/bridge/admin/tokens", accessOwner, s.handleMintToken, opDoc{
			summary: "Create a client token (owner token only); the token is shown once", body: ref("TokenRequest"), success: "201",
			response: "IssuedToken",
		}),
		s.route("GET", "/v1/bridge/admin/tokens", accessOwner, s.handleListTokens, opDoc{
			summary: "List issued tokens without their secrets (owner token only)", success: "200", response: "TokenList",
		}),
		s.route("DELETE", "/v1/bridge/admin/clients/{client}", accessOwner, s.handleRevoke, opDoc{
			summary: "Revoke every token of a client; closes its streams and waiters (owner token only)",
			params:  []httpx.Param{{Name: "client", In: "path", Required: true, Schema: map[string]any{"type": "string", "pattern": clientIDPattern.String()}}},
			success: "200", response: "Revocation",
		}),
		s.route("POST", "/v1/chat/completions", accessChat, s.handleChat, opDoc{
			summary: "OpenAI-compatible Chat Completions (read and submit scopes); model bridge/default or bridge/<profile>",
			body:    map[string]any{"type": "object", "required": []string{"model", "messages"}}, success: "200",
		}),
		s.route("GET", "/v1/models", ScopeRead, s.handleModels, opDoc{summary: "Models: bridge/<profile> for each profile the token may use", success: "200"}),
		s.route("GET", "/v1/models/{model}", ScopeRead, s.handleModel, opDoc{
			summary: "One model (OpenAI models.retrieve); 404 model_not_found in OpenAI's error shape for an unknown id or a profile the token may not use",
			params:  []httpx.Param{{Name: "model", In: "path", Required: true, Schema: map[string]any{"type": "string"}, Description: "bridge/<profile>; the slash may be sent as is or as %2F"}},
			success: "200",
		}),
	})
}

// route is an entry of the bridge's route table: h behind authentication
// and the access check, documented by d (openapi.go operation).
func (s *Service) route(method, path, access string, h handlerFunc, d opDoc) httpx.Route {
	return httpx.Route{Method: method, Path: path, Handler: s.guard(access, h), Doc: operation(path, access, d)}
}

// register serves routes (each once) on r through the bridge's error
// encoder and lists them for the OpenAPI document. A GET route also
// answers HEAD with the same status and headers and no body
// (docs/bridge-api.md); net/http drops the body of a HEAD.
func (s *Service) register(r *httprouter.Router, routes []httpx.Route) {
	sf := s.surface()
	for _, rt := range routes {
		if slices.ContainsFunc(s.routes, func(o httpx.Route) bool { return o.Method == rt.Method && o.Path == rt.Path }) {
			continue
		}
		all := []httpx.Route{rt}
		if rt.Method == http.MethodGet {
			head := rt
			head.Method, head.Doc = http.MethodHead, headOp(rt.Doc)
			all = append(all, head)
		}
		for _, x := range all {
			r.Handle(x.Method, routerPath(x.Path), sf.Handle(x))
			s.routes = append(s.routes, x)
		}
	}
}

// routerPath is the router's form of a documented path. A model id holds
// a slash (bridge/default), which clients send as is or as %2F, so
// {model} is a catch-all; both forms arrive decoded.
func routerPath(p string) string {
	if rest, ok := strings.CutSuffix(p, "/{model}"); ok {
		return rest + "/*model"
	}
	return httpx.RouterPath(p)
}

// surface is the bridge listener's httpx surface: its errors go through
// encodeError. Authentication is per route (guard), by access level.
func (s *Service) surface() *httpx.Surface { return &httpx.Surface{Encode: s.encodeError} }

// maxBody bounds every request body: a message of 100,000 characters of
// 4-byte UTF-8 escaped as JSON fits well within it.
const maxBody = 2 << 20

// guard authenticates, checks the access level and bounds the body before
// h runs; a panic becomes a 500 in the route's error shape.
func (s *Service) guard(access string, h handlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) (err error) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // net/http's own way to abort a response
			}
			s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", v)
		}()
		p, err := s.authenticate(r)
		if err == nil {
			err = checkAccess(p, access)
		}
		if err != nil {
			return err
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		return h(w, r, p, ps)
	}
}

// wrap is one route's handler as the router serves it.
func (s *Service) wrap(access string, h handlerFunc) httprouter.Handle {
	return s.surface().Handle(httpx.Route{Handler: s.guard(access, h)})
}

// encodeError is the bridge listener's error encoder: routes outside
// /v1/bridge/ (Chat Completions, models) answer in OpenAI's error shape,
// the others in the bridge's. Only server faults (5xx) are logged as
// errors: a client's bad request is not the daemon's problem and is
// logged at debug level.
func (s *Service) encodeError(w http.ResponseWriter, r *http.Request, err error) {
	var status int
	if strings.HasPrefix(r.URL.Path, "/v1/bridge/") {
		status = writeError(w, err)
	} else {
		status = writeOpenAIError(w, err)
	}
	httpx.LogRefusal(s.log, r, "bridge", status, err)
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
