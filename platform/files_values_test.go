package platform_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/file"
)

// scanWorkflow carries files: an invoice in the input, a scan a reviewer
// attaches to the human task, and a step that reads the scan's metadata.
const scanWorkflow = `kind: workflow
id: acme/scan-review
version: 1
input:
  type: object
  properties:
    invoice: {type: object, x-file: true}
output: {type: object}
steps:
  - id: review
    human:
      title: Attach the signed scan
      assignees: []
      form:
        type: object
        required: [scan]
        properties:
          scan: {type: object, x-file: true}
      decisions: [approve]
  - id: done
    succeed:
      result:
        scan: =steps.review.output.data.scan
        scanBytes: =steps.review.output.data.scan.size
        invoice: =input.invoice.name
`

func TestFileReferencesInRunValues(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clock := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clock))
	op := h.localToken()
	E := ePath(h)
	wf := h.mustPublish(op, "workflows", scanWorkflow, "scan-workflow").ID
	act := h.mustActivate(E, op, map[string]any{"published_version_id": wf}, "scan-activation", "").ID
	invoice := h.uploadFile(op, "invoice.pdf", randomBytes(t, 300), 0)
	start := func(tok, key string, input map[string]any) resp {
		return h.do(req{method: "POST", path: E + "/runs", token: tok, body: map[string]any{"activation_id": act, "input": input},
			hdr: map[string]string{"Idempotency-Key": key}})
	}

	// bad references change nothing
	p := h.problem(422, "PF-VALIDATION", start(op, "k1", map[string]any{"invoice": map[string]any{"file_id": "x"}}))
	is.Equal(p.Diagnostics[0].Path, "/input/invoice")
	h.problem(422, "PF-VALIDATION", start(op, "k2", map[string]any{"invoice": "nope"}))
	h.problem(422, "PF-VALIDATION", start(op, "k3", map[string]any{"invoice": map[string]any{"file_id": act}}))
	other := h.environment(h.ws.ProjectID, "other")
	E2 := h.envPath(h.ws.TenantID, h.ws.ProjectID, other.ID)
	var foreign file.File
	h.must(201, h.post(E2+"/files", op, map[string]any{"name": "f", "size": 0, "sha256": digest(nil)}), &foreign)
	h.must(200, h.post(E2+"/files/"+foreign.ID+"/finish", op, nil), nil)
	h.problem(422, "PF-VALIDATION", start(op, "k4", map[string]any{"invoice": map[string]any{"file_id": foreign.ID}}))
	// the starter must be able to read the file
	starterID, starter := h.user("sam", "", h.envScope())
	h.grant(starterID, h.envScope(), "", "run.start", "run.read")
	h.problem(403, "PF-FORBIDDEN", start(starter, "k5", map[string]any{"invoice": map[string]any{"file_id": invoice.ID}}))

	var run engine.Run
	h.must(201, start(op, "k6", map[string]any{"invoice": map[string]any{"file_id": invoice.ID}}), &run)
	var in map[string]map[string]any
	is.NoErr(json.Unmarshal(run.State.Input, &in))
	is.Equal(in["invoice"]["name"], "invoice.pdf")
	is.Equal(in["invoice"]["sha256"], invoice.SHA256)
	h.waitRun(op, run.ID, "waiting")
	var tasks humanPage
	h.must(200, h.get(E+"/human-tasks?run_id="+run.ID, op), &tasks)
	task := tasks.Items[0]
	// the task's people read the run's input file
	h.must(200, h.humanFiles(op, task.ID, "read", map[string]any{"file_id": invoice.ID}), nil)

	// the reviewer attaches a scan through the task and completes with it
	scanBytes := randomBytes(t, 70000)
	var scan file.File
	h.must(201, h.humanFiles(op, task.ID, "create", fileBody("scan.png", scanBytes)), &scan)
	h.must(200, h.humanChunk(op, task.ID, scan.ID, 0, scanBytes[:65536]), nil)
	h.must(200, h.humanChunk(op, task.ID, scan.ID, 1, scanBytes[65536:]), nil)
	h.must(200, h.humanFiles(op, task.ID, "finish", map[string]any{"file_id": scan.ID}), nil)
	h.problem(422, "PF-VALIDATION", h.humanDo(op, task.ID, "complete", map[string]any{"decision": "approve",
		"data": map[string]any{"scan": map[string]any{"file_id": foreign.ID}}}, "c0", ""))
	h.mustHuman(op, task.ID, "complete", map[string]any{"decision": "approve", "data": map[string]any{"scan": map[string]any{"file_id": scan.ID}}}, "c1")
	run = h.waitRun(op, run.ID, "succeeded")
	var out map[string]any
	is.NoErr(json.Unmarshal(run.State.Output, &out))
	is.Equal(out["scanBytes"], float64(70000))
	is.Equal(out["invoice"], "invoice.pdf")
	is.Equal(out["scan"].(map[string]any)["name"], "scan.png")

	// a file a live run refers to is kept after its deletion until the
	// run ends
	var run2 engine.Run
	h.must(201, start(op, "k7", map[string]any{"invoice": map[string]any{"file_id": invoice.ID}}), &run2)
	h.waitRun(op, run2.ID, "waiting")
	h.must(200, h.get(E+"/human-tasks?run_id="+run2.ID, op), &tasks)
	var del file.Deletion
	h.must(200, h.do(req{method: "DELETE", path: E + "/files/" + invoice.ID, token: op}), &del)
	is.Equal(del.RetainedForRuns, 1)
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/files/"+invoice.ID, op))
	d := h.humanFiles(op, tasks.Items[0].ID, "download", map[string]any{"file_id": invoice.ID})
	is.Equal(d.status, 200)
	// a new run can no longer refer to it
	h.problem(422, "PF-VALIDATION", start(op, "k8", map[string]any{"invoice": map[string]any{"file_id": invoice.ID}}))
	blob := filepath.Join(h.dir, "files", "blobs", invoice.SHA256[:2], invoice.SHA256)
	h.must(200, h.post(E+"/runs/"+run2.ID+"/cancel", op, map[string]any{"reason": "done"}), nil)
	clock.Set(clock.Now().Add(2 * time.Minute)) // the sweeper's next pass
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(blob); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted file was not reclaimed once its run ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A signal payload and a worker's output carry files too.
const (
	fileRenderAction = `kind: action
id: acme/render
version: 1
sideEffect: idempotent
input:
  type: object
  properties:
    source: {type: object, x-file: true}
output:
  type: object
  required: [pdf]
  properties:
    pdf: {type: object, x-file: true}
worker: render
`
	fileSignalWorkflow = `kind: workflow
id: acme/render-flow
version: 1
input: {type: object}
output: {type: object}
steps:
  - id: upload
    signal: source.ready
    schema:
      type: object
      required: [source]
      properties:
        source: {type: object, x-file: true}
  - id: render
    action: acme/render@1
    with:
      source: =steps.upload.output.source
  - id: done
    succeed:
      result:
        pdf: =steps.render.output.pdf.name
`
)

func TestFileReferencesInSignalsAndWorkerOutputs(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	E := ePath(h)
	h.mustPublish(op, "actions", fileRenderAction, "render-action")
	wf := h.mustPublish(op, "workflows", fileSignalWorkflow, "render-flow").ID
	act := h.mustActivate(E, op, map[string]any{"published_version_id": wf}, "render-activation", "").ID
	w := h.workerToken("renderer", wtEnv(h))
	run := h.mustStartRun(op, map[string]any{"activation_id": act}, "render-run")
	h.waitRun(op, run.ID, "waiting")
	source := h.uploadFile(op, "source.md", []byte("# Q3"), 0)

	// a signal's file must exist in the environment and be readable by the sender
	signal := func(tok string, payload any) resp {
		return h.post(E+"/runs/"+run.ID+"/signals", tok, map[string]any{"name": "source.ready", "payload": payload})
	}
	p := h.problem(422, "PF-VALIDATION", signal(op, map[string]any{"source": map[string]any{"file_id": "nope"}}))
	is.Equal(p.Diagnostics[0].Path, "/payload/source")
	h.problem(422, "PF-VALIDATION", signal(op, map[string]any{"source": map[string]any{"file_id": run.ID}}))
	senderID, sender := h.user("sid", "", h.envScope())
	h.grant(senderID, h.envScope(), "", "run.signal")
	h.problem(403, "PF-FORBIDDEN", signal(sender, map[string]any{"source": map[string]any{"file_id": source.ID}}))
	h.must(202, signal(op, map[string]any{"source": map[string]any{"file_id": source.ID}}), nil)

	// the worker reads the run's file and answers with a file of its own
	task := h.claimOne(w, "w-1", "render")
	var in map[string]map[string]any
	is.NoErr(json.Unmarshal(task.Input, &in))
	is.Equal(in["source"]["name"], "source.md")
	lease := map[string]any{"task_id": task.ID, "worker_id": "w-1"}
	d := h.workerFiles(w, "download", with(lease, "file_id", source.ID))
	is.Equal(string(d.body), "# Q3")
	pdf := []byte("%PDF-1.7 Q3")
	var out file.File
	h.must(201, h.workerFiles(w, "create", with(lease, "name", "q3.pdf", "size", len(pdf), "sha256", digest(pdf))), &out)
	h.must(200, h.workerChunk(w, task.ID, "w-1", out.ID, 0, pdf), nil)
	h.must(200, h.workerFiles(w, "finish", with(lease, "file_id", out.ID)), nil)
	// a file the worker may not read is refused, and the lease is kept
	other := h.uploadFile(op, "other.pdf", []byte("x"), 0)
	h.problem(403, "PF-FORBIDDEN", h.taskCall(w, "complete", complete(task.ID, "w-1", map[string]any{"pdf": map[string]any{"file_id": other.ID}})))
	h.must(200, h.taskCall(w, "complete", complete(task.ID, "w-1", map[string]any{"pdf": map[string]any{"file_id": out.ID}})), nil)
	run = h.waitRun(op, run.ID, "succeeded")
	var result map[string]any
	is.NoErr(json.Unmarshal(run.State.Output, &result))
	is.Equal(result["pdf"], "q3.pdf")
}
