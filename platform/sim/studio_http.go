package sim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Editor host routes (docs/platform-api.md, "Editor host"): camelCase
// bodies, offline (no project data is read unless a request names a
// project whose catalog to use), the daemon owner token or a platform token whose
// principal holds simulate in some project.
const (
	tagStudio     = "Editor host"
	studioBase    = "/studio/local/debug"
	StudioSession = studioBase + "/sessions"
	// maxStudioBody bounds editor host requests (sources, locks, mocks).
	maxStudioBody = 8 << 20
)

func (s *Service) studioRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodPost, Path: StudioSession, Layout: api.Root, Access: api.AccessOwnerOrToken, MaxBody: maxStudioBody,
			Handler: s.studioCreateRoute, OperationID: "studioCreateDebugSession", Tag: tagStudio,
			Summary:     "Open an editor host debug session (offline)",
			Description: "Body camelCase {source | artifact, catalog?, definitions?, mocks?, input?, now?}. At most 4 open sessions (429 PF-STUDIO-SESSIONS-FULL); 30 s work limit (503 PF-STUDIO-BUSY).",
			Request:     StudioCreate{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: StudioSession + "/{identifier}", Layout: api.Root, Access: api.AccessOwnerOrToken,
			Handler: s.studioGetRoute, OperationID: "studioGetDebugSession", Tag: tagStudio, Summary: "Read an editor host debug session", ETag: true},
		{Method: http.MethodPost, Path: StudioSession + "/{identifier}/commands", Layout: api.Root, Access: api.AccessOwnerOrToken,
			IfMatch: api.PolicyRequired, MaxBody: maxCommandBody, Handler: s.studioCommandRoute,
			OperationID: "studioCommandDebugSession", Tag: tagStudio, Summary: "Run a debug command in an editor host session",
			Description: "Body camelCase: exactly one of breakpoints {nodeIds}, next, continue, signal {name, payload}, humanDecision {name, payload}, advanceTime {seconds}.",
			ETag:        true},
		{Method: http.MethodDelete, Path: StudioSession + "/{identifier}", Layout: api.Root, Access: api.AccessOwnerOrToken,
			Handler: s.studioCloseRoute, OperationID: "studioCloseDebugSession", Tag: tagStudio, Summary: "Close an editor host debug session",
			Status: http.StatusNoContent},
		{Method: http.MethodGet, Path: StudioSession + "/{identifier}/live", Layout: api.Root, Access: api.AccessOwnerOrToken,
			Handler: s.studioLiveRoute, OperationID: "studioLiveDebugSession", Tag: tagStudio,
			Summary:     "Live channel (WebSocket) of an editor host debug session",
			Description: "Upgrade to a WebSocket; the panel sends {type: command, revision, command} and receives {type: view | running | error, ...}. See docs/platform-api.md."},
		{Method: http.MethodPost, Path: studioBase + "/execute", Layout: api.Root, Access: api.AccessOwnerOrToken, MaxBody: maxStudioBody,
			Handler: s.studioExecuteRoute, OperationID: "studioExecute", Tag: tagStudio, Summary: "Execute a workflow, a step or up to a step with mocks (offline)",
			Request: ExecuteRequest{}, Response: ExecuteResponse{}},
		{Method: http.MethodPost, Path: "/studio/local/testdata/check", Layout: api.Root, Access: api.AccessOwnerOrToken, MaxBody: maxStudioBody,
			Handler: s.studioCheckRoute, OperationID: "studioCheckTestData", Tag: tagStudio, Summary: "Check a test-data document against a workflow (offline)",
			Request: CheckRequest{}, Response: CheckResponse{}},
	}
}

// authorizeSimulate allows the owner token, or a caller holding simulate
// at the scope of one of its grants (the decision is recorded); it answers
// the owner of the caller's sessions.
func authorizeSimulate(c *api.Call) (string, error) {
	if c.Caller == nil {
		return "", api.Unauthenticated("")
	}
	if c.Caller.Owner {
		return c.Caller.Principal.ID, nil
	}
	for _, g := range c.Caller.Grants {
		if g.PrincipalID != c.Caller.Principal.ID || g.Revoked || g.Scope.IsRoot() {
			continue
		}
		if auth.Authorize(c.Caller.Grants, c.Caller.Principal, auth.CapSimulate, g.Scope).Allowed {
			return c.Caller.Principal.ID, c.Authorize(auth.CapSimulate, g.Scope)
		}
	}
	return "", c.Authorize(auth.CapSimulate, auth.Scope{})
}

// authorizeSource checks catalog.read in the project whose catalog a
// request names (the caller reads that project's published definitions).
func authorizeSource(c *api.Call, src Source) error {
	if src.Project == nil {
		return nil
	}
	return c.Authorize(auth.CapCatalogRead, auth.Scope{Tenant: src.Project.Tenant, Project: src.Project.Project})
}

// studioProblem maps an editor host refusal: a request that does not
// compile carries the compile summary as the problem's result.
func studioProblem(err error) error {
	var ce *compileError
	if errors.As(err, &ce) {
		pe := problem(ce.err).(*api.Error)
		pe.Result = ce.summary
		return pe
	}
	var e *Error
	if errors.As(err, &e) && e.Code == CodeRequest {
		e.Code = CodeStudioReq
	}
	return problem(err)
}

// studioBody is a session as the editor host answers it: camelCase keys
// except inside the run's values.
func studioBody(sess *Session) (json.RawMessage, error) {
	raw, err := json.Marshal(sess.Body())
	if err != nil {
		return nil, err
	}
	return CamelKeys(raw)
}

func (s *Service) studioRespond(c *api.Call, sess *Session, status int) error {
	body, err := studioBody(sess)
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Status: status, Body: body, Revision: sess.Revision})
}

func (s *Service) studioCreateRoute(c *api.Call) error {
	owner, err := authorizeSimulate(c)
	if err != nil {
		return err
	}
	var req StudioCreate
	if err := c.Decode(&req); err != nil {
		return err
	}
	if err := authorizeSource(c, req.Source); err != nil {
		return err
	}
	sess, err := s.studio.create(c.Context(), owner, req)
	if err != nil {
		return studioProblem(err)
	}
	return s.studioRespond(c, sess, http.StatusCreated)
}

func (s *Service) studioGetRoute(c *api.Call) error {
	owner, err := authorizeSimulate(c)
	if err != nil {
		return err
	}
	sess, err := s.studio.get(owner, c.Params.ByName("identifier"))
	if err != nil {
		return studioProblem(err)
	}
	return s.studioRespond(c, sess, http.StatusOK)
}

func (s *Service) studioCloseRoute(c *api.Call) error {
	owner, err := authorizeSimulate(c)
	if err != nil {
		return err
	}
	if err := s.studio.close(owner, c.Params.ByName("identifier")); err != nil {
		return studioProblem(err)
	}
	c.W.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) studioCommandRoute(c *api.Call) error {
	owner, err := authorizeSimulate(c)
	if err != nil {
		return err
	}
	data, err := c.Body()
	if err != nil {
		return err
	}
	cmd, err := DecodeStudioCommand(data)
	if err != nil {
		return studioProblem(err)
	}
	sess, err := s.studio.command(c.Context(), owner, c.Params.ByName("identifier"), c.IfMatch(), cmd, nil)
	if err != nil {
		return studioProblem(err)
	}
	return s.studioRespond(c, sess, http.StatusOK)
}

// DecodeStudioCommand reads a camelCase command (humanDecision,
// advanceTime, nodeIds).
func DecodeStudioCommand(data []byte) (Command, error) {
	// The body as sent meets the strict rules (no repeated keys, valid
	// UTF-8, one value) before its keys are renamed, which would hide them.
	if err := decodeStrict(data, new(any), CodeCommand, "", "the command does not decode"); err != nil {
		return Command{}, err
	}
	snake, err := snakeKeys(data)
	if err != nil {
		return Command{}, refuse(CodeCommand, "", "the command does not decode: %v", err)
	}
	return DecodeCommand(snake)
}

// userData are the members whose values are the run's own data: their
// keys are never renamed.
var userData = map[string]bool{"variables": true, "payload": true, "data": true, "input": true, "output": true, "mocks": true}

// CamelKeys renames the object keys of raw from snake_case to camelCase,
// leaving the run's values (variables, payloads) untouched.
func CamelKeys(raw []byte) (json.RawMessage, error) { return renameKeys(raw, camel) }

func snakeKeys(raw []byte) ([]byte, error) { return renameKeys(raw, snake) }

func renameKeys(raw []byte, rename func(string) string) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(renameValue(v, rename))
}

func renameValue(v any, rename func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, m := range x {
			if userData[k] {
				out[rename(k)] = m
				continue
			}
			out[rename(k)] = renameValue(m, rename)
		}
		return out
	case []any:
		for i := range x {
			x[i] = renameValue(x[i], rename)
		}
		return x
	}
	return v
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
