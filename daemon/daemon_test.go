package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
)

func testConfig() daemon.Config {
	c := daemon.DefaultConfig()
	c.Listen.BridgePort = 0
	c.Listen.ServicesPort = 0
	return c
}

func start(t *testing.T, dir string) *daemon.Daemon {
	t.Helper()
	d, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: testConfig(), Build: daemon.BuildInfo{Version: "test"}, DisableKeyring: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown() })
	return d
}

func get(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

func TestStartServesHealthAndWritesFiles(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	d := start(t, dir)
	st := d.State()

	code, body := get(t, st.ServicesURL+"/health/live", nil)
	is.Equal(code, 200)
	is.Equal(body, `{"status":"up"}`)
	code, body = get(t, st.ServicesURL+"/health/ready", nil)
	is.Equal(code, 200)
	is.Equal(body, `{"status":"ready"}`)

	fi, err := os.Stat(filepath.Join(dir, daemon.OwnerTokenFile))
	is.NoErr(err)
	if runtime.GOOS != "windows" {
		is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	}
	tok, err := daemon.ReadOwnerToken(filepath.Join(dir, daemon.OwnerTokenFile))
	is.NoErr(err)
	is.True(strings.HasPrefix(tok, daemon.TokenPrefix))

	onDisk, err := daemon.ReadState(dir)
	is.NoErr(err)
	is.Equal(onDisk.ServicesURL, st.ServicesURL)
	is.Equal(onDisk.BridgeURL, st.BridgeURL)
	is.Equal(onDisk.PID, os.Getpid())
	is.True(!strings.HasSuffix(onDisk.BridgeAddr, ":0")) // the real port, not 0

	is.NoErr(d.Shutdown())
	_, err = daemon.ReadState(dir)
	is.Equal(err, daemon.ErrNotRunning) // daemon.json removed on clean exit
}

func TestOwnerTokenNeverOverwritten(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	d := start(t, dir)
	first, _ := os.ReadFile(filepath.Join(dir, daemon.OwnerTokenFile))
	is.NoErr(d.Shutdown())
	d = start(t, dir)
	second, _ := os.ReadFile(filepath.Join(dir, daemon.OwnerTokenFile))
	is.Equal(string(first), string(second))
	is.NoErr(d.Shutdown())
}

func TestHostAndOriginGuard(t *testing.T) {
	t.Parallel()
	d := start(t, t.TempDir())
	st := d.State()
	_, port, _ := net.SplitHostPort(st.ServicesAddr)
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"loopback ip", map[string]string{"Host": "127.0.0.1:" + port}, 200},
		{"localhost", map[string]string{"Host": "localhost:" + port}, 200},
		{"ipv6 loopback", map[string]string{"Host": "[::1]:" + port}, 200},
		{"rebinding name", map[string]string{"Host": "attacker.example:" + port}, 403},
		{"wrong port", map[string]string{"Host": "127.0.0.1:1"}, 403},
		{"allowed origin", map[string]string{"Host": "127.0.0.1:" + port, "Origin": "http://localhost:" + port}, 200},
		{"foreign origin", map[string]string{"Host": "127.0.0.1:" + port, "Origin": "https://evil.example"}, 403},
		{"null origin", map[string]string{"Host": "127.0.0.1:" + port, "Origin": "null"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _ := get(t, st.ServicesURL+"/health/live", c.hdr)
			if code != c.want {
				t.Fatalf("status %d, want %d", code, c.want)
			}
		})
	}
	// The bridge listener answers refusals in its own error shape.
	code, body := get(t, st.BridgeURL+"/v1/bridge/status", map[string]string{"Host": "evil.example"})
	is := is.New(t)
	is.Equal(code, 403)
	is.True(strings.Contains(body, `"host_not_allowed"`))
}

func TestConfiguredTunnelHostAllowed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	c := testConfig()
	c.Listen.AllowedHosts = []string{"tunnel.example.com"}
	c.Listen.AllowedOrigins = []string{"https://tunnel.example.com"}
	d, err := daemon.Start(context.Background(), daemon.Options{DataDir: t.TempDir(), Config: c, DisableKeyring: true})
	is.NoErr(err)
	defer d.Shutdown()
	code, _ := get(t, d.State().ServicesURL+"/health/live", map[string]string{"Host": "tunnel.example.com", "Origin": "https://tunnel.example.com"})
	is.Equal(code, 200)
}

func TestUnknownRouteIsProblem(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	d := start(t, t.TempDir())
	req, _ := http.NewRequest(http.MethodGet, d.State().ServicesURL+"/nope", nil)
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, 404)
	is.Equal(resp.Header.Get("Content-Type"), "application/problem+json")
	var p map[string]any
	is.NoErr(json.NewDecoder(resp.Body).Decode(&p))
	is.Equal(p["code"], "PF-NOT-FOUND")
	is.True(p["request_id"] != "")
}

func TestSecondDaemonFailsFast(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	d := start(t, dir)
	before, _ := os.ReadFile(filepath.Join(dir, daemon.DaemonFile))
	t0 := time.Now()
	_, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: testConfig(), DisableKeyring: true})
	is.True(err != nil)
	is.True(time.Since(t0) < 3*time.Second)
	is.True(strings.Contains(err.Error(), "another bridge daemon is already using"))
	after, _ := os.ReadFile(filepath.Join(dir, daemon.DaemonFile))
	is.Equal(string(before), string(after)) // the running daemon's file is untouched
	code, _ := get(t, d.State().ServicesURL+"/health/live", nil)
	is.Equal(code, 200)
}

func TestOccupiedPort(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer ln.Close()
	c := testConfig()
	c.Listen.ServicesPort = ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	_, err = daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: c, DisableKeyring: true})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "already in use"))
	_, statErr := os.Stat(filepath.Join(dir, daemon.OwnerTokenFile))
	is.True(os.IsNotExist(statErr)) // not a successful start: no token
	// The failed start released its lock: a good start works now.
	start(t, dir)
}

func TestNonLoopbackRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	c := testConfig()
	c.Listen.ServicesHost = "0.0.0.0"
	_, err := daemon.Start(context.Background(), daemon.Options{DataDir: t.TempDir(), Config: c, DisableKeyring: true})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "non-loopback"))
}

func TestUnwritableDataDir(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "file")
	is.NoErr(os.WriteFile(file, nil, 0o600))
	_, err := daemon.Start(context.Background(), daemon.Options{DataDir: filepath.Join(file, "sub"), Config: testConfig(), DisableKeyring: true})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "data directory"))
}

func TestCorruptStores(t *testing.T) {
	t.Parallel()
	for _, name := range []string{daemon.EventsFile, daemon.DatabaseFile} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			garbage := []byte(strings.Repeat("garbage!", 1024))
			is.NoErr(os.WriteFile(filepath.Join(dir, name), garbage, 0o600))
			_, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: testConfig(), DisableKeyring: true})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "corrupt"))
			after, _ := os.ReadFile(filepath.Join(dir, name))
			is.Equal(after, garbage) // nothing overwritten
		})
	}
}

// TestRestartAfterSIGKILL runs a daemon in a child process, commits a row,
// kills the child with SIGKILL and starts again on the same directory.
func TestRestartAfterSIGKILL(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL semantics")
	}
	is := is.New(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=TestChildDaemon$")
	cmd.Env = append(os.Environ(), "BRIDGE_TEST_CHILD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	is.NoErr(err)
	cmd.Stderr = os.Stderr
	is.NoErr(cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	is.NoErr(err)
	is.Equal(strings.TrimSpace(line), "committed")
	is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	// daemon.json is stale now; a new start replaces it and keeps the data.
	d := start(t, dir)
	var n int
	is.NoErr(d.DB.Reader().QueryRow(`SELECT count(*) FROM crash_probe`).Scan(&n))
	is.Equal(n, 100)
	st, err := daemon.ReadState(dir)
	is.NoErr(err)
	is.Equal(st.PID, os.Getpid())
}

func TestChildDaemon(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("BRIDGE_TEST_CHILD_DIR")
	if dir == "" {
		t.Skip("helper process for TestRestartAfterSIGKILL")
	}
	d, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: testConfig(), DisableKeyring: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.DB.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE crash_probe (n INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := d.DB.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO crash_probe VALUES (?)`, i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	os.Stdout.WriteString("committed\n")
	time.Sleep(time.Minute) // killed by the parent
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mod  func(*daemon.Config)
		ok   bool
	}{
		{"defaults", func(*daemon.Config) {}, true},
		{"port 65535", func(c *daemon.Config) { c.Listen.BridgePort = 65535 }, true},
		{"port 65536", func(c *daemon.Config) { c.Listen.BridgePort = 65536 }, false},
		{"port -1", func(c *daemon.Config) { c.Listen.ServicesPort = -1 }, false},
		{"public host", func(c *daemon.Config) { c.Listen.BridgeHost = "192.0.2.1" }, false},
		{"public host allowed", func(c *daemon.Config) { c.Listen.BridgeHost = "192.0.2.1"; c.Listen.AllowNonLoopback = true }, true},
		{"localhost", func(c *daemon.Config) { c.Listen.BridgeHost = "localhost" }, true},
		{"bad level", func(c *daemon.Config) { c.Log.Level = "loud" }, false},
		{"bad format", func(c *daemon.Config) { c.Log.Format = "xml" }, false},
		{"capacity 99", func(c *daemon.Config) { c.Events.Capacity = 99 }, false},
		{"capacity 100", func(c *daemon.Config) { c.Events.Capacity = 100 }, true},
		{"broker age 59s", func(c *daemon.Config) { c.Events.BrokerMaxAge = config.Duration(59 * time.Second) }, false},
		{"broker age 1m", func(c *daemon.Config) { c.Events.BrokerMaxAge = config.Duration(time.Minute) }, true},
		{"broker age 8760h", func(c *daemon.Config) { c.Events.BrokerMaxAge = config.Duration(8760 * time.Hour) }, true},
		{"broker age 8761h", func(c *daemon.Config) { c.Events.BrokerMaxAge = config.Duration(8761 * time.Hour) }, false},
		{"broker messages 999", func(c *daemon.Config) { c.Events.BrokerMaxMessages = 999 }, false},
		{"broker messages 1000", func(c *daemon.Config) { c.Events.BrokerMaxMessages = 1000 }, true},
		{"broker messages 1e9", func(c *daemon.Config) { c.Events.BrokerMaxMessages = 1_000_000_000 }, true},
		{"broker messages 1e9+1", func(c *daemon.Config) { c.Events.BrokerMaxMessages = 1_000_000_001 }, false},
		{"broker mib 0", func(c *daemon.Config) { c.Events.BrokerMaxMiB = 0 }, false},
		{"broker mib 1", func(c *daemon.Config) { c.Events.BrokerMaxMiB = 1 }, true},
		{"broker mib 1048576", func(c *daemon.Config) { c.Events.BrokerMaxMiB = 1 << 20 }, true},
		{"broker mib 1048577", func(c *daemon.Config) { c.Events.BrokerMaxMiB = 1<<20 + 1 }, false},
		{"compact off", func(c *daemon.Config) { c.Events.CompactMinFreeMiB = 0 }, true},
		{"compact -1", func(c *daemon.Config) { c.Events.CompactMinFreeMiB = -1 }, false},
		{"compact 1048577", func(c *daemon.Config) { c.Events.CompactMinFreeMiB = 1<<20 + 1 }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := daemon.DefaultConfig()
			c.mod(&cfg)
			if err := cfg.Validate(); (err == nil) != c.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestTokenShape(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	tok, err := daemon.NewToken()
	is.NoErr(err)
	is.True(daemon.WellFormedToken(tok))
	is.Equal(len(tok), len(daemon.TokenPrefix)+43) // 256 bits
	is.True(!daemon.WellFormedToken(tok[:len(tok)-1]))
	is.True(!daemon.WellFormedToken("xyz_" + tok[4:]))
	other, _ := daemon.NewToken()
	is.True(!daemon.HashEqual(daemon.TokenHash(tok), daemon.TokenHash(other)))
	is.True(daemon.HashEqual(daemon.TokenHash(tok), daemon.TokenHash(tok)))
}

// TestServicesRequestIDs: every services response, the Host guard's
// refusals included, carries the server-generated request id under both
// X-Request-ID and X-Platform-Request-ID (never the client's); the health
// probes, platform routes, carry the platform wire version.
func TestServicesRequestIDs(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	d := start(t, t.TempDir())
	for _, host := range []string{"", "evil.example"} {
		req, _ := http.NewRequest(http.MethodGet, d.State().ServicesURL+"/health/live", nil)
		req.Header.Set("X-Request-ID", "client")
		req.Header.Set("X-Platform-Request-ID", "client")
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		resp.Body.Close()
		id := resp.Header.Get("X-Platform-Request-ID")
		is.Equal(len(id), 32)
		is.Equal(resp.Header.Get("X-Request-ID"), id)
		if host == "" {
			is.Equal(resp.StatusCode, 200)
			is.Equal(resp.Header.Get("X-Platform-Wire-Version"), "platform/api-v1")
		} else {
			is.Equal(resp.StatusCode, 403)
		}
	}
}

// LockDataDir refuses while a daemon runs, and no daemon starts while it
// is held: on a directory never served, on an empty events.bolt and on one
// a daemon wrote.
func TestLockDataDir(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	refused := func(dir string) {
		t.Helper()
		d, err := daemon.Start(context.Background(), daemon.Options{DataDir: dir, Config: testConfig(), DisableKeyring: true})
		if err == nil {
			d.Shutdown()
			t.Fatal("a daemon started while the data directory was locked")
		}
		is.True(strings.Contains(err.Error(), "already using"))
	}
	// held locks dir and checks a second lock: shared (a read-only open)
	// on a file a daemon wrote, exclusive where the file is created.
	held := func(dir string, shared bool) {
		t.Helper()
		release, err := daemon.LockDataDir(dir)
		is.NoErr(err)
		defer release()
		second, err := daemon.LockDataDir(dir)
		if shared {
			is.NoErr(err)
			defer second()
		} else {
			is.True(errors.Is(err, daemon.ErrInUse))
		}
		refused(dir)
	}

	dir := t.TempDir()
	held(dir, false) // never served
	d := start(t, dir)
	if release, err := daemon.LockDataDir(dir); err == nil {
		release()
		t.Fatal("locked while a daemon runs")
	} else {
		is.True(errors.Is(err, daemon.ErrInUse))
	}
	is.NoErr(d.Shutdown())
	held(dir, true) // written by a daemon
	is.NoErr(start(t, dir).Shutdown())

	empty := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(empty, daemon.EventsFile), nil, 0o600))
	held(empty, false)
	is.NoErr(start(t, empty).Shutdown())

	// A file bbolt refuses as damaged cannot be served: nothing to lock.
	damaged := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(damaged, daemon.EventsFile), bytes.Repeat([]byte{0xAB}, 16<<10), 0o600))
	release, err := daemon.LockDataDir(damaged)
	is.NoErr(err)
	is.NoErr(release())
}
