package trigger

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/store"
	"github.com/agentbridge/bridge/store/secretbox"
)

// fakeRuns starts runs in the store's transaction (so the schedule's
// occurrence commits with it) or refuses them with the queued errors.
type fakeRuns struct {
	db      *store.DB
	mu      sync.Mutex
	refuse  []error
	started []string
	n       int // numbers the runs: two starts in the same clock tick get distinct ids
}

func (f *fakeRuns) StartActivation(ctx context.Context, st engine.LocalStart) (engine.RunInfo, error) {
	f.mu.Lock()
	if len(f.refuse) > 0 {
		err := f.refuse[0]
		f.refuse = f.refuse[1:]
		f.mu.Unlock()
		return engine.RunInfo{}, err
	}
	f.n++
	var info engine.RunInfo
	info.ID = "run-" + strconv.Itoa(f.n)
	f.mu.Unlock()
	err := f.db.Write(ctx, func(tx *sql.Tx) error { return st.Commit(tx, info) })
	if err == nil {
		f.mu.Lock()
		f.started = append(f.started, info.ID)
		f.mu.Unlock()
	}
	return info, err
}

func (f *fakeRuns) CheckStart(context.Context, auth.Scope, string, json.RawMessage) error { return nil }

func (f *fakeRuns) RedactInput(_ context.Context, _ auth.Scope, _ string, in json.RawMessage) (json.RawMessage, error) {
	return in, nil
}

// scanFixture is a trigger Service on a store with the scope tables
// stubbed, a fake engine and a settable clock.
func scanFixture(t *testing.T) (*Service, *fakeRuns, *time.Time) {
	t.Helper()
	dir := t.TempDir()
	stub := store.Migration{Version: 1, Name: "0001_stub", SQL: `
		CREATE TABLE platform_tenants (id TEXT PRIMARY KEY);
		CREATE TABLE platform_projects (id TEXT PRIMARY KEY);
		CREATE TABLE platform_environments (id TEXT PRIMARY KEY, project_id TEXT, tenant_id TEXT);
		INSERT INTO platform_tenants VALUES ('t'); INSERT INTO platform_projects VALUES ('p');
		INSERT INTO platform_environments VALUES ('e', 'p', 't');`}
	db, err := store.Open(context.Background(), filepath.Join(dir, "t.db"), append([]store.Migration{stub}, Migrations()...), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	box, err := secretbox.Open(context.Background(), dir, secretbox.Options{DisableKeyring: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runs := &fakeRuns{db: db}
	now := new(time.Time)
	allow := func(context.Context, string, auth.Capability, auth.Scope) (auth.Decision, error) {
		return auth.Decision{Allowed: true}, nil
	}
	s, err := New(Options{DB: db, Box: box, Runs: runs, Standing: allow, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return s, runs, now
}

// TestCapacityRefusalRetriesTheSameOccurrence: a start refused for
// capacity leaves the schedule enabled with the same cursor; the next scan
// in the same minute starts the same occurrence key, once; a refusal that
// lasts past the minute turns the occurrence into a skipped range.
func TestCapacityRefusalRetriesTheSameOccurrence(t *testing.T) {
	is := is.New(t)
	s, runs, now := scanFixture(t)
	ctx := context.Background()
	m := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	r := row{Schedule: Schedule{ID: "s1", Revision: 1, Status: StatusEnabled, Cron: "* * * * *", ActivationID: "a", Input: json.RawMessage(`{}`),
		NextDueAt: &m, PrincipalID: "p1", CreatedAt: m, CreatedBy: "p1", UpdatedAt: m, UpdatedBy: "p1"}, Tenant: "t", Project: "p", Environment: "e"}
	is.NoErr(s.db.Write(ctx, func(tx *sql.Tx) error { return insertSchedule(ctx, tx, s.inputs(), r) }))
	capacity := &api.Error{Code: "PF-REQUEST-CAPACITY", Message: "busy"}

	runs.refuse = []error{capacity}
	*now = m.Add(time.Second)
	_, err := s.DueSchedules(ctx)
	is.True(err != nil) // reported to the loop's log
	cur, err := getSchedule(ctx, s.db.Reader(), s.inputs(), "s1")
	is.NoErr(err)
	is.Equal(cur.Status, StatusEnabled)
	is.Equal(*cur.NextDueAt, m) // the same occurrence key
	occ, err := listOccurrences(ctx, s.db.Reader(), "s1", 0, 10)
	is.NoErr(err)
	is.Equal(len(occ), 0)

	*now = m.Add(20 * time.Second)
	_, err = s.DueSchedules(ctx)
	is.NoErr(err)
	_, err = s.DueSchedules(ctx) // nothing more is due this minute
	is.NoErr(err)
	occ, _ = listOccurrences(ctx, s.db.Reader(), "s1", 0, 10)
	is.Equal(len(occ), 1)
	is.Equal(occ[0].From, m)
	is.Equal(len(runs.started), 1)

	// Refused through the whole next minute: skipped, not caught up.
	runs.refuse = []error{capacity, capacity}
	*now = m.Add(time.Minute + time.Second)
	_, _ = s.DueSchedules(ctx)
	*now = m.Add(time.Minute + 59*time.Second)
	_, _ = s.DueSchedules(ctx)
	*now = m.Add(2*time.Minute + time.Second)
	_, err = s.DueSchedules(ctx)
	is.NoErr(err)
	occ, _ = listOccurrences(ctx, s.db.Reader(), "s1", 0, 10)
	is.Equal(len(occ), 3)
	is.Equal(occ[0].Kind, OccurrenceStarted)
	is.Equal(occ[0].From, m.Add(2*time.Minute))
	is.Equal(occ[1].Kind, OccurrenceSkipped)
	is.Equal(occ[1].From, m.Add(time.Minute))
	is.Equal(occ[1].To, m.Add(time.Minute))
	is.Equal(len(runs.started), 2)

	// A retired activation blocks the schedule.
	runs.refuse = []error{&api.Error{Code: api.CodeConflict, Message: "retired"}}
	*now = m.Add(3*time.Minute + time.Second)
	_, err = s.DueSchedules(ctx)
	is.NoErr(err)
	cur, _ = getSchedule(ctx, s.db.Reader(), s.inputs(), "s1")
	is.Equal(cur.Status, StatusBlocked)
	is.Equal(*cur.BlockedReason, BlockedActivation)
	is.Equal(cur.NextDueAt, nil)
}
