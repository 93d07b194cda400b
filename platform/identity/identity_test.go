package identity

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/store"
)

// migrations are the platform's (loaded from the files, as package
// platform embeds them; identity cannot import platform).
func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), auditMigrations(t, 99), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// auditMigrations are the access migrations up to version upTo.
func auditMigrations(t *testing.T, upTo int) []store.Migration {
	t.Helper()
	var migs []store.Migration
	for _, m := range []struct {
		version int
		name    string
	}{{1, "0001_boot"}, {2, "0002_access"}, {3, "0003_access_audit"}, {36, "0036_access_audit_compact"}, {39, "0039_access_decisions_context"}} {
		if m.version <= upTo {
			data := mustRead(t, filepath.Join("..", "migrations", m.name+".sql"))
			migs = append(migs, store.Migration{Version: m.version, Name: m.name, SQL: data})
		}
	}
	return migs
}

// TestAuditLogLosesNothingOnClose records many decisions from many
// goroutines and closes at once: every one is written.
func TestAuditLogLosesNothingOnClose(t *testing.T) {
	is := is.New(t)
	db := openDB(t)
	a := NewAuditLog(db, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	const writers, each = 8, 2500 // more than the queue holds
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				a.Record(api.Decision{At: time.Now(), RequestID: fmt.Sprintf("%d-%d", w, i), Method: "GET", Route: "/r", Action: api.ActionAuthorize, Allowed: i%2 == 0, Reason: "x"})
			}
		}()
	}
	wg.Wait()
	is.NoErr(a.Close())
	var n int
	is.NoErr(db.Reader().QueryRow(`SELECT count(*) FROM platform_access_audit`).Scan(&n))
	is.Equal(n, writers*each)
	is.NoErr(a.Close())                       // twice is fine
	a.Record(api.Decision{RequestID: "late"}) // dropped with a warning, no panic
	is.NoErr(db.Write(context.Background(), func(tx *sql.Tx) error {
		removed, err := a.Prune(context.Background(), tx, time.Now().Add(time.Hour))
		is.Equal(removed, int64(writers*each))
		return err
	}))
}

func TestAccessCacheGenerations(t *testing.T) {
	is := is.New(t)
	c := newAccessCache(2)
	loads := 0
	load := func(context.Context) (*accessEntry, error) { loads++; return &accessEntry{found: true}, nil }
	k := subjectKey{"i", "s"}
	ctx := context.Background()
	e1, _ := c.lookup(ctx, k, load)
	e2, _ := c.lookup(ctx, k, load)
	is.True(e1 == e2)
	is.Equal(loads, 1)
	c.invalidate()
	e3, _ := c.lookup(ctx, k, load)
	is.True(e3 != e1)
	is.Equal(loads, 2)
	// Bounded: a third key starts the map over.
	c.lookup(ctx, subjectKey{"i", "a"}, load)
	c.lookup(ctx, subjectKey{"i", "b"}, load)
	c.mu.RLock()
	is.True(len(c.bySubject) <= 2)
	c.mu.RUnlock()
}

func TestCheckName(t *testing.T) {
	for in, ok := range map[string]bool{"a": true, " a ": true, strings.Repeat("x", 200): true, strings.Repeat("ü", 200): true,
		strings.Repeat("x", 201): false, "": false, "  ": false, "a\nb": false, "\xff": false, "tab\t": true} {
		_, err := checkName(in)
		if (err == nil) != ok {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
