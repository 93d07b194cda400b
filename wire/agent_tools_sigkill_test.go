//go:build unix

package wire_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
)

// An unsafe tool whose call is in flight when the daemon is SIGKILLed: the
// next daemon reports the call's outcome as unknown (task_outcome_unknown
// in the run's history) and never calls the action again by itself.

const chargeWorkflow = `kind: workflow
id: acme/charge
version: 1
input:
  type: object
  required: [ask]
  properties:
    ask: {type: string}
steps:
  - id: pay
    agent:
      provider: claude
      prompt: =input.ask
      tools: [acme/pay.charge@1]
    timeout: 1m
`

func chargeAction(base string) string {
	return fmt.Sprintf(`kind: action
id: acme/pay.charge
version: 1
sideEffect: unsafe
timeout: 30s
input:
  type: object
  required: [amount]
  properties:
    amount: {type: integer}
connector: http
config:
  method: POST
  url: ='%s/charges'
  body: {amount: =input.amount}
`, base)
}

const (
	crashDirEnv   = "WIRE_TOOL_CRASH_DIR"
	crashAgentEnv = "WIRE_TOOL_CRASH_AGENT"
	crashURLEnv   = "WIRE_TOOL_CRASH_URL"
)

// TestAgentToolCrashChild is the daemon the test below kills: it starts
// the run and reports it, then waits to be killed.
func TestAgentToolCrashChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process of TestAgentToolCallSurvivesSIGKILL")
	}
	e := &daemonEnv{t: t, dir: dir, hc: &http.Client{Timeout: 30 * time.Second}}
	e.yaml = crashYAML(os.Getenv(crashAgentEnv))
	e.start()
	op := e.operator()
	e.must(201, e.do("POST", e.projectURL()+"/actions", op, map[string]string{"source": chargeAction(os.Getenv(crashURLEnv)), "format": "yaml"},
		"Idempotency-Key", "action-charge"))
	e.publish(chargeWorkflow, true)
	app := e.token("app", "read,workflows")
	started := e.must(202, e.startRun(app, map[string]any{"templateId": "acme/charge",
		"inputs": map[string]string{"ask": `#mcp-call:acme_pay_charge_1:{"amount":5}`}}))
	fmt.Printf("ready %s %s\n", started["id"], app)
	time.Sleep(time.Minute)
}

func crashYAML(agent string) string {
	return fmt.Sprintf("bridge:\n  inactivity-timeout: 60s\n  profiles:\n    default: {provider: echo}\n    claude: {provider: claude, command: %q}\n", agent)
}

func TestAgentToolCallSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	var hits atomic.Int32
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		arrived <- struct{}{}
		select { // the charge hangs until the daemon is gone
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defer close(release)
	dir := t.TempDir()
	claude, _ := providertest.BuildFakeAgent(t, t.TempDir())

	cmd := exec.Command(os.Args[0], "-test.run=TestAgentToolCrashChild$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashAgentEnv+"="+claude, crashURLEnv+"="+srv.URL)
	out, err := cmd.StdoutPipe()
	is.NoErr(err)
	cmd.Stderr = os.Stderr
	is.NoErr(cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	is.NoErr(err)
	fields := strings.Fields(line)
	is.Equal(len(fields), 3)
	is.Equal(fields[0], "ready")
	runID, app := fields[1], fields[2]
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the tool's action was never called")
	}
	is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	e := &daemonEnv{t: t, dir: dir, hc: &http.Client{Timeout: 30 * time.Second}, yaml: crashYAML(claude)}
	e.start()
	run := e.waitRun(app, runID, "suspended")
	// The run is suspended by the first unknown outcome recorded; the
	// other is recorded by a later write, so the history is read until it
	// holds both (or for 30 s).
	var hist string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		hist = asJSON(t, e.must(200, e.do("GET", e.projectURL()+"/environments/"+e.ws.EnvironmentID+"/runs/"+run["platformRunId"].(string)+"/history",
			e.operator(), nil)))
		if strings.Count(hist, `"kind":"task_outcome_unknown","records"`) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	is.True(strings.Contains(hist, `"agent_tool_called"`))
	// Both the tool call and the agent job were in flight.
	is.Equal(strings.Count(hist, `"kind":"task_outcome_unknown","records"`), 2)
	is.True(strings.Contains(hist, "of acme/pay.charge@1 failed: OUTCOME_UNKNOWN"))
	time.Sleep(300 * time.Millisecond)
	is.Equal(hits.Load(), int32(1)) // never called again
}
