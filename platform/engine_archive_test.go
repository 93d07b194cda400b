package platform_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/platformtest"
)

// archiveOp posts one of archive, restore and purge.
func (h *harness) archiveOp(tok, id, verb string, body any, key string) resp {
	h.t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return h.do(req{method: "POST", path: ePath(h) + "/runs/" + id + "/" + verb, token: tok, body: body, hdr: hdr})
}

// setupThreeStep publishes and activates the benchmark's 3-step workflow.
func (h *harness) setupThreeStep(op string) string {
	h.t.Helper()
	h.mustPublish(op, "actions", platformtest.GreetAction, "a-greet")
	h.mustPublish(op, "actions", platformtest.NothingAction, "a-nothing")
	wf := h.mustPublish(op, "workflows", threeStepWorkflow, "a-three").ID
	return h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "a-act", "").ID
}

// countRows counts the rows of table that belong to run id.
func (h *harness) countRows(table, id string) int {
	h.t.Helper()
	var n int
	query := `SELECT count(*) FROM ` + table + ` WHERE run_id = ?`
	if table == "platform_run_logs" || table == "platform_run_events" {
		// Lines and events name their run by its run_key (migrations
		// 0037_run_keys, 0038_run_event_keys): the run's rows, and rows of
		// no run at all (a purged run's).
		query = `SELECT count(*) FROM ` + table + ` WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)
			OR run_key NOT IN (SELECT run_key FROM platform_runs WHERE run_key IS NOT NULL)`
	}
	if err := h.d.DB.Reader().QueryRow(query, id).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// listed answers whether GET E/runs with query lists run id, and the summary.
func (h *harness) listed(tok, query, id string) (engine.RunSummary, bool) {
	h.t.Helper()
	var page struct{ Items []engine.RunSummary }
	h.must(200, h.get(ePath(h)+"/runs?limit=100"+query, tok), &page)
	for _, s := range page.Items {
		if s.ID == id {
			return s, true
		}
	}
	return engine.RunSummary{}, false
}

// archivedMember answers the raw "archived" member of a run view (200), or
// of the item id of a run list ("" when absent), read from the body as
// sent so that an absent member is told from false.
func archivedMember(t *testing.T, r resp, id ...string) string {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var one map[string]json.RawMessage
	if len(id) == 0 {
		r.json(t, &one)
		return string(one["archived"])
	}
	var page struct{ Items []map[string]json.RawMessage }
	r.json(t, &page)
	for _, item := range page.Items {
		if string(item["id"]) == `"`+id[0]+`"` {
			return string(item["archived"])
		}
	}
	t.Fatalf("run %s is not listed: %s", id[0], r.body)
	return ""
}

func TestArchiveRestorePurgeRun(t *testing.T) {
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupThreeStep(op)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}}, "arc-run")
	h.waitRun(op, run.ID, "succeeded")
	E := ePath(h)
	history := h.get(E+"/runs/"+run.ID+"/history", op)
	logs := h.get(E+"/runs/"+run.ID+"/logs", op)
	steps := h.get(E+"/runs/"+run.ID+"/steps", op)
	is.Equal(history.status, 200)
	is.Equal(logs.status, 200)
	events, lines := h.countRows("platform_run_events", run.ID), h.countRows("platform_run_logs", run.ID)
	is.True(events >= 3 && lines >= 3)

	// Errors, each changing nothing.
	h.problem(422, "PF-IDEMPOTENCY", h.archiveOp(op, run.ID, "archive", map[string]any{}, ""))
	h.problem(422, "PF-IDEMPOTENCY", h.archiveOp(op, run.ID, "archive", map[string]any{}, strings.Repeat("k", 201)))
	h.problem(422, "PF-VALIDATION", h.archiveOp(op, run.ID, "archive", map[string]any{"reason": strings.Repeat("r", 2001)}, "arc-bad"))
	h.problem(422, "PF-VALIDATION", h.archiveOp(op, run.ID, "archive", map[string]any{"why": "x"}, "arc-bad2"))
	h.problem(422, "PF-VALIDATION", h.archiveOp(op, run.ID, "archive", []byte(`[1]`), "arc-bad3"))
	_, viewer := h.user("viewer-archive", "viewer", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.archiveOp(viewer, run.ID, "archive", map[string]any{}, "arc-viewer"))
	h.problem(404, "PF-NOT-FOUND", h.archiveOp(op, "5f0c1d2e-0000-4000-8000-000000000000", "archive", map[string]any{}, "arc-unknown"))
	h.problem(404, "PF-NOT-FOUND", h.archiveOp(op, "not-a-run", "archive", map[string]any{}, "arc-malformed"))
	other := h.envPath(h.ws.TenantID, h.ws.ProjectID, "5f0c1d2e-0000-4000-8000-000000000001")
	h.problem(404, "PF-NOT-FOUND", h.do(req{method: "POST", path: other + "/runs/" + run.ID + "/archive", token: op,
		body: map[string]any{}, hdr: map[string]string{"Idempotency-Key": "arc-env"}}))
	h.problem(409, "PF-RUNTIME-STATE", h.archiveOp(op, run.ID, "purge", map[string]any{}, "purge-live"))
	is.Equal(h.countRows("platform_run_events", run.ID), events)

	// A run that has not ended cannot be archived.
	waiting := h.startWaiting(op, h.setupApproval(op), "arc-waiting")
	h.problem(409, "PF-RUNTIME-STATE", h.archiveOp(op, waiting.ID, "archive", map[string]any{}, "arc-waiting"))

	// Archive: the history moves into one packed row.
	var a engine.RunArchive
	h.must(200, h.archiveOp(op, run.ID, "archive", map[string]any{"reason": strings.Repeat("r", 2000)}, strings.Repeat("k", 200)), &a)
	is.True(a.Archived && a.ArchivedAt != nil)
	is.Equal(a.Status, "succeeded")
	is.Equal(a.Events, events)
	is.Equal(a.Logs, lines)
	is.Equal(h.countRows("platform_run_events", run.ID), 0)
	is.Equal(h.countRows("platform_run_logs", run.ID), 0)
	is.Equal(h.countRows("platform_run_archives", run.ID), 1)
	// Same key and body: the committed answer; another body: 409.
	again := h.archiveOp(op, run.ID, "archive", map[string]any{"reason": strings.Repeat("r", 2000)}, strings.Repeat("k", 200))
	is.Equal(again.status, 200)
	var replayed engine.RunArchive
	again.json(t, &replayed)
	is.Equal(replayed, a)
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.archiveOp(op, run.ID, "archive", map[string]any{"reason": "other"}, strings.Repeat("k", 200)))
	// Archiving again with another key answers the archive unchanged.
	var twice engine.RunArchive
	h.must(200, h.archiveOp(op, run.ID, "archive", nil, "arc-2"), &twice)
	is.Equal(twice.ArchivedAt.UnixMilli(), a.ArchivedAt.UnixMilli())
	is.Equal(twice.Events, events)

	// The run stays readable; lists leave it out unless include_archived.
	// GET E/runs/{run} says archived as the list's summary does, and a
	// live run's view leaves the member out as its summary does.
	is.Equal(archivedMember(t, h.get(E+"/runs/"+run.ID, op)), "true")
	is.Equal(archivedMember(t, h.get(E+"/runs/"+waiting.ID, op)), "")
	is.Equal(archivedMember(t, h.get(E+"/runs?limit=100&include_archived=true", op), run.ID), "true")
	is.Equal(archivedMember(t, h.get(E+"/runs?limit=100", op), waiting.ID), "")
	_, ok := h.listed(op, "", run.ID)
	is.True(!ok)
	_, ok = h.listed(op, "&include_archived=false", run.ID)
	is.True(!ok)
	sum, ok := h.listed(op, "&include_archived=true", run.ID)
	is.True(ok && sum.Archived)
	w, ok := h.listed(op, "", waiting.ID)
	is.True(ok && !w.Archived)
	for _, p := range []string{"/history", "/logs", "/steps", "/replay"} {
		h.problem(409, "PF-RUNTIME-STATE", h.get(E+"/runs/"+run.ID+p, op))
	}

	// The archive survives a restart.
	h.restart(false)
	op = h.localToken()
	_, ok = h.listed(op, "&include_archived=true", run.ID)
	is.True(ok)
	h.problem(409, "PF-RUNTIME-STATE", h.get(E+"/runs/"+run.ID+"/history", op))

	// Restore: history, logs and steps come back as they were.
	var r engine.RunArchive
	h.must(200, h.archiveOp(op, run.ID, "restore", map[string]any{}, "restore-1"), &r)
	is.True(!r.Archived && r.ArchivedAt == nil)
	is.Equal(r.Events, events)
	is.Equal(r.Logs, lines)
	is.Equal(string(h.get(E+"/runs/"+run.ID+"/history", op).body), string(history.body))
	is.Equal(string(h.get(E+"/runs/"+run.ID+"/logs", op).body), string(logs.body))
	is.Equal(string(h.get(E+"/runs/"+run.ID+"/steps", op).body), string(steps.body))
	h.must(200, h.get(E+"/runs/"+run.ID+"/replay", op), nil)
	_, ok = h.listed(op, "", run.ID)
	is.True(ok)
	is.Equal(archivedMember(t, h.get(E+"/runs/"+run.ID, op)), "")
	is.Equal(h.countRows("platform_run_archives", run.ID), 0)
	// Restoring a live run answers it unchanged.
	h.must(200, h.archiveOp(op, run.ID, "restore", nil, "restore-2"), &r)
	is.True(!r.Archived && r.Events == 0)

	// A retry refers to its parent: the parent cannot be purged first.
	h.must(200, h.archiveOp(op, run.ID, "archive", nil, "arc-3"), nil)
	var retry engine.Run
	h.must(201, h.retryRun(op, run.ID, map[string]any{"activation_id": act, "input": map[string]any{"name": "bob"}}, "retry-1"), &retry)
	h.waitRun(op, retry.ID, "succeeded")
	h.problem(409, "PF-RUNTIME-STATE", h.archiveOp(op, run.ID, "purge", nil, "purge-parent"))
	h.must(200, h.archiveOp(op, retry.ID, "archive", nil, "arc-retry"), nil)
	var gone engine.RunPurged
	h.must(200, h.archiveOp(op, retry.ID, "purge", nil, "purge-retry"), &gone)
	is.Equal(gone, engine.RunPurged{RunID: retry.ID, Purged: true})
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/"+retry.ID, op))
	// Purge: the run and its rows are gone; the same key replays.
	h.must(200, h.archiveOp(op, run.ID, "purge", nil, "purge-1"), &gone)
	is.Equal(gone.RunID, run.ID)
	h.must(200, h.archiveOp(op, run.ID, "purge", nil, "purge-1"), &gone)
	h.problem(404, "PF-NOT-FOUND", h.archiveOp(op, run.ID, "purge", nil, "purge-2"))
	h.problem(404, "PF-NOT-FOUND", h.get(E+"/runs/"+run.ID, op))
	for _, table := range []string{"platform_run_events", "platform_run_logs", "platform_run_archives"} {
		is.Equal(h.countRows(table, run.ID), 0)
	}
	// The live run's events are still append-only.
	err := h.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM platform_run_events WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)`, waiting.ID)
		return err
	})
	is.True(err != nil && strings.Contains(err.Error(), "append-only"))
}

func TestRunRetentionPolicy(t *testing.T) {
	is := is.New(t)
	clock := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clock), withEnv("PLATFORM_RUNS_ARCHIVE_AFTER", "2h", "PLATFORM_RUNS_PURGE_AFTER", "P1D"))
	op := h.localToken()
	act := h.setupThreeStep(op)
	var ids []string
	for i := range 3 {
		run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}}, fmt.Sprint("pol-", i))
		h.waitRun(op, run.ID, "succeeded")
		ids = append(ids, run.ID)
	}
	waiting := h.startWaiting(op, h.setupApproval(op), "pol-waiting")
	advance := func(d time.Duration) {
		clock.Set(clock.Now().Add(d))
		h.opTok = ""
		op = h.localToken()
	}
	archived := func(id string) bool {
		s, ok := h.listed(op, "&include_archived=true", id)
		return ok && s.Archived
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within 10 s", what)
			}
		}
	}
	// Not before archive-after.
	advance(2*time.Hour - time.Minute)
	time.Sleep(500 * time.Millisecond)
	is.True(!archived(ids[0]))
	advance(2 * time.Minute)
	eventually("archiving", func() bool { return archived(ids[0]) && archived(ids[1]) && archived(ids[2]) })
	is.True(!archived(waiting.ID))
	is.Equal(h.countRows("platform_run_events", ids[0]), 0)
	// Kept across a restart, then purged purge-after later.
	h.restart(false)
	op = h.localToken()
	is.True(archived(ids[1]))
	advance(24*time.Hour + 2*time.Minute)
	eventually("purging", func() bool {
		return h.get(ePath(h)+"/runs/"+ids[2], op).status == 404 && h.get(ePath(h)+"/runs/"+ids[0], op).status == 404
	})
	h.must(200, h.get(ePath(h)+"/runs/"+waiting.ID, op), nil)
}

func TestRunRetentionConfig(t *testing.T) {
	is := is.New(t)
	c, err := loadConfig(t, "", nil)
	is.NoErr(err)
	is.Equal(c.Runs.ArchiveAfter.D(), platform.DefaultRunArchiveAfter)
	is.Equal(c.Runs.PurgeAfter.D(), time.Duration(0))
	c, err = loadConfig(t, "platform:\n  runs:\n    archive-after: 0\n    purge-after: 1h\n", nil)
	is.NoErr(err)
	is.Equal(c.Runs.ArchiveAfter.D(), time.Duration(0))
	is.Equal(c.Runs.PurgeAfter.D(), time.Hour)
	c, err = loadConfig(t, "", map[string]string{"PLATFORM_RUNS_ARCHIVE_AFTER": "P2D", "PLATFORM_RUNS_PURGE_AFTER": "2160h"})
	is.NoErr(err)
	is.Equal(c.Runs.ArchiveAfter.D(), 48*time.Hour)
	is.Equal(c.Runs.PurgeAfter.D(), 2160*time.Hour)
	for _, bad := range []string{"archive-after: 59m", "purge-after: 59m", "archive-after: -1h", "archive-after: soon", "keep: 1h"} {
		_, err := loadConfig(t, "platform:\n  runs:\n    "+bad+"\n", nil)
		is.True(err != nil) // each bad value is refused
	}
}
