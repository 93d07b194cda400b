package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "modernc.org/sqlite"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/wire"
)

// childEnv marks the harness running as a daemon child: the cost-growth
// rows measure a fresh and a grown data directory each in its own process,
// so each one's anonymous RSS is its own.
const childEnv = "BRIDGE_BENCH_CHILD_DIR"

// childProfileEnv, when set, is the path prefix of the CPU profiles a
// daemon child writes: SIGUSR1 starts one (PREFIX.N.cpu), SIGUSR2 stops it.
// The parent profiles the runs windows only (-growprofile).
const childProfileEnv = "BRIDGE_BENCH_CHILD_CPUPROFILE"

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
	if prefix := os.Getenv(childProfileEnv); prefix != "" {
		defer profileOnSignal(prefix)()
	}
	fmt.Printf("READY %s\n", d.State().ServicesURL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return d.Shutdown()
}

// profileOnSignal starts a CPU profile at each SIGUSR1 and stops it at
// SIGUSR2; the function it answers stops listening (and a profile left on).
func profileOnSignal(prefix string) func() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	done := make(chan struct{})
	var stop func()
	go func() {
		n := 0
		for {
			select {
			case s := <-sig:
				switch {
				case s == syscall.SIGUSR1 && stop == nil:
					n++
					var err error
					if stop, err = startProfile(fmt.Sprintf("%s.%d.cpu", prefix, n)); err != nil {
						fmt.Fprintln(os.Stderr, "bench child: profile:", err)
					}
				case s == syscall.SIGUSR2 && stop != nil:
					stop()
					stop = nil
				}
			case <-done:
				if stop != nil {
					stop()
				}
				return
			}
		}
	}()
	return func() { signal.Stop(sig); close(done) }
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
func startChild(dir, profile string) (*childDaemon, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	if profile != "" {
		cmd.Env = append(cmd.Env, childProfileEnv+"="+profile)
	}
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

// signal sends sig to the child (profiling, see childProfileEnv).
func (c *childDaemon) signal(sig os.Signal) {
	if err := c.cmd.Process.Signal(sig); err != nil {
		fmt.Fprintln(os.Stderr, "bench: signal the daemon child:", err)
	}
}
