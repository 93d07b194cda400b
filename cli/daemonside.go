package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store"
)

// DaemonSide is the server code the binary links in (cli/local.Side from
// cmd/bridge): what `serve`, `migrate`, `token`/`revoke` on a stopped
// daemon and the stdio `mcp` run in-process. Every other command talks to
// the running daemon through the client package, so this package imports
// no server package.
type DaemonSide interface {
	// CheckConfig decodes the subsystems' sections of config.yaml and
	// returns their errors.
	CheckConfig(file *config.File) []error
	// Start starts the daemon with every subsystem.
	Start(ctx context.Context, o daemon.Options) (*daemon.Daemon, error)
	// LocalWorkspace answers the ids of the local workspace d bootstrapped.
	LocalWorkspace(ctx context.Context, d *daemon.Daemon) (tenant, project, environment string, ok bool)
	// Migrations are the database's migrations.
	Migrations() []store.Migration
	// ProfileNames reads the configured bridge profiles.
	ProfileNames(file *config.File) ([]string, error)
	// MintToken and RevokeClient work directly on the database of a
	// stopped daemon.
	MintToken(ctx context.Context, db *store.DB, req client.TokenRequest, profiles []string, now time.Time) (client.IssuedToken, error)
	RevokeClient(ctx context.Context, db *store.DB, id string, now time.Time) (int, error)
	// ServeMCP speaks MCP on stdin/stdout, sending tool calls to the
	// bridge listener state names with token.
	ServeMCP(ctx context.Context, token, version string, log *slog.Logger, state func() (daemon.State, error), configuredBridgePort int, health func(context.Context) error) error
}

// errNoDaemonSide refuses a command that needs the server code in a
// binary built without it (cli.Execute rather than cli.ExecuteWith).
var errNoDaemonSide = errors.New("this build of bridge has no daemon side; run the bridge binary")

// side is the daemon side, or an error when the binary has none.
func (a *app) side() (DaemonSide, error) {
	if a.daemon == nil {
		return nil, errNoDaemonSide
	}
	return a.daemon, nil
}
