package platform_test

import (
	"bytes"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/store"
)

// An ended run's state is stored packed and reads as before; a state
// stored plain (as versions before packing did) reads the same.
func TestEndedRunStateStoredPacked(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := h.setupThreeStep(op)
	run := h.mustStartRun(op, map[string]any{"activation_id": act, "input": map[string]any{"name": "ada"}}, "packed-run")
	h.waitRun(op, run.ID, "succeeded")
	path := ePath(h) + "/runs/" + run.ID
	view := h.get(path, op)
	is.Equal(view.status, 200)
	var stored []byte
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT state FROM platform_runs WHERE id = ?`, run.ID).Scan(&stored))
	is.True(bytes.HasPrefix(stored, []byte{0x28, 0xb5, 0x2f, 0xfd})) // a zstd frame
	plain, err := store.Unpack(stored)
	is.NoErr(err)
	is.True(len(stored) < len(plain))
	h.dbExec(`UPDATE platform_runs SET state = ? WHERE id = ?`, string(plain), run.ID)
	again := h.get(path, op)
	is.Equal(again.status, 200)
	is.Equal(string(again.body), string(view.body))
}
