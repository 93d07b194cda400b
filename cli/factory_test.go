package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/factory"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store"
)

// startFactoryDaemon serves the factory like a running daemon, with a
// command profile "sh-agent" that appends a line to NOTES.md.
func startFactoryDaemon(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, daemon.DatabaseFile), factory.Migrations(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := daemon.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, daemon.OwnerTokenFile), []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("config.yaml", []byte("bridge:\n  profiles:\n    sh-agent:\n      provider: command\n      command: sh\n      args: [\"-c\", \"echo 'agent was here' >> NOTES.md\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.LookupEnv = func(string) (string, bool) { return "", false }
	svc, err := factory.New(daemon.Deps{DataDir: dir, DB: db, Config: cfg, IsOwner: func(r *http.Request) bool {
		got, ok := daemon.BearerToken(r)
		return ok && got == tok
	}}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r := httprouter.New()
	r.GET("/health/ready", func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	svc.Routes(r)
	srv := httptest.NewServer(r)
	st, _ := json.Marshal(daemon.State{PID: os.Getpid(), ServicesURL: srv.URL, BridgeURL: srv.URL, DataDir: dir, StartedAt: time.Now()})
	if err := daemon.WriteFileAtomic(filepath.Join(dir, daemon.DaemonFile), st, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		db.Close()
	})
	return dir
}

func factoryRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	is.New(t).NoErr(os.MkdirAll(repo, 0o755))
	is.New(t).NoErr(os.WriteFile(filepath.Join(repo, "Makefile"), []byte("test:\n\ttest -f README.md\n"), 0o644))
	is.New(t).NoErr(os.WriteFile(filepath.Join(repo, "README.md"), []byte("# demo\n"), 0o644))
	for _, args := range [][]string{{"init", "--quiet"}, {"add", "--all"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return repo
}

func TestFactoryCLI(t *testing.T) {
	is := is.New(t)
	dir := startFactoryDaemon(t)
	repo := factoryRepo(t)
	ctx := context.Background()

	// A build run followed to its end: progress on stderr, summary on stdout.
	code, out, errOut := run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--profile", "sh-agent", "add notes")
	is.Equal(code, ExitOK)
	is.True(strings.Contains(errOut, "queued"))
	is.True(strings.Contains(out, "state       succeeded"))
	is.True(strings.Contains(out, "  pass make test (exit 0"))
	is.True(strings.Contains(out, "changed     NOTES.md"))

	code, out, _ = run(ctx, "factory", "list", "--data-dir", dir, "--json")
	is.Equal(code, ExitOK)
	var page factory.RunPage
	is.NoErr(json.Unmarshal([]byte(out), &page))
	is.Equal(len(page.Runs), 1)
	id := page.Runs[0].ID

	code, out, _ = run(ctx, "factory", "diff", "--data-dir", dir, id)
	is.Equal(code, ExitOK)
	is.True(strings.Contains(out, "+agent was here"))

	code, out, _ = run(ctx, "factory", "journal", "--data-dir", dir, id)
	is.Equal(code, ExitOK)
	is.True(strings.Contains(out, "valid: true"))

	code, out, _ = run(ctx, "factory", "plan", "--data-dir", dir, id)
	is.Equal(code, ExitOK)
	is.True(strings.Contains(out, "check   make test (make)"))

	code, out, _ = run(ctx, "factory", "verify-log", "--data-dir", dir, id)
	is.Equal(code, ExitOK)
	is.True(strings.Contains(out, "=== attempt 1, pass: make test (exit 0)"))

	zipPath := filepath.Join(t.TempDir(), "c.zip")
	code, _, _ = run(ctx, "factory", "export", "--data-dir", dir, id, "-o", zipPath)
	is.Equal(code, ExitOK)
	data, err := os.ReadFile(zipPath)
	is.NoErr(err)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	is.NoErr(err)
	is.Equal(zr.File[1].Name, "files/NOTES.md")
	code, _, errOut = run(ctx, "factory", "export", "--data-dir", dir, id, "-o", zipPath)
	is.Equal(code, ExitError) // never overwritten
	is.True(strings.Contains(errOut, "exists"))

	// A failing test run exits 1; errors of the API are shown.
	code, out, _ = run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--mode", "test", "--verify", "false")
	is.Equal(code, ExitError)
	is.True(strings.Contains(out, "verification_failed"))
	code, _, errOut = run(ctx, "factory", "cancel", "--data-dir", dir, id)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errOut, "FA-CONFLICT"))
	code, _, errOut = run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--mode", "test", "--repairs", "4")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errOut, "repair_attempts"))
	code, _, _ = run(ctx, "factory", "reconcile", "--data-dir", dir, id)
	is.Equal(code, ExitUsage)
	code, _, errOut = run(ctx, "factory", "resume", "--data-dir", dir, id)
	is.Equal(code, ExitError) // a succeeded run is not resumed
	is.True(strings.Contains(errOut, "FA-CONFLICT"))
	code, _, _ = run(ctx, "factory", "handoff", "--data-dir", dir, id)
	is.Equal(code, ExitUsage)

	// --detach --json returns the queued run at once.
	code, out, _ = run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--mode", "test", "--detach", "--json")
	is.Equal(code, ExitOK)
	var queued factory.Run
	is.NoErr(json.Unmarshal([]byte(out), &queued))
	is.True(queued.ID != "")
	code, out, _ = run(ctx, "factory", "show", "--data-dir", dir, queued.ID)
	is.Equal(code, ExitOK)
	is.True(strings.Contains(out, queued.ID))

	// --project binds the run to a platform project (TENANT_ID/PROJECT_ID).
	const tenant, project = "01a20cb4-9019-7c28-ad25-c7986c2a3c22", "01a20cb4-9e56-75ff-b041-26cda00e90de"
	code, out, _ = run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--mode", "test", "--detach", "--json", "--project", tenant+"/"+project)
	is.Equal(code, ExitOK)
	var bound factory.Run
	is.NoErr(json.Unmarshal([]byte(out), &bound))
	is.Equal(bound.Project, &factory.Project{Tenant: tenant, Project: project})
	for _, bad := range []string{"only-one", "/" + project, tenant + "/", tenant + "/" + project + "/x"} {
		code, _, errOut = run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--mode", "test", "--project", bad)
		is.Equal(code, ExitUsage)
		is.True(strings.Contains(errOut, "TENANT_ID/PROJECT_ID"))
	}
	code, _, errOut = run(ctx, "factory", "run", "--data-dir", dir, "--repo", repo, "--mode", "test", "--project", "acme/payments")
	is.Equal(code, ExitError) // the daemon wants the platform's ids
	is.True(strings.Contains(errOut, "FA-VALIDATION"))
}
