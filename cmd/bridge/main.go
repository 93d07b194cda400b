// Command bridge is the Agent Bridge CLI and daemon.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/bridge/cli"
	"github.com/agentbridge/bridge/cli/local"
)

// Set by goreleaser through -ldflags "-X main.version=... -X main.commit=... -X main.date=...".
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.ExecuteWith(ctx, local.Side{}, cli.Build{Version: version, Commit: commit, Date: date}, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
