package platform_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
	_ "modernc.org/sqlite"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store/secretbox"
)

// The secret values of the secrets workflow's run (engine_secrets_test.go).
var runSecrets = []string{"key-0001", "pass-0002", "pin-0003"}

// startSecrets publishes and activates the secrets workflow and starts a
// run of it, answered once it waits for its login signal.
func (h *harness) startSecrets(op, key string) engine.Run {
	h.t.Helper()
	h.mustPublish(op, "actions", tokenAction, "secrets-token")
	wf := h.mustPublish(op, "workflows", secretsWorkflow, "secrets-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "secrets-activation", "").ID
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"key": "key-0001"}}, key)
	h.waitRun(op, run.ID, "waiting")
	return run
}

// finishSecrets signals and reviews a run of the secrets workflow until it
// succeeds, and checks that it computed with the real values.
func (h *harness) finishSecrets(op, id string, signal bool) {
	h.t.Helper()
	if signal {
		h.must(202, h.signalRun(op, id, map[string]any{"name": "login", "payload": map[string]any{"password": "pass-0002"}}, ""), nil)
	}
	var page humanPage
	h.waitFor("the review task", func() bool {
		h.must(200, h.get(ePath(h)+"/human-tasks?run_id="+id, op), &page)
		return len(page.Items) == 1
	})
	h.mustHuman(op, page.Items[0].ID, "complete", map[string]any{"decision": "ok", "data": map[string]any{"pin": "pin-0003", "note": "fine"}}, "finish-"+id)
	done := h.waitRun(op, id, "succeeded")
	if got := string(done.State.Output); got != `{"note":"fine","real":true,"token":"[redacted]"}` {
		h.t.Fatalf("output %s", got)
	}
}

// filesHolding answers the files under dir that hold one of words.
func filesHolding(t *testing.T, dir string, words []string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, w := range words {
			if bytes.Contains(b, []byte(w)) {
				found = append(found, filepath.Base(path)+" holds "+w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A copied data directory does not show a run's secret values: the run's
// state, its events and the signal held while it was paused are sealed,
// while the run, across a restart, computes with the real values.
func TestSecretValuesAreSealedAtRest(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	run := h.startSecrets(op, "sealed-1")

	h.must(200, h.pauseRun(op, run.ID, "pause", nil, "sealed-pause"), nil)
	var acc engine.SignalAccepted
	h.must(202, h.signalRun(op, run.ID, map[string]any{"name": "login", "payload": map[string]any{"password": "pass-0002"}}, ""), &acc)
	is.True(acc.Held)
	var held string
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT event FROM platform_run_inbox WHERE run_id = ?`, run.ID).Scan(&held))
	is.True(!strings.Contains(held, "pass-0002"))

	h.restart(true)
	op = h.localToken()
	h.must(200, h.pauseRun(op, run.ID, "resume", nil, "sealed-resume"), nil)
	h.finishSecrets(op, run.ID, false)
	var rep engine.ReplayReport
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID+"/replay", op), &rep)
	is.Equal(rep.Verdict, "consistent")

	h.stop()
	is.Equal(filesHolding(t, h.dir, runSecrets), nil)
}

// A run stored before sealing existed (plain state and events) still
// loads, is shown, replays and runs on; what it stores next is sealed.
func TestRunStoredBeforeSealingStillLoads(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	run := h.startSecrets(op, "unsealed-1")
	path := h.d.DB.Path()
	h.stop()
	// The harness keeps the key in the data directory's file.
	box, err := secretbox.Open(context.Background(), h.dir, secretbox.Options{DisableKeyring: true})
	is.NoErr(err)
	unsealRun(t, box, path, run.ID)

	h.restart(true)
	op = h.localToken()
	var got engine.Run
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID, op), &got)
	is.Equal(got.Status, "waiting")
	is.Equal(string(got.State.Input), `{"key":"[redacted]"}`)
	history := h.runHistory(op, run.ID)
	is.True(len(history) > 0)
	h.finishSecrets(op, run.ID, true)
	var rep engine.ReplayReport
	h.must(200, h.get(ePath(h)+"/runs/"+run.ID+"/replay", op), &rep)
	is.Equal(rep.Verdict, "consistent")
	var state string
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT state FROM platform_runs WHERE id = ?`, run.ID).Scan(&state))
	is.True(!strings.Contains(state, "key-0001"))
}

// unsealRun rewrites run id's sealed state and events in the database at
// path as plain JSON, as a version before sealing stored them.
func unsealRun(t *testing.T, box *secretbox.Box, path, id string) {
	t.Helper()
	is := is.New(t)
	db, err := sql.Open("sqlite", path)
	is.NoErr(err)
	defer db.Close()
	open := func(stored, ad string) string {
		t.Helper()
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(stored, "sealed:"))
		is.NoErr(err)
		plain, err := box.Open(raw, []byte(ad))
		is.NoErr(err)
		return string(plain)
	}
	var state string
	is.NoErr(db.QueryRow(`SELECT state FROM platform_runs WHERE id = ?`, id).Scan(&state))
	state = open(state, "platform/run/state/"+id)
	is.True(strings.Contains(state, "key-0001"))
	_, err = db.Exec(`UPDATE platform_runs SET state = ? WHERE id = ?`, state, id)
	is.NoErr(err)

	// Events are append-only: the trigger goes for the rewrite and comes back.
	var trigger string
	is.NoErr(db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'platform_run_events_no_update'`).Scan(&trigger))
	_, err = db.Exec(`DROP TRIGGER platform_run_events_no_update`)
	is.NoErr(err)
	rows, err := db.Query(`SELECT seq, payload FROM platform_run_events WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?)`, id)
	is.NoErr(err)
	plain := map[int64]string{}
	for rows.Next() {
		var seq int64
		var payload string
		is.NoErr(rows.Scan(&seq, &payload))
		plain[seq] = open(payload, "platform/run/event/"+id+"/"+strconv.FormatInt(seq, 10))
	}
	is.NoErr(rows.Err())
	rows.Close()
	for seq, payload := range plain {
		_, err = db.Exec(`UPDATE platform_run_events SET payload = ? WHERE run_key = (SELECT run_key FROM platform_runs WHERE id = ?) AND seq = ?`, payload, id, seq)
		is.NoErr(err)
	}
	_, err = db.Exec(trigger)
	is.NoErr(err)
}

// sealedRateFlow passes a secret input to a worker's action.
const sealedRateFlow = `kind: workflow
id: acme/secret-rate
version: 1
input: {type: object, required: [currency], properties: {currency: {type: string, x-secret: true}}}
output: {type: object, properties: {rate: {type: number}}}
steps:
  - id: rate
    action: acme/lookup-rate@1
    with:
      currency: =input.currency
  - id: done
    succeed:
      result:
        rate: =steps.rate.output.rate
`

// A worker task of a run with secrets is queued sealed: the worker still
// receives the real input, and the data directory never shows it.
func TestWorkerTaskOfSecretRunIsSealed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newWorkerFixture(t, "sealed-worker")
	h, op, w := f.h, f.op, f.w
	wf := h.mustPublish(op, "workflows", sealedRateFlow, "sealed-rate-flow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "sealed-rate-activation", "").ID
	run := f.start(act, "sealed-rate-1", map[string]any{"currency": "cur-secret-77"})

	var spec string
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT spec FROM platform_worker_tasks WHERE run_id = ?`, run.ID).Scan(&spec))
	is.True(!strings.Contains(spec, "cur-secret-77"))
	task := h.claimOne(w, "sealed", "rates")
	is.Equal(string(task.Input), `{"currency":"cur-secret-77"}`)
	h.must(200, h.taskCall(w, "complete", complete(task.ID, "sealed", map[string]any{"rate": 1.5})), nil)
	is.Equal(string(h.waitRun(op, run.ID, "succeeded").State.Output), `{"rate":1.5}`)

	h.stop()
	is.Equal(filesHolding(t, h.dir, []string{"cur-secret-77"}), nil)
}
