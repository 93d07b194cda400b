package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
)

// knownSections are the top-level keys config.yaml may have.
var knownSections = []string{"listen", "log", "events", "bridge", "platform", "factory"}

// loadConfig reads config.yaml of dir and the daemon's section with flags applied.
func (a *app) loadConfig(cmd *cobra.Command, dir string) (*config.File, daemon.Config, error) {
	cfg := daemon.DefaultConfig()
	side, err := a.side()
	if err != nil {
		return nil, cfg, err
	}
	file, err := config.Load(filepath.Join(dir, daemon.ConfigFile))
	if err != nil {
		return nil, cfg, err
	}
	// Every mistake of the file is reported at once (README: Configuration):
	// unknown sections, the daemon's own sections and the subsystems'
	// sections, which the subsystems decode again when the daemon starts.
	errs := []error{file.CheckKnown(knownSections...)}
	for _, sec := range []struct {
		name string
		out  any
	}{{"listen", &cfg.Listen}, {"log", &cfg.Log}, {"events", &cfg.Events}} {
		errs = append(errs, file.Decode(sec.name, sec.out))
	}
	errs = append(errs, side.CheckConfig(file)...)
	if err := errors.Join(errs...); err != nil {
		return nil, cfg, err
	}
	// Flags win over environment and file.
	if a.logLevel != "" {
		cfg.Log.Level = a.logLevel
	}
	if a.logFormat != "" {
		cfg.Log.Format = a.logFormat
	}
	if f := cmd.Flags().Lookup("port"); f != nil && f.Changed {
		cfg.Listen.BridgePort, _ = cmd.Flags().GetInt("port")
	}
	if f := cmd.Flags().Lookup("services-port"); f != nil && f.Changed {
		cfg.Listen.ServicesPort, _ = cmd.Flags().GetInt("services-port")
	}
	if err := cfg.Validate(); err != nil {
		return nil, cfg, fmt.Errorf("config: %w", err)
	}
	return file, cfg, nil
}

func (a *app) serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon in the foreground",
		Long: `Runs the daemon in the foreground with two loopback listeners: the bridge API
(default 127.0.0.1:8766) and the services API (default 127.0.0.1:8080).
Port 0 picks a free port; the actual addresses are written to daemon.json in the
data directory and shown by 'bridge status'. The first successful start creates
owner.token (mode 0600). Ctrl-C (SIGINT) or SIGTERM drains and exits 0.`,
		Example: `  bridge serve
  bridge serve --data-dir /tmp/bridge-dev --port 0 --services-port 0
  SERVER_PORT=9080 bridge serve --log-format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dir()
			if err != nil {
				return err
			}
			if err := daemon.EnsureDataDir(dir); err != nil {
				return err
			}
			file, cfg, err := a.loadConfig(cmd, dir)
			if err != nil {
				return err
			}
			log := a.logger(cfg.Log)
			d, err := a.daemon.Start(cmd.Context(), daemon.Options{DataDir: dir, Config: cfg, File: file, Logger: log, Build: a.build})
			if err != nil {
				return err
			}
			st := d.State()
			fmt.Fprintf(a.out, "bridge %s serving\n  bridge API:   %s\n  services API: %s\n  data dir:     %s\n", a.build.Version, st.BridgeURL, st.ServicesURL, st.DataDir)
			// The banner is read even when a signal already arrived: the
			// stores stay open until Wait, and a started daemon always says
			// which workspace it serves.
			if tenant, project, env, ok := a.daemon.LocalWorkspace(context.WithoutCancel(cmd.Context()), d); ok {
				fmt.Fprintf(a.out, "  local workspace (yours; see 'bridge platform identity'):\n    tenant:       %s\n    project:      %s\n    environment:  %s\n",
					tenant, project, env)
			}
			return d.Wait(cmd.Context())
		},
	}
	cmd.Flags().Int("port", daemon.DefaultBridgePort, "port of the bridge listener (0 picks a free port)")
	cmd.Flags().Int("services-port", daemon.DefaultServicesPort, "port of the services listener (0 picks a free port)")
	return cmd
}
