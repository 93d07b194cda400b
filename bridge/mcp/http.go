package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the bridge listener serves MCP over streamable HTTP.
const Path = "/v1/bridge/mcp"

// sessionIdle closes an HTTP session no request has used for this long.
const sessionIdle = 30 * time.Minute

// inProcessBase is the base URL of in-process bridge API requests; only
// their paths reach the router.
const inProcessBase = "http://bridge.in-process"

// Handler serves MCP over streamable HTTP. The bridge mounts it behind its
// own authentication and Host/Origin guard (bridge.Service.MountMCP), so
// every request that arrives carries a valid bearer token. Each session's
// server calls bridgeAPI, the bridge's own router, in process with the
// token of the request that opened it; a session answers only requests
// with that same token (the SDK compares TokenInfo.UserID), and a revoked
// token is refused at once by both the mount and every tool call.
func Handler(bridgeAPI http.Handler, opts Options) http.Handler {
	client := InProcess(bridgeAPI)
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		tok, ok := bearer(r)
		if !ok {
			return nil
		}
		return New(&API{Base: inProcessBase, Token: tok, HTTP: client}, opts)
	}, &sdk.StreamableHTTPOptions{
		SessionTimeout: sessionIdle,
		Logger:         opts.Logger,
		// The bridge listener's guard already admits loopback names and the
		// configured tunnel hosts and origins (docs/bridge-api.md); the SDK's
		// own loopback-only check would refuse those tunnels.
		DisableLocalhostProtection: true,
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(tok))
		return &auth.TokenInfo{UserID: hex.EncodeToString(sum[:])}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	return tok, ok && strings.EqualFold(scheme, "Bearer") && tok != ""
}
