// Package cli holds the cobra commands of the `bridge` binary.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
)

// Build identifies the binary.
type Build = daemon.BuildInfo

// Exit codes that scripts can rely on.
const (
	ExitOK         = 0
	ExitError      = 1 // the command failed
	ExitUsage      = 2 // bad flags or arguments
	ExitNotRunning = 3 // `bridge status`: no daemon is running
	ExitPartial    = 4 // `bridge workflow compile|validate`: no errors, but references left unresolved
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// app carries what every command shares; it replaces package-level state.
type app struct {
	build     Build
	out, errw io.Writer
	dataDir   string
	logLevel  string
	logFormat string
	// daemon is the server code linked in (nil: none, see ExecuteWith).
	daemon DaemonSide
}

// Execute runs the CLI with args and returns the process exit code. The
// commands that run server code in-process (serve, migrate, mcp, token and
// revoke on a stopped daemon) need ExecuteWith.
func Execute(ctx context.Context, build Build, args []string, stdout, stderr io.Writer) int {
	return ExecuteWith(ctx, nil, build, args, stdout, stderr)
}

// ExecuteWith runs the CLI with the daemon side d (cmd/bridge passes
// cli/local.Side) and returns the process exit code.
func ExecuteWith(ctx context.Context, d DaemonSide, build Build, args []string, stdout, stderr io.Writer) int {
	a := &app{build: build, out: stdout, errw: stderr, daemon: d}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	code := ExitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if isUsageError(err) {
		code = ExitUsage
	}
	if msg := err.Error(); msg != "" {
		// Joined errors (every mistake of a config.yaml) get a line each.
		for _, e := range config.Errors(unwrapExit(err)) {
			fmt.Fprintf(stderr, "bridge: %s\n", oneLine(e.Error()))
		}
		if code == ExitUsage {
			fmt.Fprintln(stderr, "Run 'bridge --help' for usage.")
		}
	}
	return code
}

// unwrapExit strips the exit code carried by withCode.
func unwrapExit(err error) error {
	if ee, ok := err.(*exitError); ok {
		return ee.err
	}
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// isUsageError recognises cobra's flag and argument errors.
func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bridge",
		Short: "Agent Bridge: a local orchestration daemon for AI agents and workflows",
		Long: `Agent Bridge runs AI coding-agent jobs, workflows, webhook ingestion and
callbacks on your machine, behind two loopback listeners.

Everything lives in one data directory ($BRIDGE_HOME, else your user config
directory + /bridge; override with --data-dir).`,
		Example: `  bridge init                      # write config.yaml with the default ports
  bridge serve                     # run the daemon in the foreground
  bridge status                    # is it running, where, which version
  bridge token --id my-ide --profiles default --scopes read,submit`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       a.build.Version,
	}
	root.SetVersionTemplate("bridge {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.dataDir, "data-dir", "", "data directory (default $BRIDGE_HOME, else <user config dir>/bridge)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn, error (default info)")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "", "log format: text or json (default text)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	root.AddCommand(a.initCmd(), a.serveCmd(), a.migrateCmd(), a.statusCmd(), a.versionCmd(), a.tokenCmd(), a.revokeCmd(), a.webhooksCmd(), a.workflowCmd(), a.platformCmd(), a.loginCmd(), a.callbacksCmd())
	root.AddCommand(a.runCmd())
	root.AddCommand(a.incidentCmd())
	root.AddCommand(a.humanCmd())
	root.AddCommand(a.fileCmd())
	root.AddCommand(a.scheduleCmd())
	root.AddCommand(a.triggerCmd())
	root.AddCommand(a.testCmd())
	root.AddCommand(a.connectionCmd())
	root.AddCommand(a.sourceCmd())
	root.AddCommand(a.receiptCmd())
	root.AddCommand(a.factoryCmd())
	root.AddCommand(a.consoleCmd())
	root.AddCommand(a.mcpCmd())
	root.AddCommand(a.debugCmd())
	return root
}

// dir resolves the data directory.
func (a *app) dir() (string, error) {
	if a.dataDir != "" {
		return a.dataDir, nil
	}
	return daemon.DefaultDataDir()
}

func (a *app) logger(cfg daemon.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(a.errw, opts))
	}
	return slog.New(slog.NewTextHandler(a.errw, opts))
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
