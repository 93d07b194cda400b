// Package mcp is the bridge's Model Context Protocol server: the daemon as
// a set of tools and resources for IDE and agent hosts (Claude Code, Codex,
// Cursor, VS Code, Zed). It is a client of the bridge API like any other,
// authenticated with one client token (docs/mcp.md): a host sees that
// client's scopes and jobs and nothing else. `bridge mcp` serves it over
// stdio; the daemon mounts it as streamable HTTP at /v1/bridge/mcp.
package mcp

import (
	"context"
	"log/slog"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Addresses says where the daemon listens, for bridge_status.
type Addresses struct {
	BridgeURL, ServicesURL string
	// ConfiguredBridgePort is the port config.yaml asks for (0: unknown).
	ConfiguredBridgePort int
}

// Options configure a server.
type Options struct {
	// Version is the binary's version, reported to the host.
	Version string
	// Addresses answers the daemon's actual addresses.
	Addresses func(ctx context.Context) Addresses
	// Health answers nil when the daemon is ready; without it, a daemon
	// that answers the status request is ready.
	Health func(ctx context.Context) error
	// Poll is how often job_result rereads a job it waits for (default 250ms).
	Poll time.Duration
	// MaxWait bounds job_result's timeoutSeconds (default 600s).
	MaxWait time.Duration
	Logger  *slog.Logger
}

// serverName is the name hosts show for the integration.
const serverName = "agent-bridge"

// New builds the MCP server of one token: every tool and resource calls
// the bridge API through api.
func New(api *API, opts Options) *sdk.Server {
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 600 * time.Second
	}
	if opts.Addresses == nil {
		opts.Addresses = func(context.Context) Addresses { return Addresses{BridgeURL: api.Base} }
	}
	t := &tools{api: api, opts: opts}
	s := sdk.NewServer(&sdk.Implementation{Name: serverName, Title: "Agent Bridge", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		Capabilities: &sdk.ServerCapabilities{},
	})
	t.register(s)
	registerResources(s, api)
	return s
}

const instructions = `Agent Bridge runs AI coding-agent jobs and workflows on this machine.
submit_job queues a job; job_result waits for its answer (with progress);
send_message continues its conversation; cancel_job stops it. The resources
bridge://jobs/{jobId}/transcript and bridge://jobs/{jobId}/audit read a job's
conversation and audit log. bridge_status says where the daemon listens.`
