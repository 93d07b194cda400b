package platform_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
)

// exampleCollections maps a definition kind to its catalog collection.
var exampleCollections = map[string]string{"action": "actions", "workflow": "workflows", "decisionTable": "decision-tables"}

// publishExample publishes every definition of examples/fulfil-order in
// file order and answers the activation of acme/fulfil-order.
func publishExample(h *harness, op string) string {
	h.t.Helper()
	dir := filepath.Join("..", "examples", "fulfil-order")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		h.t.Fatalf("example definitions: %v", err)
	}
	sort.Strings(files)
	var workflow string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			h.t.Fatal(err)
		}
		var head struct{ Kind string }
		if err := yamlKind(src, &head.Kind); err != nil {
			h.t.Fatal(err)
		}
		v := h.mustPublish(op, exampleCollections[head.Kind], string(src), "example-"+filepath.Base(f))
		workflow = v.ID // the last file is the order workflow
	}
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": workflow}, "example-activation", "").ID
}

// yamlKind reads the kind: line of a definition.
func yamlKind(src []byte, kind *string) error {
	for line := range strings.Lines(string(src)) {
		if k, ok := strings.CutPrefix(strings.TrimSpace(line), "kind: "); ok {
			*kind = k
			return nil
		}
	}
	return os.ErrNotExist
}

// waitFor polls cond for 20 s at most.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestExampleOrderWalkthrough is the README's walkthrough: the complete
// example of the language reference, published from examples/, runs
// through a human approval, an incident resolved by an operator and a
// signal to its end.
func TestExampleOrderWalkthrough(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := publishExample(h, op)
	order, err := os.ReadFile(filepath.Join("..", "examples", "fulfil-order", "order.json"))
	is.NoErr(err)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": json.RawMessage(order)}, "example-run")
	e := ePath(h)

	// The approval waits for a person.
	var tasks struct{ Items []engine.HumanTask }
	h.waitFor("the approval task", func() bool {
		h.must(200, h.get(e+"/human-tasks?run_id="+run.ID, op), &tasks)
		return len(tasks.Items) == 1
	})
	task := tasks.Items[0]
	is.Equal(task.Title, "Approve order A-1001")
	is.Equal(task.Decisions, []string{"approve", "cancel"})
	key := map[string]string{"Idempotency-Key": "approve-" + task.ID}
	h.must(200, h.do(req{method: "POST", path: e + "/human-tasks/" + task.ID + "/claim", token: op, hdr: key, body: map[string]any{}}), nil)
	h.must(200, h.do(req{method: "POST", path: e + "/human-tasks/" + task.ID + "/complete", token: op, hdr: key,
		body: map[string]any{"decision": "approve", "data": map[string]any{"note": "fine"}}}), nil)

	// The charge fails twice (nothing listens on the payment URL): an
	// incident; the operator accepts the result reconciled with the bank.
	var incidents struct{ Items []engine.Incident }
	h.waitFor("the charge incident", func() bool {
		h.must(200, h.get(e+"/incidents?status=active", op), &incidents)
		return len(incidents.Items) == 1
	})
	inc := incidents.Items[0]
	is.Equal(inc.Code, "PF-TASK-RETRIES-EXHAUSTED")
	is.Equal(inc.NodeID, "charge")
	h.must(200, h.resolveIncident(op, inc.ID, strconv.Quote(strconv.Itoa(inc.Revision)), map[string]any{
		"receipt_id": uuid.NewString(), "kind": "accept_reconciled_result", "reason": "charged by phone",
		"evidence_reference": "bank statement 2026-11", "output": map[string]any{"chargeId": "ch_manual_1"}}), nil)

	// The parcel ships.
	h.waitFor("the shipping signal step", func() bool { return stepStarted(h, run.ID, "shipped") })
	h.must(202, h.signalRun(op, run.ID, map[string]any{"name": "parcel.shipped", "payload": map[string]any{"trackingId": "1Z999"}}, "shipped"), nil)
	done := h.waitRun(op, run.ID, "succeeded")
	is.Equal(string(done.State.Output), `{"chargeId":"ch_manual_1","status":"shipped"}`)
	// The card token is secret: redacted in the run view.
	var in map[string]any
	is.NoErr(json.Unmarshal(done.State.Input, &in))
	is.Equal(in["cardToken"], "[redacted]")
}
