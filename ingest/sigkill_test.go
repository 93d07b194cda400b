//go:build !windows

package ingest

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
)

const childEnv = "INGEST_SIGKILL_CHILD_DIR"

// TestSigkillChildHelper is the child process of TestSigkillAfterAck: it
// serves the ingestion endpoint over the data directory in childEnv until
// it is killed. Run directly it does nothing.
func TestSigkillChildHelper(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("helper process for TestSigkillAfterAck")
	}
	db := openDB(t, filepath.Join(dir, "bridge.db"))
	_, b := openBroker(t, filepath.Join(dir, "events.bolt"))
	svc, err := New(daemon.Deps{DataDir: dir, DB: db, Broker: b, Config: config.Empty()})
	if err != nil {
		t.Fatal(err)
	}
	router := httprouter.New()
	svc.Routes(router)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Publish the address atomically: the parent polls for the file.
	tmp := filepath.Join(dir, "addr.tmp")
	if err := os.WriteFile(tmp, []byte(ln.Addr().String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "addr")); err != nil {
		t.Fatal(err)
	}
	_ = http.Serve(ln, httpx.WithRequestID("X-Request-ID", router))
}

// An acknowledged webhook survives SIGKILL of the process right after the
// acknowledgment: on reopening, every acknowledged event is on its topic
// and the processor verifies it.
func TestSigkillAfterAck(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSigkillChildHelper$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	}()
	var addr []byte
	waitFor(t, "child address", func() bool {
		var err error
		addr, err = os.ReadFile(filepath.Join(dir, "addr"))
		return err == nil
	})
	body := []byte(`{"action":"opened"}`)
	var acked []string
	for i := range 20 {
		req, _ := http.NewRequest(http.MethodPost, "http://"+string(addr)+"/api/v1/webhook/github", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", jsonCT)
		req.Header.Set("X-GitHub-Delivery", "kill-"+string(rune('a'+i)))
		req.Header.Set("X-Hub-Signature-256", githubSig(testSecret, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, readAck(t, resp).EventID)
	}
	// Kill the moment the last acknowledgment is read.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()

	// Reopen as a restarted daemon would, with a processor configured.
	db := openDB(t, filepath.Join(dir, "bridge.db"))
	bdb, b := openBroker(t, filepath.Join(dir, "events.bolt"))
	msgs, err := b.Read(context.Background(), "github", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	onTopic := map[string]bool{}
	for _, m := range msgs {
		onTopic[m.Headers[hID]] = true
	}
	for _, id := range acked {
		if !onTopic[id] {
			t.Fatalf("acknowledged event %s lost after SIGKILL", id)
		}
	}
	f := mustParse(t, processorsYAML, map[string]string{"STRIPE_SECRET": "s"})
	svc, err := New(daemon.Deps{DataDir: dir, DB: db, Broker: b, Config: f})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, svc: svc}
	for _, id := range acked {
		if rec := h.record(id); rec.Status != StatusVerified {
			t.Fatalf("event %s: %+v", id, rec)
		}
	}
	cancel()
	svc.Close()
	b.Close()
	bdb.Close()
	db.Close()
}
