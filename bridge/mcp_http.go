package bridge

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/httpx"
)

// MountMCP serves h, the MCP endpoint of package bridge/mcp, at path on the
// bridge listener (POST, GET and DELETE, the methods of MCP's streamable
// HTTP transport) behind the bridge's own authentication: h sees only
// requests whose bearer token is valid, unrevoked and holds the read scope
// (docs/mcp.md). Refusals answer in the bridge's error shape.
func (s *Service) MountMCP(r *httprouter.Router, path string, h http.Handler) {
	serve := func(w http.ResponseWriter, req *http.Request, _ Principal, _ httprouter.Params) error {
		if req.Method == http.MethodHead {
			// HEAD answers what GET would (docs/bridge-api.md) without
			// holding a session's stream open: GET with its context ended.
			ctx, cancel := context.WithCancel(req.Context())
			cancel()
			req = req.Clone(ctx)
			req.Method = http.MethodGet
		}
		h.ServeHTTP(w, req)
		return nil
	}
	s.register(r, []httpx.Route{
		s.route(http.MethodPost, path, ScopeRead, serve, opDoc{
			summary: "Model Context Protocol, streamable HTTP: JSON-RPC requests of an MCP host (docs/mcp.md); the tools act with this token's scopes",
			success: "200",
		}),
		s.route(http.MethodGet, path, ScopeRead, serve, opDoc{
			summary: "Model Context Protocol, streamable HTTP: the session's server-to-client stream (text/event-stream; needs Mcp-Session-Id)",
			success: "200",
		}),
		s.route(http.MethodDelete, path, ScopeRead, serve, opDoc{
			summary: "Model Context Protocol, streamable HTTP: end the session named by Mcp-Session-Id", success: "204",
		}),
	})
}
