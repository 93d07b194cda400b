package platform_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/file"
	"github.com/agentbridge/bridge/platform/kernel"
)

// humanFiles posts to E/human-tasks/{task}/files/<verb>.
func (h *harness) humanFiles(tok, task, verb string, body any) resp {
	h.t.Helper()
	return h.post(ePath(h)+"/human-tasks/"+task+"/files/"+verb, tok, body)
}

func (h *harness) humanChunk(tok, task, id string, index int, data []byte) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: fmt.Sprintf("%s/human-tasks/%s/files/chunk?file_id=%s&index=%d", ePath(h), task, id, index),
		token: tok, body: data, hdr: map[string]string{"Content-Type": "application/octet-stream"}})
}

func fileBody(name string, content []byte) map[string]any {
	return map[string]any{"name": name, "size": len(content), "sha256": digest(content), "chunk_size": 65536}
}

func TestHumanTaskFiles(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	r := newReviewers(t)
	h, op, olgaID, olga, pete := r.harness, r.op, r.olgaID, r.olga, r.pete
	E := ePath(h)
	run, task := h.humanTaskOf(op, r.act, "hf-start", map[string]any{"orderId": "o-1", "assignees": []string{"user:" + olgaID}})
	content := randomBytes(t, 100000) // chunks of 65536 and 34464

	// only who may complete the open task uploads: its assignee
	h.problem(409, kernel.CodeRuntimeState, h.humanFiles(pete, task.ID, "create", fileBody("scan.pdf", content)))
	_, viewer := h.user("vic", "viewer", h.envScope())
	h.problem(403, "PF-FORBIDDEN", h.humanFiles(viewer, task.ID, "create", fileBody("scan.pdf", content)))
	h.problem(403, "PF-FORBIDDEN", h.humanFiles(viewer, task.ID, "read", map[string]any{"file_id": task.ID}))
	h.problem(404, "PF-NOT-FOUND", h.humanFiles(olga, run.ID, "create", fileBody("scan.pdf", content)))
	h.problem(422, "PF-VALIDATION", h.humanFiles(olga, task.ID, "create", map[string]any{"name": "x"}))

	var f file.File
	h.must(201, h.humanFiles(olga, task.ID, "create", fileBody("scan.pdf", content)), &f)
	is.Equal(f.Origin, file.Origin{Kind: "human_task", ID: task.ID, RunID: run.ID})
	h.problem(409, kernel.CodeRuntimeState, h.humanChunk(pete, task.ID, f.ID, 0, content[:65536]))
	h.problem(422, "PF-VALIDATION", h.humanChunk(olga, task.ID, "nope", 0, content[:65536]))
	h.must(200, h.humanChunk(olga, task.ID, f.ID, 0, content[:65536]), nil)
	h.must(200, h.humanChunk(olga, task.ID, f.ID, 0, content[:65536]), nil) // replay
	h.problem(422, "PF-VALIDATION", h.humanChunk(olga, task.ID, f.ID, 2, content[65536:]))
	h.problem(409, file.CodeIncomplete, h.humanFiles(olga, task.ID, "finish", map[string]any{"file_id": f.ID}))
	h.must(200, h.humanChunk(olga, task.ID, f.ID, 1, content[65536:]), nil)
	// the upload continues only through its own task's routes
	h.problem(404, "PF-NOT-FOUND", h.post(E+"/files/"+f.ID+"/finish", op, nil))
	h.problem(422, "PF-VALIDATION", h.humanFiles(olga, task.ID, "finish", map[string]any{"file_id": "x"}))
	h.problem(422, "PF-VALIDATION", h.humanFiles(olga, task.ID, "finish", map[string]any{"file_id": f.ID, "more": 1}))
	h.must(200, h.humanFiles(olga, task.ID, "finish", map[string]any{"file_id": f.ID}), &f)
	is.Equal(f.Status, "ready")

	// readers of the task read its run's files; others are 404
	h.must(200, h.humanFiles(pete, task.ID, "read", map[string]any{"file_id": f.ID}), nil)
	d := h.humanFiles(pete, task.ID, "download", map[string]any{"file_id": f.ID})
	is.Equal(d.status, 200)
	is.True(bytes.Equal(d.body, content))
	d = h.do(req{method: "POST", path: E + "/human-tasks/" + task.ID + "/files/download", token: pete,
		body: map[string]any{"file_id": f.ID}, hdr: map[string]string{"Range": "bytes=0-99"}})
	is.Equal(d.status, 206)
	is.True(bytes.Equal(d.body, content[:100]))
	unrelated := h.uploadFile(op, "other", randomBytes(t, 10), 0)
	h.problem(404, "PF-NOT-FOUND", h.humanFiles(pete, task.ID, "read", map[string]any{"file_id": unrelated.ID}))
	h.problem(404, "PF-NOT-FOUND", h.humanFiles(pete, task.ID, "download", map[string]any{"file_id": unrelated.ID}))
	h.problem(404, "PF-NOT-FOUND", h.humanChunk(olga, task.ID, unrelated.ID, 0, []byte("x")))
	// the environment's routes see it too
	h.must(200, h.get(E+"/files/"+f.ID, op), nil)

	// another run's task does not read it
	_, task2 := h.humanTaskOf(op, r.act, "hf-start-2", map[string]any{"orderId": "o-2"})
	h.problem(404, "PF-NOT-FOUND", h.humanFiles(pete, task2.ID, "read", map[string]any{"file_id": f.ID}))

	// claimed by pete: olga no longer acts on it
	h.mustHuman(pete, task.ID, "claim", nil, "hf-claim")
	h.problem(409, kernel.CodeRuntimeState, h.humanFiles(olga, task.ID, "create", fileBody("b", content)))
	h.must(201, h.humanFiles(pete, task.ID, "create", fileBody("b", content)), nil)
	// completed: no uploads, reads go on
	h.mustHuman(pete, task.ID, "complete", map[string]any{"decision": "approve", "data": map[string]any{"comment": "ok"}}, "hf-done")
	h.problem(409, kernel.CodeRuntimeState, h.humanFiles(pete, task.ID, "create", fileBody("c", content)))
	h.must(200, h.humanFiles(olga, task.ID, "read", map[string]any{"file_id": f.ID}), nil)
}

// workerFiles posts to E/tasks/files/<verb>.
func (h *harness) workerFiles(tok, verb string, body map[string]any) resp {
	h.t.Helper()
	return h.post(ePath(h)+"/tasks/files/"+verb, tok, body)
}

func (h *harness) workerChunk(tok, task, worker, id string, index int, data []byte) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: fmt.Sprintf("%s/tasks/files/chunk?task_id=%s&worker_id=%s&file_id=%s&index=%d", ePath(h),
		task, worker, id, index), token: tok, body: data, hdr: map[string]string{"Content-Type": "application/octet-stream"}})
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestWorkerTaskFiles(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	fx := newWorkerFixture(t, "files-worker")
	h, op, w := fx.h, fx.op, fx.w
	run := fx.start(fx.charge, "wf-start", map[string]any{"amount": 5})
	task := h.claimOne(w, "w-1", "billing")
	content := randomBytes(t, 140000) // 3 chunks of 65536
	lease := map[string]any{"task_id": task.ID, "worker_id": "w-1"}

	// the lease holder only
	h.problem(403, "PF-FORBIDDEN", h.workerFiles(op, "create", with(lease, "name", "r.csv", "size", 1, "sha256", digest([]byte("x")))))
	w2 := h.workerToken("files-worker-2", wtEnv(h))
	create := with(fileBody("report.csv", content), "task_id", task.ID, "worker_id", "w-1")
	h.problem(409, kernel.CodeRuntimeState, h.workerFiles(w2, "create", create))
	h.problem(409, kernel.CodeRuntimeState, h.workerFiles(w, "create", with(create, "worker_id", "w-2")))
	h.problem(404, "PF-NOT-FOUND", h.workerFiles(w, "create", with(create, "task_id", run.ID)))
	h.problem(422, "PF-VALIDATION", h.workerFiles(w, "create", with(create, "task_id", "nope")))
	h.problem(422, "PF-VALIDATION", h.workerFiles(w, "create", with(create, "worker_id", "")))
	h.problem(422, "PF-VALIDATION", h.workerFiles(w, "create", with(create, "size", -1)))

	var f file.File
	h.must(201, h.workerFiles(w, "create", create), &f)
	is.Equal(f.Origin, file.Origin{Kind: "task", ID: task.ID, RunID: run.ID})
	h.problem(409, kernel.CodeRuntimeState, h.workerChunk(w, task.ID, "w-2", f.ID, 0, content[:65536]))
	h.problem(422, "PF-VALIDATION", h.workerChunk(w, "x", "w-1", f.ID, 0, content[:65536]))
	h.problem(422, "PF-VALIDATION", h.workerChunk(w, task.ID, "w-1", "x", 0, content[:65536]))
	for i := 0; i < 3; i++ {
		h.must(200, h.workerChunk(w, task.ID, "w-1", f.ID, i, content[i*65536:min((i+1)*65536, len(content))]), nil)
	}
	ref := with(lease, "file_id", f.ID)
	h.must(200, h.workerFiles(w, "finish", ref), &f)
	is.Equal(f.Status, "ready")
	h.must(200, h.workerFiles(w, "read", ref), nil)
	d := h.workerFiles(w, "download", ref)
	is.Equal(d.status, 200)
	is.True(bytes.Equal(d.body, content))
	is.Equal(d.header.Get("ETag"), `"`+digest(content)+`"`)
	h.problem(409, kernel.CodeRuntimeState, h.workerFiles(w2, "read", ref))
	h.problem(422, "PF-VALIDATION", h.workerFiles(w, "read", with(lease, "file_id", "x")))

	// files of other runs or of the environment alone are not the task's
	unrelated := h.uploadFile(op, "other", randomBytes(t, 10), 0)
	h.problem(404, "PF-NOT-FOUND", h.workerFiles(w, "read", with(lease, "file_id", unrelated.ID)))
	h.problem(404, "PF-NOT-FOUND", h.workerFiles(w, "download", with(lease, "file_id", unrelated.ID)))

	// the operator downloads the worker's report through E/files
	is.True(bytes.Equal(h.download(op, f.ID, nil).body, content))

	// once the task ended its routes refuse
	h.must(200, h.taskCall(w, "complete", complete(task.ID, "w-1", map[string]any{"receipt": "r-1"})), nil)
	h.problem(409, kernel.CodeRuntimeState, h.workerFiles(w, "read", ref))
	h.problem(409, kernel.CodeRuntimeState, h.workerFiles(w, "create", create))
}
