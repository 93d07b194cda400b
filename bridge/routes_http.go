package bridge

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"
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
	add("GET", "/v1/bridge/jobs/:id", ScopeRead, jobView(s.Job))
	add("GET", "/v1/bridge/jobs/:id/audit", ScopeRead, s.handleAudit)
	add("GET", "/v1/bridge/jobs/:id/tools", ScopeRead, s.handleTools)
	add("GET", "/v1/bridge/jobs/:id/tools/:tool", ScopeRead, s.handleTool)
	// Authenticated by the running turn's own token, not a client token.
	bridge.POST("/v1/bridge/jobs/:id/mcp", s.handleAgentMCP)
	s.routes = append(s.routes, route{http.MethodPost, "/v1/bridge/jobs/:id/mcp", accessTurn})
	add("GET", "/v1/bridge/jobs/:id/attempts", ScopeRead, jobView(s.Attempts))
	add("POST", "/v1/bridge/jobs/:id/pause", ScopeControl, s.handleControl(ActPause))
	add("POST", "/v1/bridge/jobs/:id/resume", ScopeControl, s.handleControl(ActResume))
	add("POST", "/v1/bridge/jobs/:id/cancel", ScopeControl, s.handleControl(ActCancel))
	add("POST", "/v1/bridge/jobs/:id/retry", ScopeControl, s.handleControl(ActRetry))
	add("GET", "/v1/bridge/jobs/:id/result", ScopeRead, s.handleResult)
	add("GET", "/v1/bridge/jobs/:id/messages", ScopeRead, jobView(s.Messages))
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
