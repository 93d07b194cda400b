package bridge

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentbridge/bridge/store"
)

// openTestDB opens a bridge database with migrations migs.
func openTestDB(t *testing.T, path string, migs []store.Migration) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), path, migs, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestJobsQueuedInOneSecondStartInQueueOrder: the scheduler takes queued
// jobs by queued_at; jobs queued milliseconds apart within one second
// (…00Z, …00.001Z, …00.01Z, …00.1Z, …) must come out in queue order.
func TestJobsQueuedInOneSecondStartInQueueOrder(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, filepath.Join(t.TempDir(), "bridge.db"), Migrations())
	defer db.Close()
	profiles, err := buildProfiles(Config{Profiles: map[string]Profile{"default": {Provider: "echo"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Service{db: db, profiles: profiles, now: func() time.Time { return clock }}
	s.sched = newScheduler(s, 1)
	// Queue them in an order unlike creation (seq) order, so queued_at
	// alone decides: job i is created at position perm(i).
	const n = 300
	want := make([]string, n)
	err = db.Write(context.Background(), func(tx *sql.Tx) error {
		for i := range n {
			k := (i * 7) % n // a permutation of 0..n-1 (7 and 300 are coprime)
			clock = time.Date(2026, 1, 2, 3, 4, 5, k*int(time.Millisecond)*3, time.UTC)
			j, err := s.insertJob(tx, &pending{}, Principal{Client: "ide"}, newJob{Profile: "default", Prompt: fmt.Sprint(k), Source: "api"})
			if err != nil {
				return err
			}
			want[k] = j.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.sched.queued(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("queue position %d: got job %s, want %s", i, got[i], want[i])
			}
		}
		t.Fatalf("got %d jobs, want %d", len(got), len(want))
	}
	var stored string
	if err := db.Reader().QueryRow(`SELECT queued_at FROM bridge_jobs WHERE id = ?`, want[0]).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != "2026-01-02T03:04:05.000000000Z" {
		t.Fatalf("queued_at stored as %q", stored)
	}
}

// TestMigrationRewritesTimesToFixedWidth: rows written before migration
// 0102 (trailing zeros dropped) are rewritten, so old queued jobs keep
// their order among new ones, and the API reads the same instants.
func TestMigrationRewritesTimesToFixedWidth(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bridge.db")
	all := Migrations()
	var before []store.Migration
	for _, m := range all {
		if m.Version < 102 {
			before = append(before, m)
		}
	}
	db := openTestDB(t, path, before)
	old := []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.001Z", "2026-01-02T03:04:05.01Z", "2026-01-02T03:04:05.1Z", "2026-01-02T03:04:05.12Z", "2026-01-02T03:04:05.123456789Z"}
	err := db.Write(context.Background(), func(tx *sql.Tx) error {
		for i, ts := range old {
			// Inserted in reverse so that seq order is the wrong one.
			ts = old[len(old)-1-i]
			if _, err := tx.Exec(`INSERT INTO bridge_jobs(id, client_id, profile, provider, source, state, prompt, created_at, updated_at, queued_at, started_at)
				VALUES (?, 'ide', 'default', 'echo', 'api', 'queued', 'p', ?, ?, ?, NULL)`, fmt.Sprint("job-", ts), ts, ts, ts); err != nil {
				return err
			}
		}
		_, err := tx.Exec(`INSERT INTO bridge_clients(id, created_at, revoked_at) VALUES ('ide', '2026-01-02T03:04:05.5Z', NULL)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := store.Migrate(context.Background(), path, all); err != nil {
		t.Fatal(err)
	}
	db = openTestDB(t, path, all)
	defer db.Close()
	s := &Service{db: db}
	s.sched = newScheduler(s, 1)
	got, err := s.sched.queued(context.Background(), len(old))
	if err != nil {
		t.Fatal(err)
	}
	for i, ts := range old {
		if got[i] != "job-"+ts {
			t.Fatalf("after migration position %d is %s, want job-%s", i, got[i], ts)
		}
		var queued, created string
		var started sql.NullString
		if err := db.Reader().QueryRow(`SELECT queued_at, created_at, started_at FROM bridge_jobs WHERE id = ?`, got[i]).Scan(&queued, &created, &started); err != nil {
			t.Fatal(err)
		}
		want, _ := time.Parse(time.RFC3339Nano, ts)
		if len(queued) != len("2006-01-02T15:04:05.000000000Z") || !store.FromText(queued).Equal(want) || created != queued || started.Valid {
			t.Fatalf("%s became queued_at %q created_at %q started_at %v", ts, queued, created, started)
		}
	}
	var client string
	if err := db.Reader().QueryRow(`SELECT created_at FROM bridge_clients WHERE id = 'ide'`).Scan(&client); err != nil {
		t.Fatal(err)
	}
	if client != "2026-01-02T03:04:05.500000000Z" {
		t.Fatalf("client created_at %q", client)
	}
}
