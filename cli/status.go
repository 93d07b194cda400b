package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/client"
	"github.com/agentbridge/bridge/daemon"
)

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	return nil
}

// probeHealth asks a services listener whether it is ready. A stopped
// daemon's port refuses at once; the timeout only bounds a daemon that
// accepts but does not answer, and is long enough for a busy daemon not to
// be taken for a stopped one. A daemon that answers but is not ready gives
// a *client.Error; nothing answering gives any other error.
func probeHealth(ctx context.Context, servicesURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := client.New(servicesURL, "", nil).Send(ctx, http.MethodGet, "/health/ready", nil, nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Report whether the daemon is running, where, and its health",
		Long: `Finds the running daemon through daemon.json in the data directory and reports
its addresses, version, uptime and health.

Exit codes: 0 running, 3 not running, 1 other errors.`,
		Example: `  bridge status
  bridge status --json | jq -r .bridge_url`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dir()
			if err != nil {
				return err
			}
			st, err := daemon.ReadState(dir)
			if errors.Is(err, daemon.ErrNotRunning) {
				return a.notRunning(asJSON, dir, "")
			}
			if err != nil {
				return err
			}
			health := "ready"
			if err := probeHealth(cmd.Context(), st.ServicesURL); err != nil {
				var answered *client.Error
				if !errors.As(err, &answered) {
					// daemon.json outlives a daemon killed with SIGKILL.
					return a.notRunning(asJSON, dir, fmt.Sprintf("stale daemon.json from pid %d", st.PID))
				}
				// It answered: running, but not ready (a busy database,
				// a restricted project).
				health = "not ready: " + answered.Message
			}
			uptime := time.Since(st.StartedAt).Truncate(time.Second)
			// Provider availability and job counts come from the bridge API;
			// they are optional extras if the owner token is unreadable.
			var bs struct {
				Providers []struct {
					Profile     string `json:"profile"`
					Provider    string `json:"provider"`
					Available   bool   `json:"available"`
					Demo        bool   `json:"demo"`
					Permissions string `json:"permissions"`
					Error       string `json:"error"`
				} `json:"providers"`
				Jobs map[string]int `json:"jobs"`
			}
			if c, err := a.daemonClient(cmd.Context()); err == nil {
				_ = c.do(cmd.Context(), "GET", st.BridgeURL, "/v1/bridge/status", nil, &bs)
			}
			if asJSON {
				return a.printJSON(map[string]any{
					"running": true, "pid": st.PID, "bridge_url": st.BridgeURL, "services_url": st.ServicesURL,
					"version": st.Version, "commit": st.Commit, "started_at": st.StartedAt,
					"uptime_seconds": int64(uptime.Seconds()), "health": health, "data_dir": st.DataDir,
					"providers": bs.Providers, "jobs": bs.Jobs,
				})
			}
			fmt.Fprintf(a.out, "bridge is running (pid %d, up %s)\n", st.PID, uptime)
			fmt.Fprintf(a.out, "  bridge API:   %s\n  services API: %s\n  version:      %s (%s)\n  health:       %s\n  data dir:     %s\n",
				st.BridgeURL, st.ServicesURL, st.Version, st.Commit, health, st.DataDir)
			for _, p := range bs.Providers {
				fmt.Fprintf(a.out, "  profile %-8s %s%s\n", p.Profile+":", p.Provider, providerNote(p.Demo, p.Available, p.Permissions, p.Error))
			}
			if bs.Jobs != nil {
				fmt.Fprintf(a.out, "  jobs:         %d queued, %d running, %d paused\n", bs.Jobs["queued"], bs.Jobs["running"], bs.Jobs["paused"])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// providerNote qualifies a profile's provider in `bridge status`: the echo
// demo, what the agent may do unasked (Claude's permission mode or Codex's
// sandbox, README "Agent providers"), or why it cannot run.
func providerNote(demo, available bool, permissions, errText string) string {
	if demo {
		return " (demo: echoes prompts; install Claude Code or Codex for real work)"
	}
	note := ""
	if permissions != "" {
		note = " (permissions: " + permissions + ")"
	}
	if !available {
		note += " (unavailable: " + errText + ")"
	}
	return note
}

func (a *app) notRunning(asJSON bool, dir, why string) error {
	if asJSON {
		_ = a.printJSON(map[string]any{"running": false, "data_dir": dir, "reason": why})
	} else {
		msg := "bridge is not running"
		if why != "" {
			msg += " (" + why + ")"
		}
		fmt.Fprintf(a.out, "%s\n  data dir: %s\n  start it with: bridge serve --data-dir %s\n", msg, dir, dir)
	}
	return withCode(ExitNotRunning, errors.New(""))
}

func (a *app) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and build date",
		Example: "  bridge version\n  bridge version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return a.printJSON(a.build)
			}
			fmt.Fprintf(a.out, "bridge %s (commit %s, built %s)\n", a.build.Version, a.build.Commit, a.build.Date)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
