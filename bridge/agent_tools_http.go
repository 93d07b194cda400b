package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
)

// The per-job MCP endpoint of workflow agent steps
// (docs/workflow-language.md, "Agent-step tools").

// turnFor answers the turn of job id whose token r bears.
func (s *Service) turnFor(r *http.Request, id string) (*turnTools, error) {
	unauth := errf(CodeUnauthorized, "this endpoint takes the token of the job's running turn")
	if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
		return nil, errf(CodeInvalidParameter, "%v", err)
	}
	tok, ok := daemon.BearerToken(r)
	if !ok || !daemon.WellFormedToken(tok) {
		return nil, unauth
	}
	hash := daemon.TokenHash(tok)
	g := s.agentTools
	g.mu.Lock()
	t := g.turns[id]
	g.mu.Unlock()
	if t == nil || !daemon.HashEqual(t.hash, hash) {
		return nil, unauth
	}
	return t, nil
}

// handleAgentMCP serves a turn's tools over MCP's streamable HTTP
// transport (stateless: each POST is answered on its own).
func (s *Service) handleAgentMCP(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	id := ps.ByName("id")
	t, err := s.turnFor(r, id)
	if err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	server := s.toolServer(id, t)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	h.ServeHTTP(w, r)
	return nil
}
