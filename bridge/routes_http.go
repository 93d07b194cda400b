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

// Routes registers the bridge's route table on the bridge listener. The
// same table documents the routes (openapi.go).
func (s *Service) Routes(bridge, _ *httprouter.Router) {
	s.routes = nil
	s.register(bridge, []httpx.Route{
		s.route("GET", "/v1/bridge/status", ScopeRead, s.handleStatus),
		s.route("GET", "/v1/bridge/openapi.json", ScopeRead, s.handleOpenAPI),
		s.route("POST", "/v1/bridge/jobs", ScopeSubmit, s.handleCreateJob),
		s.route("GET", "/v1/bridge/jobs", ScopeRead, s.handleListJobs),
		s.route("GET", "/v1/bridge/jobs/{id}", ScopeRead, jobView(s.Job)),
		s.route("GET", "/v1/bridge/jobs/{id}/audit", ScopeRead, s.handleAudit),
		s.route("GET", "/v1/bridge/jobs/{id}/tools", ScopeRead, s.handleTools),
		s.route("GET", "/v1/bridge/jobs/{id}/tools/{tool}", ScopeRead, s.handleTool),
		// Authenticated by the running turn's own token, not a client token.
		{Method: "POST", Path: "/v1/bridge/jobs/{id}/mcp", Handler: s.handleAgentMCP, Doc: operation("POST", "/v1/bridge/jobs/{id}/mcp", accessTurn)},
		s.route("GET", "/v1/bridge/jobs/{id}/attempts", ScopeRead, jobView(s.Attempts)),
		s.route("POST", "/v1/bridge/jobs/{id}/pause", ScopeControl, s.handleControl(ActPause)),
		s.route("POST", "/v1/bridge/jobs/{id}/resume", ScopeControl, s.handleControl(ActResume)),
		s.route("POST", "/v1/bridge/jobs/{id}/cancel", ScopeControl, s.handleControl(ActCancel)),
		s.route("POST", "/v1/bridge/jobs/{id}/retry", ScopeControl, s.handleControl(ActRetry)),
		s.route("GET", "/v1/bridge/jobs/{id}/result", ScopeRead, s.handleResult),
		s.route("GET", "/v1/bridge/jobs/{id}/messages", ScopeRead, jobView(s.Messages)),
		s.route("POST", "/v1/bridge/jobs/{id}/messages", ScopeSubmit, s.handlePostMessage),
		s.route("GET", "/v1/bridge/events", ScopeRead, s.handleEvents),
		s.route("POST", "/v1/bridge/admin/tokens", accessOwner, s.handleMintToken),
		s.route("GET", "/v1/bridge/admin/tokens", accessOwner, s.handleListTokens),
		s.route("DELETE", "/v1/bridge/admin/clients/{client}", accessOwner, s.handleRevoke),
		s.route("POST", "/v1/chat/completions", accessChat, s.handleChat),
		s.route("GET", "/v1/models", ScopeRead, s.handleModels),
		s.route("GET", "/v1/models/{model}", ScopeRead, s.handleModel),
	})
}

// route is an entry of the bridge's route table: h behind authentication
// and the access check, documented from docs (openapi.go).
func (s *Service) route(method, path, access string, h handlerFunc) httpx.Route {
	return httpx.Route{Method: method, Path: path, Handler: s.guard(access, h), Doc: operation(method, path, access)}
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
