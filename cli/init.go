package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/daemon"
)

const configTemplate = `# Agent Bridge configuration, written by 'bridge init'.
# Precedence: command-line flag > environment variable > this file > default.
listen:
  bridge-host: 127.0.0.1
  bridge-port: %d        # BRIDGE_PORT
  services-host: 127.0.0.1
  services-port: %d      # SERVER_PORT
  # allowed-hosts: [my-tunnel.example.com]          # tunnel hostnames
  # allowed-origins: [https://my-tunnel.example.com] # tunnel browser origins
log:
  level: info          # debug, info, warn, error
  format: text         # text or json
events:
  capacity: 100000     # events kept for SSE resume
`

func (a *app) initCmd() *cobra.Command {
	var port, servicesPort int
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write config.yaml into the data directory",
		Long: `Writes config.yaml into the data directory. It neither starts the daemon nor
creates a token: the owner token is created by the first successful 'bridge serve'.
An existing config.yaml is left unchanged unless --force is given.`,
		Example: `  bridge init
  bridge init --port 9766 --services-port 9080
  bridge init --data-dir /tmp/bridge-dev --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, p := range []int{port, servicesPort} {
				if p < 0 || p > 65535 {
					return withCode(ExitUsage, fmt.Errorf("port %d is outside 0..65535", p))
				}
			}
			dir, err := a.dir()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("create data directory: %w", err)
			}
			path := filepath.Join(dir, daemon.ConfigFile)
			_, statErr := os.Stat(path)
			exists := statErr == nil
			if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
				return fmt.Errorf("check %s: %w", path, statErr)
			}
			written := false
			if !exists || force {
				data := fmt.Sprintf(configTemplate, port, servicesPort)
				if err := daemon.WriteFileAtomic(path, []byte(data), 0o600); err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				written = true
			}
			if asJSON {
				return a.printJSON(map[string]any{"path": path, "written": written, "existed": exists})
			}
			switch {
			case written && exists:
				fmt.Fprintf(a.out, "Rewrote %s\n", path)
			case written:
				fmt.Fprintf(a.out, "Wrote %s\nStart the daemon with: bridge serve --data-dir %s\n", path, dir)
			default:
				fmt.Fprintf(a.out, "%s already exists; left unchanged (use --force to rewrite it)\n", path)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&port, "port", daemon.DefaultBridgePort, "port of the bridge listener (0 picks a free port)")
	cmd.Flags().IntVar(&servicesPort, "services-port", daemon.DefaultServicesPort, "port of the services listener (0 picks a free port)")
	cmd.Flags().BoolVar(&force, "force", false, "rewrite an existing config.yaml")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
