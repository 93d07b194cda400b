// Package local is the daemon side of the bridge binary: what `bridge
// serve`, `bridge migrate`, `bridge token`/`revoke` on a stopped daemon and
// the stdio `bridge mcp` run in-process. cmd/bridge hands it to the CLI
// (cli.ExecuteWith), so the cli package itself talks to a running daemon
// only through the client package and imports no server package.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbridge/bridge/bridge"
	bridgemcp "github.com/agentbridge/bridge/bridge/mcp"
	"github.com/agentbridge/bridge/callbacks"
	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/ingest"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/wire"
)

// Side implements the CLI's daemon side with every subsystem wired in.
type Side struct{}

// CheckConfig decodes the subsystems' sections of file and returns their
// errors (each subsystem reads its section again when it is built).
func (Side) CheckConfig(file *config.File) []error {
	_, bridgeErr := bridge.LoadConfig(file)
	_, platformErr := platform.LoadConfig(file)
	_, ingestErr := ingest.LoadConfig(file)
	_, callbacksErr := callbacks.LoadSettings(file)
	return []error{bridgeErr, platformErr, ingestErr, callbacksErr}
}

// Start starts the daemon of o with every subsystem.
func (Side) Start(ctx context.Context, o daemon.Options) (*daemon.Daemon, error) {
	return daemon.Start(ctx, wire.Options(o))
}

// LocalWorkspace answers the ids of the local workspace d bootstrapped
// (ok false when there is none).
func (Side) LocalWorkspace(ctx context.Context, d *daemon.Daemon) (tenant, project, environment string, ok bool) {
	ws, err := identity.ReadLocalWorkspace(ctx, d.DB.Reader())
	if err != nil || ws == nil {
		return "", "", "", false
	}
	return ws.TenantID, ws.ProjectID, ws.EnvironmentID, true
}

// Migrations are the database's migrations.
func (Side) Migrations() []store.Migration { return wire.Migrations() }

// ProfileNames reads the configured bridge profiles of file.
func (Side) ProfileNames(file *config.File) ([]string, error) {
	cfg, err := bridge.LoadConfig(file)
	if err != nil {
		return nil, err
	}
	return cfg.ProfileNames(), nil
}

// MintToken issues a client token directly on db (the daemon is stopped).
func (Side) MintToken(ctx context.Context, db *store.DB, req client.TokenRequest, profiles []string, now time.Time) (client.IssuedToken, error) {
	t, err := bridge.MintToken(ctx, db, bridge.TokenRequest(req), profiles, now)
	return client.IssuedToken(t), plainError(err)
}

// RevokeClient revokes a client's tokens directly on db.
func (Side) RevokeClient(ctx context.Context, db *store.DB, id string, now time.Time) (int, error) {
	n, err := bridge.RevokeClient(ctx, db, id, now)
	return n, plainError(err)
}

// plainError turns a bridge domain error into a plain message for the terminal.
func plainError(err error) error {
	var e *bridge.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s (%s)", e.Message, e.Code)
	}
	return err
}

// ServeMCP speaks MCP on stdin/stdout for a host, sending every tool call
// to the bridge listener state names with token (docs/mcp.md).
func (Side) ServeMCP(ctx context.Context, token, version string, log *slog.Logger, state func() (daemon.State, error), configuredBridgePort int, health func(context.Context) error) error {
	api := &bridgemcp.API{Token: token, HTTP: &http.Client{Timeout: 2 * time.Minute},
		Resolve: func(context.Context) (string, error) {
			st, err := state()
			return st.BridgeURL, err
		}}
	// A token the running daemon refuses is a configuration mistake the
	// host should show at once, not at the first tool call.
	if _, err := state(); err == nil {
		if err := api.Check(ctx); err != nil {
			var e *bridgemcp.Error
			if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
				return fmt.Errorf("the daemon refuses this token (revoked or unknown): %w", err)
			}
		}
	}
	srv := bridgemcp.New(api, bridgemcp.Options{
		Version: version,
		Logger:  log,
		Health:  health,
		Addresses: func(context.Context) bridgemcp.Addresses {
			st, _ := state()
			return bridgemcp.Addresses{BridgeURL: st.BridgeURL, ServicesURL: st.ServicesURL, ConfiguredBridgePort: configuredBridgePort}
		},
	})
	err := srv.Run(ctx, &sdk.StdioTransport{})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil // the host closed stdin or stopped us
	}
	return fmt.Errorf("mcp: %w", err)
}
