//go:build !windows

package platform_test

import (
	"encoding/json"
	"fmt"
	"github.com/agentbridge/bridge/platform/platformtest"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/engine"
)

// Chaos test: a daemon process is killed with SIGKILL at random points
// while 100 runs with waits, signals, worker tasks of an unsafe action and
// incidents are in flight. Every run must reach the state it reaches
// without the kills, and the unsafe step is never performed twice without
// an incident.

const (
	chaosDirEnv  = "PLATFORM_CHAOS_DIR"
	chaosPortEnv = "PLATFORM_CHAOS_PORT"
	chaosJWKSEnv = "PLATFORM_CHAOS_JWKS"
	// chaosClockEnv names a file holding the daemon's fake time (RFC
	// 3339), read at every tick (schedule tests).
	chaosClockEnv = "PLATFORM_CHAOS_CLOCK"
	chaosRuns     = 100
)

const (
	chargeAction = `kind: action
id: chaos/charge
version: 1
sideEffect: unsafe
input:
  type: object
  required: [n]
  properties:
    n: {type: integer}
output:
  type: object
  required: [receipt]
  properties:
    receipt: {type: string}
timeout: 1h
worker: billing
`
	chaosWorkflow = `kind: workflow
id: chaos/order
version: 1
input:
  type: object
  required: [n, pause]
  properties:
    n: {type: integer}
    pause: {type: string}
output:
  type: object
  properties:
    charged: {type: string}
    approver: {type: string}
steps:
  - id: greet
    action: acme/greet@1
    with:
      name: =string(input.n)
  - id: hold
    wait: =input.pause
  - id: approval
    signal: approve
    schema:
      type: object
      required: [by]
      properties:
        by: {type: string}
  - id: charge
    action: chaos/charge@1
    with:
      n: =input.n
  - id: done
    succeed:
      result:
        charged: =steps.charge.output.receipt
        approver: =steps.approval.output.by
`
)

// TestChaosChildDaemon is the daemon process of TestSigkillRunsReachTheirFinalState.
// Run directly it does nothing.
func TestChaosChildDaemon(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(chaosDirEnv)
	if dir == "" {
		t.Skip("daemon process of TestSigkillRunsReachTheirFinalState")
	}
	port, _ := strconv.Atoi(os.Getenv(chaosPortEnv))
	h := &harness{t: t, dir: dir, port: port, env: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second},
		ext: &extIdP{srv: &httptest.Server{URL: os.Getenv(chaosJWKSEnv)}}}
	if f := os.Getenv(chaosClockEnv); f != "" {
		h.now = func() time.Time { return readClock(t, f) }
	}
	h.start()
	ws, _ := json.Marshal(h.ws)
	tmp := filepath.Join(dir, "ws.tmp")
	if err := os.WriteFile(tmp, ws, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "ws.json")); err != nil {
		t.Fatal(err)
	}
	select {}
}

// chaosDaemon runs and kills the daemon process.
type chaosDaemon struct {
	t    *testing.T
	dir  string
	port int
	jwks string
	env  []string // more environment of the daemon process
	cmd  *exec.Cmd
}

func (c *chaosDaemon) start() {
	c.t.Helper()
	_ = os.Remove(filepath.Join(c.dir, "ws.json"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestChaosChildDaemon$")
	cmd.Env = append(os.Environ(), chaosDirEnv+"="+c.dir, chaosPortEnv+"="+strconv.Itoa(c.port), chaosJWKSEnv+"="+c.jwks)
	cmd.Env = append(cmd.Env, c.env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(c.dir, "ws.json")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("the daemon process did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// client is a harness that calls the daemon process.
func (c *chaosDaemon) client(ext *extIdP) *harness {
	t := c.t
	h := &harness{t: t, dir: c.dir, ext: ext, base: "http://127.0.0.1:" + strconv.Itoa(c.port), env: map[string]string{},
		hc: &http.Client{Timeout: 10 * time.Second}}
	raw, err := os.ReadFile(filepath.Join(c.dir, "ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &h.ws); err != nil {
		t.Fatal(err)
	}
	if h.owner, err = daemon.ReadOwnerToken(filepath.Join(c.dir, daemon.OwnerTokenFile)); err != nil {
		t.Fatal(err)
	}
	return h
}

func (c *chaosDaemon) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
}

// chaosClient calls the daemon, retrying a request that got no answer
// (the daemon was killed) with the same body and key.
type chaosClient struct {
	h *harness
}

func (c chaosClient) do(r req) resp {
	for i := 0; ; i++ {
		out, err := c.try(r)
		if err == nil {
			return out
		}
		if i > 3000 {
			c.h.t.Errorf("%s %s: no answer: %v", r.method, r.path, err)
			return resp{}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c chaosClient) try(r req) (resp, error) {
	out, err := c.h.doRaw(r)
	if err == nil && out.status >= 500 {
		// Answered by a daemon going down, before the commit.
		err = fmt.Errorf("status %d: %s", out.status, out.body)
	}
	return out, err
}

func TestSigkillRunsReachTheirFinalState(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns daemon processes")
	}
	ext := newExtIdP(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	d := &chaosDaemon{t: t, dir: t.TempDir(), port: port, jwks: ext.srv.URL}
	d.start()
	defer func() { d.kill() }()

	h := d.client(ext)
	op := h.localToken()
	h.grant(h.link("worker", "chaos-worker"), h.localScope(), "worker")
	worker := ext.token(t, "chaos-worker", nil)
	h.mustPublish(op, "actions", platformtest.GreetAction, "chaos-greet")
	h.mustPublish(op, "actions", chargeAction, "chaos-charge")
	wf := h.mustPublish(op, "workflows", chaosWorkflow, "chaos-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "chaos-activation", "").ID
	c := chaosClient{h: h}
	e := ePath(h)

	// The killer: SIGKILL at random points, restarting at once.
	stop := make(chan struct{})
	var kills sync.WaitGroup
	var killed atomic.Int32
	kills.Add(1)
	go func() {
		defer kills.Done()
		for i := 0; i < 4; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(150+rand.IntN(350)) * time.Millisecond):
			}
			d.kill()
			killed.Add(1)
			d.start()
		}
	}()

	// Start the runs and send each its signal (buffered until the run
	// reaches its signal step).
	runs := make([]string, chaosRuns)
	for i := range runs {
		in := map[string]any{"n": i, "pause": fmt.Sprintf("%dms", 100+rand.IntN(1500))}
		r := c.do(req{method: "POST", path: e + "/runs", token: op, hdr: map[string]string{"Idempotency-Key": fmt.Sprintf("chaos-%d", i)},
			body: map[string]any{"activation_id": act, "input": in}})
		if r.status != 201 {
			t.Fatalf("start %d: %d %s", i, r.status, r.body)
		}
		var run engine.Run
		r.json(t, &run)
		runs[i] = run.ID
		s := c.do(req{method: "POST", path: e + "/runs/" + run.ID + "/signals", token: op, hdr: map[string]string{"Idempotency-Key": "sig-" + run.ID},
			body: map[string]any{"name": "approve", "payload": map[string]any{"by": "op"}}})
		if s.status != 202 {
			t.Fatalf("signal %d: %d %s", i, s.status, s.body)
		}
	}

	// The worker performs the unsafe charge (counting executions per
	// operation key); the operator resolves incidents with the reconciled
	// result. Every 10th run's first attempt fails without retry, which
	// opens an incident.
	executed := map[string]int{}
	failed := map[int]bool{}
	resolved := map[string]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ended := 0
		for _, id := range runs {
			var run engine.Run
			r := c.do(req{method: "GET", path: e + "/runs/" + id, token: op})
			r.json(t, &run)
			if run.Status == "succeeded" || run.Status == "failed" || run.Status == "cancelled" || run.Status == "timed_out" {
				ended++
			}
		}
		if ended == chaosRuns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended", ended, chaosRuns)
		}
		r := c.do(req{method: "POST", path: e + "/tasks/claim", token: worker,
			body: map[string]any{"worker_id": "w1", "queues": []string{"billing"}, "max_tasks": 100, "lease_seconds": 5}})
		var claimed engine.ClaimResponse
		if r.status == 200 {
			r.json(t, &claimed)
		}
		for _, task := range claimed.Tasks {
			var in struct{ N int }
			_ = json.Unmarshal(task.Input, &in)
			body := map[string]any{"task_id": task.ID, "worker_id": "w1", "output": map[string]any{"receipt": fmt.Sprintf("r-%d", in.N)}}
			path := "/complete"
			if in.N%10 == 0 && !failed[in.N] {
				failed[in.N] = true
				path, body = "/fail", map[string]any{"task_id": task.ID, "worker_id": "w1", "error": map[string]any{"code": "CARD_DECLINED"}, "retryable": false}
			} else {
				executed[task.OperationKey]++
			}
			c.do(req{method: "POST", path: e + "/tasks" + path, token: worker, body: body})
		}
		var incidents api_page[engine.Incident]
		c.do(req{method: "GET", path: e + "/incidents?status=active&limit=100", token: op}).json(t, &incidents)
		for _, inc := range incidents.Items {
			if resolved[inc.ID] {
				continue
			}
			var run engine.Run
			c.do(req{method: "GET", path: e + "/runs/" + inc.RunID, token: op}).json(t, &run)
			var in struct{ N int }
			_ = json.Unmarshal(run.State.Input, &in)
			rr := c.do(req{method: "POST", path: e + "/incidents/" + inc.ID + "/resolve", token: op,
				hdr: map[string]string{"If-Match": strconv.Quote(strconv.Itoa(inc.Revision))},
				body: map[string]any{"receipt_id": uuid.NewSHA1(uuid.NameSpaceOID, []byte(inc.ID)).String(), "kind": "accept_reconciled_result",
					"reason": "reconciled by the chaos test", "evidence_reference": "ledger", "output": map[string]any{"receipt": fmt.Sprintf("r-%d", in.N)}}})
			if rr.status == 200 {
				resolved[inc.ID] = true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	kills.Wait()

	for i, id := range runs {
		var run engine.Run
		c.do(req{method: "GET", path: e + "/runs/" + id, token: op}).json(t, &run)
		want := fmt.Sprintf(`{"approver":"op","charged":"r-%d"}`, i)
		if run.Status != "succeeded" || string(run.State.Output) != want {
			t.Errorf("run %d (%s): %s %s, want succeeded %s", i, id, run.Status, run.State.Output, want)
		}
		// The recorded history reproduces the stored state.
		var rep engine.ReplayReport
		c.do(req{method: "GET", path: e + "/runs/" + id + "/replay", token: op}).json(t, &rep)
		if rep.Verdict != "consistent" {
			t.Errorf("run %d (%s): replay %+v", i, id, rep)
		}
	}
	t.Logf("%d kills, %d incidents resolved, %d charges performed", killed.Load(), len(resolved), len(executed))
	if killed.Load() == 0 {
		t.Error("the daemon was never killed")
	}
	for key, n := range executed {
		if n > 1 {
			t.Errorf("the unsafe charge with operation key %s ran %d times", key, n)
		}
	}
}

// api_page is a page of items.
type api_page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}
