package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store"
)

// withStore opens the data directory's database for commands that work while
// the daemon is down. SQLite allows this next to a running daemon too, but
// commands prefer the API then so the daemon can act at once (revocation).
func (a *app) withStore(ctx context.Context, fn func(db *store.DB, dir string) error) error {
	dir, err := a.dir()
	if err != nil {
		return err
	}
	side, err := a.side()
	if err != nil {
		return err
	}
	if err := daemon.EnsureDataDir(dir); err != nil {
		return err
	}
	db, err := store.Open(ctx, filepath.Join(dir, daemon.DatabaseFile), side.Migrations(), store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db, dir)
}

// running returns a client for the daemon when one answers, else nil.
func (a *app) running(ctx context.Context) *daemonConn {
	c, err := a.daemonClient(ctx)
	if err != nil {
		return nil
	}
	return c
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkScopes refuses a --scopes value that names no scope, an unknown one or
// one twice: a bad flag value, so the usage exit code (README: Commands).
func checkScopes(scopes []string) error {
	if len(scopes) == 0 {
		return fmt.Errorf("--scopes must name at least one of %s", strings.Join(client.AllScopes, ", "))
	}
	for i, s := range scopes {
		if !slices.Contains(client.AllScopes, s) {
			return fmt.Errorf("--scopes: unknown scope %q (want %s)", s, strings.Join(client.AllScopes, ", "))
		}
		if slices.Contains(scopes[:i], s) {
			return fmt.Errorf("--scopes: scope %q is listed twice", s)
		}
	}
	return nil
}

// mintToken issues a client token through the running daemon's API, or
// directly on the data directory when the daemon is stopped.
func (a *app) mintToken(cmd *cobra.Command, req client.TokenRequest) (client.IssuedToken, error) {
	ctx := cmd.Context()
	var issued client.IssuedToken
	if c := a.running(ctx); c != nil {
		err := c.do(ctx, "POST", c.state.BridgeURL, "/v1/bridge/admin/tokens", req, &issued)
		return issued, err
	}
	err := a.withStore(ctx, func(db *store.DB, dir string) error {
		names, err := a.profileNames(cmd, dir)
		if err != nil {
			return err
		}
		issued, err = a.daemon.MintToken(ctx, db, req, names, time.Now())
		return err
	})
	return issued, err
}

func (a *app) tokenCmd() *cobra.Command {
	var id, profiles, scopes string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create a client token for an app or IDE panel",
		Long: `Creates a bridge token for a client and prints it once. Tokens issued under
the same --id are the same principal: they see the same jobs; other ids are
isolated. Scopes: read, submit, control, workflows. Profiles restrict which agent
profiles the client may run ('*' for all).

Works with the daemon running (through its API) or stopped (directly on the
data directory).`,
		Example: `  bridge token --id my-ide --profiles default --scopes read,submit,control
  bridge token --id dashboard --profiles '*' --scopes read --json | jq -r .token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := client.TokenRequest{ID: id, Profiles: splitList(profiles), Scopes: splitList(scopes)}
			if err := checkScopes(req.Scopes); err != nil {
				return withCode(ExitUsage, err)
			}
			issued, err := a.mintToken(cmd, req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(issued)
			}
			fmt.Fprintf(a.out, "%s\n", issued.Token)
			fmt.Fprintf(a.errw, "Token for client %q (scopes %s; profiles %s). It is shown only once.\n",
				issued.Client, strings.Join(issued.Scopes, ","), strings.Join(issued.Profiles, ","))
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "client name (the principal); required")
	cmd.Flags().StringVar(&profiles, "profiles", "default", "comma-separated agent profiles the client may run, or '*'")
	cmd.Flags().StringVar(&scopes, "scopes", "read,submit,control", "comma-separated scopes: read, submit, control, workflows")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the token and its details as JSON")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func (a *app) revokeCmd() *cobra.Command {
	var id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke every token of a client",
		Long: `Revokes all tokens issued under a client name. With the daemon running, the
client's next request gets 401, its event streams close and its synchronous chat
completions end (their jobs are cancelled when no waiter remains). Background
jobs keep running until cancelled explicitly.

'--id owner' signs every web console session out (see 'bridge console'); the
owner token itself stays valid.`,
		Example: `  bridge revoke --id my-ide
  bridge revoke --id owner
  bridge revoke --id dashboard --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var out struct {
				Client        string `json:"client"`
				RevokedTokens int    `json:"revokedTokens"`
				ClosedStreams int    `json:"closedStreams"`
				EndedSessions *int   `json:"endedSessions,omitempty"`
			}
			if c := a.running(ctx); c != nil {
				if err := c.do(ctx, "DELETE", c.state.BridgeURL, "/v1/bridge/admin/clients/"+id, nil, &out); err != nil {
					return err
				}
			} else {
				err := a.withStore(ctx, func(db *store.DB, _ string) error {
					n, err := a.daemon.RevokeClient(ctx, db, id, time.Now())
					out.Client, out.RevokedTokens = id, n
					return err
				})
				if err != nil {
					return err
				}
			}
			if asJSON {
				return a.printJSON(out)
			}
			if out.EndedSessions != nil {
				fmt.Fprintf(a.out, "Signed out %d console session(s) of the owner; the owner token itself stays (replace owner.token and restart to change it).\n", *out.EndedSessions)
				return nil
			}
			fmt.Fprintf(a.out, "Revoked %d token(s) of client %q", out.RevokedTokens, out.Client)
			if out.ClosedStreams > 0 {
				fmt.Fprintf(a.out, "; closed %d open stream(s)", out.ClosedStreams)
			}
			fmt.Fprintln(a.out, ".")
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "client name; required")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

// profileNames reads the configured bridge profiles of a data directory.
func (a *app) profileNames(cmd *cobra.Command, dir string) ([]string, error) {
	file, _, err := a.loadConfig(cmd, dir)
	if err != nil {
		return nil, err
	}
	return a.daemon.ProfileNames(file)
}
