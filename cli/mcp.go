package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
)

// MCPTokenFile is where `bridge mcp init` keeps the host's client token, in
// the data directory; `bridge mcp` reads it when neither --token-file nor
// BRIDGE_TOKEN names one.
const MCPTokenFile = "mcp.token"

func (a *app) mcpCmd() *cobra.Command {
	var tokenFile string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the bridge to an MCP host (Claude Code, Codex, Cursor, ...) over stdio",
		Long: `Speaks the Model Context Protocol on stdin/stdout, for a host that starts it
as a command. Every tool call goes to the running daemon (found through
daemon.json, again at each call, so a restarted daemon on another port is
found) with one client token: the host gets that client's scopes and jobs.

The token comes from --token-file, else BRIDGE_TOKEN, else <data dir>/mcp.token
(written by 'bridge mcp init'). The owner token is refused: give hosts a
client token.

Tools: bridge_status, submit_job, get_job, job_result, send_message,
cancel_job, list_jobs, start_workflow_run, get_workflow_run (the last two
need the workflows scope). Resources: bridge://jobs/{jobId}/transcript and
bridge://jobs/{jobId}/audit. The daemon also serves the same tools as
streamable HTTP at /v1/bridge/mcp on the bridge listener (docs/mcp.md).`,
		Example: `  bridge mcp init                                  # once: mint the host's token into <data dir>/mcp.token
  claude mcp add bridge -- bridge mcp              # Claude Code
  codex mcp add bridge -- bridge mcp               # Codex (or see README for config.toml)
  BRIDGE_TOKEN=brg_... bridge mcp                  # a token of your own
  bridge mcp --token-file ~/.config/bridge/ide.token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serveMCP(cmd.Context(), tokenFile)
		},
	}
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the client token (default: BRIDGE_TOKEN, else <data dir>/mcp.token)")
	cmd.AddCommand(a.mcpInitCmd())
	return cmd
}

// mcpToken finds the host's token: --token-file, BRIDGE_TOKEN, mcp.token.
func (a *app) mcpToken(dir, tokenFile string) (string, error) {
	src := tokenFile
	if src == "" {
		if tok := strings.TrimSpace(os.Getenv("BRIDGE_TOKEN")); tok != "" {
			return checkClientToken(tok, "BRIDGE_TOKEN", dir)
		}
		src = filepath.Join(dir, MCPTokenFile)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			return "", withCode(ExitUsage, fmt.Errorf("no token: pass --token-file, set BRIDGE_TOKEN, or run 'bridge mcp init --data-dir %s' once", dir))
		}
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("read the token file: %w", err))
	}
	return checkClientToken(strings.TrimSpace(string(data)), src, dir)
}

// checkClientToken refuses malformed tokens and the owner token: a host is
// a client with scopes, never the administrator.
func checkClientToken(tok, from, dir string) (string, error) {
	if !daemon.WellFormedToken(tok) {
		return "", withCode(ExitUsage, fmt.Errorf("%s does not hold a bridge token (brg_...)", from))
	}
	if owner, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile)); err == nil && daemon.HashEqual(daemon.TokenHash(owner), daemon.TokenHash(tok)) {
		return "", withCode(ExitUsage, fmt.Errorf("%s holds the owner token; give the host a client token ('bridge mcp init' mints one)", from))
	}
	return tok, nil
}

func (a *app) serveMCP(ctx context.Context, tokenFile string) error {
	dir, err := a.dir()
	if err != nil {
		return err
	}
	tok, err := a.mcpToken(dir, tokenFile)
	if err != nil {
		return err
	}
	configured := configuredBridgePort(dir)
	state := func() (daemon.State, error) {
		st, err := daemon.ReadState(dir)
		if errors.Is(err, daemon.ErrNotRunning) {
			return st, fmt.Errorf("the bridge daemon is not running for %s; start it with: bridge serve --data-dir %s", dir, dir)
		}
		return st, err
	}
	side, err := a.side()
	if err != nil {
		return err
	}
	// stdout is the protocol; the SDK's session chatter stays off stderr
	// unless asked for with --log-level.
	level := a.logLevel
	if level == "" {
		level = "warn"
	}
	log := a.logger(daemon.Log{Level: level, Format: a.logFormat})
	return side.ServeMCP(ctx, tok, a.build.Version, log, state, configured, func(ctx context.Context) error {
		st, err := state()
		if err != nil {
			return err
		}
		return probeHealth(ctx, st.ServicesURL)
	})
}

// configuredBridgePort is the bridge port config.yaml (or BRIDGE_PORT)
// asks for, the default when it says nothing; 0 when it cannot be read.
func configuredBridgePort(dir string) int {
	cfg := daemon.DefaultConfig()
	file, err := config.Load(filepath.Join(dir, daemon.ConfigFile))
	if err != nil {
		return 0
	}
	if err := file.Decode("listen", &cfg.Listen); err != nil {
		return 0
	}
	return cfg.Listen.BridgePort
}

func (a *app) mcpInitCmd() *cobra.Command {
	var id, scopes, profiles string
	var force bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Mint the MCP host's client token into <data dir>/mcp.token",
		Long: `Mints a client token (through the running daemon, or directly on the data
directory when it is stopped, like 'bridge token') and writes it to <data dir>/mcp.token (mode 0600), where 'bridge mcp' finds it. The host
then acts as that client: it sees only that client's jobs, with those scopes.
An existing mcp.token is kept unless --force.`,
		Example: `  bridge mcp init
  bridge mcp init --scopes read,submit,control,workflows   # also start workflow runs
  bridge mcp init --id cursor --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dir()
			if err != nil {
				return err
			}
			path := filepath.Join(dir, MCPTokenFile)
			if _, err := os.Stat(path); err == nil && !force {
				return withCode(ExitUsage, fmt.Errorf("%s exists; pass --force to replace it", path))
			}
			req := client.TokenRequest{ID: id, Scopes: splitList(scopes), Profiles: splitList(profiles)}
			if err := checkScopes(req.Scopes); err != nil {
				return withCode(ExitUsage, err)
			}
			if err := daemon.EnsureDataDir(dir); err != nil {
				return err
			}
			issued, err := a.mintToken(cmd, req)
			if err != nil {
				return err
			}
			if err := daemon.WriteFileAtomic(path, []byte(issued.Token+"\n"), 0o600); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			fmt.Fprintf(a.out, "Wrote the token of client %q (scopes %s) to %s\nAdd the bridge to a host:\n  claude mcp add bridge -- bridge mcp%s\n  codex mcp add bridge -- bridge mcp%s\n",
				issued.Client, strings.Join(issued.Scopes, ","), path, dataDirArg(a.dataDir), dataDirArg(a.dataDir))
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "mcp-host", "client id of the host")
	cmd.Flags().StringVar(&scopes, "scopes", "read,submit,control", "comma list of read, submit, control, workflows")
	cmd.Flags().StringVar(&profiles, "profiles", "*", "comma list of profiles the host may run ('*' for all)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing mcp.token")
	return cmd
}

func dataDirArg(dir string) string {
	if dir == "" {
		return ""
	}
	return " --data-dir " + dir
}
