package sim

import (
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

const (
	tagDebug    = "Debug sessions"
	projectBase = "/tenants/{tenant}/projects/{project}"
	sessionsP   = projectBase + "/debug/sessions"
	// maxCreateBody bounds a creation request (artifact, mocks, input).
	maxCreateBody = 8 << 20
	// maxCommandBody bounds a command (a signal payload or human data of
	// up to the kernel's 1 MiB value limit, with room for the envelope).
	maxCommandBody = 1<<20 + 4096
)

// problem maps a simulator refusal to the platform's problem shape, its
// status from the platform's error table; other errors pass through.
func problem(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	pe := &api.Error{Code: e.Code, Message: e.Message}
	if e.Path != "" {
		pe.Diagnostics = []api.Diagnostic{{Code: e.Code, Message: e.Message, Path: e.Path}}
	}
	if pe.IsCapacity() {
		pe.Headers = map[string]string{"Retry-After": "60"}
	}
	return pe
}

// Register adds the debug session routes, the editor host routes and the
// editor document routes.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	routes := []api.Route{
		{Method: http.MethodPost, Path: sessionsP, Capability: auth.CapSimulate, MaxBody: maxCreateBody, Handler: s.createRoute,
			OperationID: "createDebugSession", Tag: tagDebug, Summary: "Start a debug session (simulation with mocks and a virtual clock)",
			Description: "Body {artifact, mocks, input, now}. The session belongs to its creator; it lives one hour. 429 PF-OPERATION-CAPACITY beyond 4 live per creator, 16 live or 1,000 kept per project.",
			Request:     CreateRequest{}, Response: SessionBody{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: sessionsP + "/{identifier}", Capability: auth.CapSimulate, Handler: s.getRoute,
			OperationID: "getDebugSession", Tag: tagDebug, Summary: "Read a debug session",
			Response: SessionBody{}, ETag: true},
		{Method: http.MethodPost, Path: sessionsP + "/{identifier}/commands", Capability: auth.CapSimulate, IfMatch: api.PolicyRequired,
			MaxBody: maxCommandBody, Handler: s.commandRoute,
			OperationID: "commandDebugSession", Tag: tagDebug, Summary: "Run a debug command",
			Description: "Body: exactly one of breakpoints {node_ids}, next {}, continue {}, signal {name, payload}, human_decision {name, payload: {decision, data}}, advance_time {seconds}. If-Match is the current revision (409 PF-DEBUG-REVISION when stale).",
			Request:     Command{}, Response: SessionBody{}, ETag: true},
	}
	routes = append(routes, s.studioRoutes()...)
	routes = append(routes, s.documentRoutes()...)
	for _, rt := range routes {
		a.Handle(r, rt)
	}
}

func scopeOf(c *api.Call) Scope {
	ps := c.PathScope()
	return Scope{Tenant: ps.Tenant, Project: ps.Project, Principal: c.Caller.Principal.ID}
}

func respond(c *api.Call, sess *Session, status int) error {
	return c.Respond(&api.Result{Status: status, Body: sess.Body(), Revision: sess.Revision})
}

func (s *Service) createRoute(c *api.Call) error {
	var req CreateRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	sess, err := s.Create(c.Context(), scopeOf(c), req)
	if err != nil {
		return problem(err)
	}
	return respond(c, sess, http.StatusCreated)
}

func (s *Service) getRoute(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "debug session")
	if err != nil {
		return err
	}
	sess, err := s.Get(c.Context(), scopeOf(c), id)
	if err != nil {
		return problem(err)
	}
	return respond(c, sess, http.StatusOK)
}

func (s *Service) commandRoute(c *api.Call) error {
	id, err := c.UUIDParam("identifier", "debug session")
	if err != nil {
		return err
	}
	data, err := c.Body()
	if err != nil {
		return err
	}
	cmd, err := DecodeCommand(data)
	if err != nil {
		return problem(err)
	}
	sess, err := s.Command(c.Context(), scopeOf(c), id, c.IfMatch(), cmd)
	if err != nil {
		return problem(err)
	}
	return respond(c, sess, http.StatusOK)
}

// DecodeCommand reads a command body strictly: PF-DEBUG-COMMAND when it is
// not exactly one known command with known fields.
func DecodeCommand(data []byte) (Command, error) {
	var cmd Command
	if err := decodeStrict(data, &cmd, CodeCommand, "", "the command does not decode"); err != nil {
		return cmd, err
	}
	if cmd.Kind() == "" {
		return cmd, refuse(CodeCommand, "", "a command has exactly one of breakpoints, next, continue, signal, human_decision and advance_time")
	}
	if cmd.Breakpoints != nil && cmd.Breakpoints.NodeIDs == nil {
		return cmd, refuse(CodeCommand, "/breakpoints/node_ids", "node_ids is required (an empty list clears the breakpoints)")
	}
	return cmd, nil
}
