//go:build unix

// The end-to-end tests drive sh scripts (the fake agent, the checks), so
// they build on unix only.

package factory

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/broker"
)

const ownerToken = "test-owner-token"

// harness is a factory service on a temporary data directory, with the fake
// agent (testdata/agent.sh) as the command profile "fake".
type harness struct {
	t      testing.TB
	dir    string // data directory
	fake   string // where the fake agent reports its pid
	yaml   string
	db     *store.DB
	svc    *Service
	events *recorder
}

// recorder is a broker.Publisher that keeps what is published.
type recorder struct {
	mu   sync.Mutex
	msgs []broker.Message
}

func (r *recorder) Publish(_ context.Context, msgs ...broker.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		out = append(out, m.Headers["event-type"]+":"+string(m.Value))
	}
	return out
}

func newHarness(t testing.TB, extraYAML string) *harness {
	t.Helper()
	return newHarnessAt(t, t.TempDir(), extraYAML)
}

func newHarnessAt(t testing.TB, dir, extraYAML string) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, fake: filepath.Join(dir, "fake"), events: &recorder{}}
	if err := os.MkdirAll(h.fake, 0o700); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(h.fake, "agent.sh")
	src, err := os.ReadFile("testdata/agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agent, src, 0o755); err != nil {
		t.Fatal(err)
	}
	h.yaml = fmt.Sprintf("bridge:\n  profiles:\n    fake:\n      provider: command\n      command: %s\n      env: [\"FAKE_DIR=%s\"]\n%s", agent, h.fake, extraYAML)
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *harness) open() {
	t := h.t
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(h.dir, "bridge.db"), Migrations(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse("config.yaml", []byte(h.yaml))
	if err != nil {
		t.Fatal(err)
	}
	f.LookupEnv = func(string) (string, bool) { return "", false }
	svc, err := New(daemon.Deps{DataDir: h.dir, DB: db, Config: f, Logger: slog.New(slog.DiscardHandler),
		IsOwner: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+ownerToken }}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc.pub = h.events
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.db, h.svc = db, svc
}

func (h *harness) close() {
	if h.svc != nil {
		_ = h.svc.Close()
		h.svc = nil
	}
	if h.db != nil {
		_ = h.db.Close()
		h.db = nil
	}
	// The hanging fake agent, if a test left one.
	if pid := readPid(filepath.Join(h.fake, "agent.pid")); pid > 0 {
		killGroup(pid)
	}
}

// restart stops the service and starts a new one on the same data.
func (h *harness) restart() {
	h.close()
	h.open()
}

// wait polls a run until it is no longer queued or running.
func (h *harness) wait(id string) Run {
	h.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		r, err := h.svc.Get(context.Background(), id)
		if err != nil {
			h.t.Fatal(err)
		}
		if r.State != StateQueued && r.State != StateRunning {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, _ := h.svc.Get(context.Background(), id)
	h.t.Fatalf("run %s did not finish: %s", id, mustJSON(r))
	return Run{}
}

func (h *harness) create(req CreateRequest) Run {
	h.t.Helper()
	r, err := h.svc.Create(context.Background(), req)
	if err != nil {
		h.t.Fatalf("create: %v", err)
	}
	return r
}

// gitRepo creates a throwaway repository with files committed.
func gitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "--quiet", "-b", "main")
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "--all")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "initial")
	return dir
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func readPid(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// alive reports whether pid is a live process (a zombie counts as dead:
// it has exited and only waits to be reaped by its parent).
func alive(pid int) bool {
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := strings.LastIndexByte(string(data), ')'); i > 0 && i+2 < len(data) {
			return data[i+2] != 'Z'
		}
	}
	return syscall.Kill(pid, 0) == nil
}

func waitFile(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if readPid(path) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// factoryYAML writes checks as a .factory.yaml body.
func checksYAML(runs ...string) string {
	var b strings.Builder
	b.WriteString("verify:\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "  - run: %q\n", r)
	}
	return b.String()
}
