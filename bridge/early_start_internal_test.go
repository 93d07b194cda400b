package bridge

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentbridge/bridge/bridge/provider/providertest"
	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/store/ring"
)

// A chat turn's agent starts from what the start transaction of a job just
// created reads (firstTurn) before it runs. Should the transaction read
// something else, its commit has started the job all the same: the early
// agent is killed, records nothing, and the turn runs from what was read,
// so the job never stays running without an agent (startCommit.redo).
func TestEarlyStartThatReadOtherInputRunsTheTurnAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	claude, _ := providertest.BuildFakeAgent(t, t.TempDir())
	db := openTestDB(t, filepath.Join(dir, "bridge.db"), Migrations())
	defer db.Close()
	bolt, err := bbolt.Open(filepath.Join(dir, "events.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	r, err := ring.Open(bolt, "bridge", 1000)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("bridge.yaml", []byte(fmt.Sprintf("bridge:\n  profiles:\n    claude: {provider: claude, command: %q}\n", claude)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(daemon.Deps{DB: db, Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Options{Ring: r})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		s.sched.wg.Wait()
	}()
	s.ctx = ctx

	p := Principal{Client: "ide"}
	nj := newJob{ID: "job-1", Profile: "claude", Prompt: "#echo what the job says", Source: "chat"}
	jw, leave := s.waiters.join(nj.ID)
	defer leave()
	row := s.jobRow(p, nj, s.now().UTC())
	created := s.createJobQueued(ctx, row)
	// The agent is given other input than the job's: it would never end.
	other := row
	other.Prompt = "#hang"
	started, err := s.sched.startNow(ctx, nj.ID, created, firstTurn(other))
	if err != nil || !started {
		t.Fatalf("startNow: started %v, err %v", started, err)
	}

	deadline := time.After(20 * time.Second)
	for {
		_, done, final, changed := jw.since(0)
		if done {
			if final.State != StateSucceeded {
				t.Fatalf("job %s (%v), want succeeded", final.State, final.LastError)
			}
			if !strings.Contains(final.resultText, "what the job says") {
				t.Fatalf("answer %q is not the job's turn", final.resultText)
			}
			break
		}
		select {
		case <-changed:
		case <-deadline:
			j, _ := s.Job(context.Background(), Principal{Owner: true}, nj.ID)
			t.Fatalf("the job did not end: it is %s", j.State)
		}
	}
	// Nothing of the killed agent's turn was recorded: one result, the job's.
	var results int
	if err := db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM bridge_audit WHERE job_id = ? AND kind = 'agent.result'`, nj.ID).Scan(&results); err != nil {
		t.Fatal(err)
	}
	if results != 1 {
		t.Fatalf("%d agent results recorded, want 1", results)
	}
	// The killed agent printed a session line and its child's line
	// (#hang): neither is in the audit, only the rerun's session.
	var sessions, children int
	if err := db.Reader().QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM bridge_audit WHERE job_id = ?1 AND kind = 'agent.session'),
		(SELECT COUNT(*) FROM bridge_audit WHERE job_id = ?1 AND (payload LIKE '%fake_child%' OR payload LIKE '%fake.child%'))`,
		nj.ID).Scan(&sessions, &children); err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || children != 0 {
		t.Fatalf("audit holds %d sessions and %d child lines, want 1 and 0 (the killed agent's turn leaked)", sessions, children)
	}
}
