package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	bolt "go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/cli/local"
	"github.com/agentbridge/bridge/daemon"
)

// run executes the CLI in-process and returns exit code, stdout and stderr.
func run(ctx context.Context, args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := runTo(ctx, &out, &errw, args...)
	return code, out.String(), errw.String()
}

// runTo runs a command writing to stdout and stderr.
func runTo(ctx context.Context, stdout, stderr io.Writer, args ...string) int {
	return ExecuteWith(ctx, local.Side{}, Build{Version: "1.2.3", Commit: "abc", Date: "2026-11-22"}, args, stdout, stderr)
}

func TestInitWritesOnceUnlessForced(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	code, out, _ := run(context.Background(), "init", "--data-dir", dir, "--port", "9766")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Wrote"))
	path := filepath.Join(dir, daemon.ConfigFile)
	first, err := os.ReadFile(path)
	is.NoErr(err)
	is.True(strings.Contains(string(first), "bridge-port: 9766"))

	code, out, _ = run(context.Background(), "init", "--data-dir", dir, "--port", "1234")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "left unchanged"))
	again, _ := os.ReadFile(path)
	is.Equal(string(again), string(first))

	code, out, _ = run(context.Background(), "init", "--data-dir", dir, "--port", "1234", "--force", "--json")
	is.Equal(code, 0)
	var res map[string]any
	is.NoErr(json.Unmarshal([]byte(out), &res))
	is.Equal(res["written"], true)
	is.Equal(res["existed"], true)
	forced, _ := os.ReadFile(path)
	is.True(strings.Contains(string(forced), "bridge-port: 1234"))

	// init creates neither a token nor a database.
	_, err = os.Stat(filepath.Join(dir, daemon.OwnerTokenFile))
	is.True(os.IsNotExist(err))
	_, err = os.Stat(filepath.Join(dir, daemon.DatabaseFile))
	is.True(os.IsNotExist(err))
}

func TestInitBadPort(t *testing.T) {
	is := is.New(t)
	for _, p := range []string{"-1", "65536"} {
		code, _, errw := run(context.Background(), "init", "--data-dir", t.TempDir(), "--port", p)
		is.Equal(code, ExitUsage)
		is.True(strings.Contains(errw, "outside 0..65535"))
	}
	code, _, _ := run(context.Background(), "init", "--data-dir", t.TempDir(), "--port", "65535")
	is.Equal(code, 0)
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{"serve", "--bogus"},
		{"nosuchcommand"},
		{"init", "extra-arg"},
		{"status", "--port"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			code, out, errw := run(context.Background(), args...)
			is.Equal(code, ExitUsage)
			is.Equal(out, "")
			is.True(strings.HasPrefix(errw, "bridge: "))
			is.Equal(strings.Count(errw, "\n"), 2) // one error line and one hint
		})
	}
}

func TestStatusNotRunning(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	code, out, _ := run(context.Background(), "status", "--data-dir", dir)
	is.Equal(code, ExitNotRunning)
	is.True(strings.Contains(out, "not running"))
	code, out, _ = run(context.Background(), "status", "--data-dir", dir, "--json")
	is.Equal(code, ExitNotRunning)
	var res map[string]any
	is.NoErr(json.Unmarshal([]byte(out), &res))
	is.Equal(res["running"], false)
}

func TestStatusStaleDaemonFile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	data, _ := json.Marshal(daemon.State{PID: 999999, ServicesURL: "http://" + addr, BridgeURL: "http://" + addr})
	is.NoErr(os.WriteFile(filepath.Join(dir, daemon.DaemonFile), data, 0o600))
	code, out, _ := run(context.Background(), "status", "--data-dir", dir)
	is.Equal(code, ExitNotRunning)
	is.True(strings.Contains(out, "stale daemon.json"))
}

// TestStatusNotReady: a daemon that answers /health/ready with 503 (a busy
// database, a restricted project) is running, not ready; it is not taken
// for a stale daemon.json.
func TestStatusNotReady(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":503,"code":"PF-UNAVAILABLE","message":"the service is restricted"}`))
	}))
	defer srv.Close()
	data, _ := json.Marshal(daemon.State{PID: os.Getpid(), ServicesURL: srv.URL, BridgeURL: srv.URL, StartedAt: time.Now()})
	is.NoErr(os.WriteFile(filepath.Join(dir, daemon.DaemonFile), data, 0o600))
	code, out, _ := run(context.Background(), "status", "--data-dir", dir)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "health:       not ready: the service is restricted"))
	is.True(!strings.Contains(out, "stale"))
}

func TestVersion(t *testing.T) {
	is := is.New(t)
	code, out, _ := run(context.Background(), "version")
	is.Equal(code, 0)
	is.Equal(out, "bridge 1.2.3 (commit abc, built 2026-11-22)\n")
	code, out, _ = run(context.Background(), "version", "--json")
	is.Equal(code, 0)
	var b Build
	is.NoErr(json.Unmarshal([]byte(out), &b))
	is.Equal(b.Commit, "abc")
}

func TestServeConfigErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"bad yaml", "listen: [\n", "config.yaml: line"},
		{"unknown section", "mystery: 1\n", `config.yaml:1:1: unknown section "mystery"`},
		{"unknown key", "listen:\n  bogus: 1\n", `config.yaml:2:3: unknown key "bogus"`},
		{"bad port type", "listen:\n  bridge-port: abc\n", `config.yaml:2:16: "abc" is not a valid whole number`},
		{"port range", "listen:\n  bridge-port: 70000\n", "outside 0..65535"},
		{"non loopback", "listen:\n  bridge-host: 0.0.0.0\n", "non-loopback"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			is.NoErr(os.WriteFile(filepath.Join(dir, daemon.ConfigFile), []byte(c.yaml), 0o600))
			code, _, errw := run(context.Background(), "serve", "--data-dir", dir)
			is.Equal(code, ExitError)
			is.True(strings.Contains(errw, c.want))
			is.Equal(strings.Count(errw, "\n"), 1) // one clear line
			_, err := os.Stat(filepath.Join(dir, daemon.OwnerTokenFile))
			is.True(os.IsNotExist(err))
		})
	}
}

// TestServeReportsEveryConfigError: a config.yaml with mistakes in several
// sections (the daemon's and the subsystems') names each with its line and
// column, one line each, and starts nothing.
func TestServeReportsEveryConfigError(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	yaml := "mystery: 1\nlisten:\n  bridge-port: abc\n  bogus: 2\nbridge:\n  max-concurrent-jobs: many\nplatform:\n  webhooks:\n    nonsense: true\n"
	is.NoErr(os.WriteFile(filepath.Join(dir, daemon.ConfigFile), []byte(yaml), 0o600))
	code, _, errw := run(context.Background(), "serve", "--data-dir", dir)
	is.Equal(code, ExitError)
	want := []string{
		`config.yaml:1:1: unknown section "mystery"`,
		`config.yaml:3:16: "abc" is not a valid whole number`,
		`config.yaml:4:3: unknown key "bogus"`,
		`config.yaml:6:24: "many" is not a valid whole number`,
		`config.yaml:9:5: unknown key "nonsense"`,
	}
	lines := strings.Split(strings.TrimSpace(errw), "\n")
	is.Equal(len(lines), len(want)) // one line per mistake
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %q lacks %q", i+1, lines[i], w)
		}
	}
	_, err := os.Stat(filepath.Join(dir, daemon.OwnerTokenFile))
	is.True(os.IsNotExist(err))
}

func TestServeUnreadableConfig(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	// A directory where the file should be cannot be read, even by root.
	is.NoErr(os.Mkdir(filepath.Join(dir, daemon.ConfigFile), 0o700))
	code, _, errw := run(context.Background(), "serve", "--data-dir", dir, "--port", "0", "--services-port", "0")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "config"))
	is.Equal(strings.Count(errw, "\n"), 1)
	_, err := os.Stat(filepath.Join(dir, daemon.OwnerTokenFile))
	is.True(os.IsNotExist(err)) // nothing started, nothing written
}

func TestServeOccupiedPort(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	code, _, errw := run(context.Background(), "serve", "--data-dir", t.TempDir(), "--port", port, "--services-port", "0")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "already in use"))
}

func TestServeUnwritableDir(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "f")
	is.NoErr(os.WriteFile(file, nil, 0o600))
	code, _, errw := run(context.Background(), "serve", "--data-dir", filepath.Join(file, "d"), "--port", "0", "--services-port", "0")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "data directory"))
}

// TestServeStatusAndShutdown runs serve in-process, checks status, then
// cancels (as Ctrl-C does) and expects exit 0 and daemon.json removed.
func TestServeStatusAndShutdown(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, _ := run(ctx, "serve", "--data-dir", dir, "--port", "0", "--services-port", "0", "--log-level", "warn")
		done <- code
	}()
	deadline := time.Now().Add(30 * time.Second) // a -race daemon's start on a loaded machine
	for {
		if _, err := daemon.ReadState(dir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, _ := run(context.Background(), "status", "--data-dir", dir, "--json")
	is.Equal(code, 0)
	var st map[string]any
	is.NoErr(json.Unmarshal([]byte(out), &st))
	is.Equal(st["running"], true)
	is.Equal(st["health"], "ready")
	providers := st["providers"].([]any)
	is.True(len(providers) >= 1) // the default profile is listed
	code, out, _ = run(context.Background(), "status", "--data-dir", dir)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "profile default:"))

	code, _, errw := run(context.Background(), "migrate", "--data-dir", dir)
	is.Equal(code, ExitError) // refuses while the daemon runs
	is.True(strings.Contains(errw, "stop it before migrating"))

	cancel()
	select {
	case code := <-done:
		is.Equal(code, 0)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	_, err := daemon.ReadState(dir)
	is.Equal(err, daemon.ErrNotRunning)
}

// TestMigrateRefusesWhileInUse: the lock on events.bolt, not the health
// answer, says a daemon has the directory open (a busy daemon answers 503).
func TestMigrateRefusesWhileInUse(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	held, err := bolt.Open(filepath.Join(dir, daemon.EventsFile), 0o600, nil) // as a running daemon does
	is.NoErr(err)
	defer held.Close() // closing twice is harmless
	code, _, errw := run(context.Background(), "migrate", "--data-dir", dir)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "stop it before migrating"))
	_, err = os.Stat(filepath.Join(dir, daemon.DatabaseFile))
	is.True(os.IsNotExist(err)) // nothing was migrated
	is.NoErr(held.Close())
	code, _, _ = run(context.Background(), "migrate", "--data-dir", dir)
	is.Equal(code, 0)
}

func TestMigrateFreshDirectory(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	code, out, _ := run(context.Background(), "migrate", "--data-dir", dir, "--json")
	is.Equal(code, 0)
	var res struct {
		Applied []string `json:"applied"`
	}
	is.NoErr(json.Unmarshal([]byte(out), &res))
	code, out, _ = run(context.Background(), "migrate", "--data-dir", dir)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "up to date"))
}

func TestEveryCommandHasHelpWithExample(t *testing.T) {
	a := &app{}
	for _, c := range a.rootCmd().Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if c.Example == "" || c.Short == "" {
			t.Errorf("command %q lacks Short or Example", c.Name())
		}
		for _, sub := range c.Commands() {
			if sub.Example == "" || sub.Short == "" {
				t.Errorf("command %q %q lacks Short or Example", c.Name(), sub.Name())
			}
		}
	}
}

// TestMain keeps in-process daemons away from the developer's real keychain.
// With BRIDGE_TEST_RUN_CLI=1 the test binary is the bridge binary, so tests
// can run a command as a real child process (`bridge mcp` over stdio).
func TestMain(m *testing.M) {
	os.Setenv("BRIDGE_DISABLE_KEYRING", "1")
	if os.Getenv("BRIDGE_TEST_RUN_CLI") == "1" {
		os.Exit(ExecuteWith(context.Background(), local.Side{}, Build{Version: "1.2.3", Commit: "abc"}, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
