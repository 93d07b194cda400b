package callbacks

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestRetentionPrunes: finished executions older than the cutoff go, and so
// do events no execution refers to; open attempts and their events stay.
func TestRetentionPrunes(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{"CALLBACK_RETRY_INITIAL_DELAY": "60000", "CALLBACK_RETRY_MAX_DELAY": "60000"})
	var fail atomic.Bool
	rc := newReceiver(t, func(int, *http.Request) (int, http.Header, string) {
		if fail.Load() {
			return 500, nil, ""
		}
		return 200, nil, ""
	})
	h.authorize("127.0.0.1")
	cfg := h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x"}})
	done, retrying := uuid.NewString(), uuid.NewString()
	_, err := h.svc.Dispatch(t.Context(), cfg.ID, "x", done, json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "success", func() bool { return len(h.executions(eqFilter("state", StateSucceeded))) == 1 })
	fail.Store(true)
	_, err = h.svc.Dispatch(t.Context(), cfg.ID, "x", retrying, json.RawMessage(`{}`))
	is.NoErr(err)
	waitFor(t, 15*time.Second, "a pending retry", func() bool { return len(h.executions(eqFilter("state", StatePending))) == 1 })

	// Age everything by two days.
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	is.NoErr(h.db.Write(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE callback_executions SET created_at = ?`, old); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE callback_events SET received_at = ?`, old)
		return err
	}))
	execs, events, err := h.svc.pruneBefore(context.Background(), time.Now().Add(-24*time.Hour))
	is.NoErr(err)
	is.Equal(execs, int64(2))  // the success and the failed first attempt
	is.Equal(events, int64(1)) // the delivered event; the retrying one is still referenced
	left := h.executions()
	is.Equal(len(left), 1)
	is.Equal(left[0].State, StatePending)
	is.Equal(left[0].EventID, retrying)
	var n int
	is.NoErr(h.db.Reader().QueryRow(`SELECT count(*) FROM callback_events WHERE id = ?`, retrying).Scan(&n))
	is.Equal(n, 1)
}
