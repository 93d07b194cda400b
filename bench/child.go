package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/wire"
)

// childEnv marks the harness running as a daemon child: the cost-growth
// rows measure a fresh and a grown data directory each in its own process,
// so each one's anonymous RSS is its own.
const childEnv = "BRIDGE_BENCH_CHILD_DIR"

// benchConfig is the daemon's configuration in every harness run: the
// defaults (synchronous=FULL, fsynced bbolt commits), loopback ports
// chosen by the kernel, and a broker retention large enough to keep the
// grown directory's million webhooks.
func benchConfig() daemon.Config {
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	cfg.Events.BrokerMaxMessages = 4_000_000
	cfg.Events.BrokerMaxMiB = 16 << 10
	return cfg
}

// startDaemon starts the product's daemon (what `bridge serve` runs) on dir.
func startDaemon(dir string) (*daemon.Daemon, error) {
	return daemon.Start(context.Background(), wire.Options(daemon.Options{DataDir: dir, Config: benchConfig(), DisableKeyring: true,
		Build: daemon.BuildInfo{Version: "bench"}}))
}

// childMain serves a daemon on dir until stdin closes, after printing
// "READY <services URL>".
func childMain(dir string) error {
	d, err := startDaemon(dir)
	if err != nil {
		return err
	}
	fmt.Printf("READY %s\n", d.State().ServicesURL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return d.Shutdown()
}

// childDaemon is a daemon in a child process.
type childDaemon struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	services string
	db       *sql.DB
}

// startChild runs this program as a daemon child on dir; the parent reads
// the child's bridge.db (read only) to count ended runs and bytes.
func startChild(dir string) (*childDaemon, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childDaemon{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = c.stop()
		return nil, fmt.Errorf("daemon child on %s: %w", dir, err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
	if !ok {
		_ = c.stop()
		return nil, fmt.Errorf("daemon child on %s said %q", dir, line)
	}
	c.services = url
	if c.db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "bridge.db")+"?mode=ro&_pragma=busy_timeout(5000)"); err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

func (c *childDaemon) stop() error {
	if c.db != nil {
		_ = c.db.Close()
	}
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		_ = c.cmd.Process.Kill()
		return <-done
	}
}

// rssAnon is the child's anonymous resident memory (RssAnon in
// /proc/PID/status), in bytes.
func (c *childDaemon) rssAnon() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
