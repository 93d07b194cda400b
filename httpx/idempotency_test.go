package httpx

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/store"
)

// openIdem opens a database with one idempotency table of each shape the
// surfaces use: the platform's (millisecond times, headers, WITHOUT ROWID)
// and the bridge's (text times, no headers).
func openIdem(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), []store.Migration{{Version: 1, Name: "0001_t", SQL: `
CREATE TABLE p_idem (principal_id TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, request_hash BLOB NOT NULL,
	status INTEGER NOT NULL, body BLOB NOT NULL, headers TEXT NOT NULL, created_at INTEGER NOT NULL,
	PRIMARY KEY (principal_id, scope, key)) WITHOUT ROWID;
CREATE TABLE b_idem (client_id TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, body_hash BLOB NOT NULL,
	status INTEGER NOT NULL, response BLOB NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (client_id, scope, key));`}}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

var (
	platformShape = IdempotencyTable{Name: "p_idem", Owner: "principal_id", Scope: "scope", Key: "key",
		Hash: "request_hash", Status: "status", Body: "body", Headers: "headers", Created: "created_at"}
	bridgeShape = IdempotencyTable{Name: "b_idem", Owner: "client_id", Scope: "scope", Key: "key",
		Hash: "body_hash", Status: "status", Body: "response", Created: "created_at",
		Time: func(t time.Time) any { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }}
)

func TestIdempotencyStore(t *testing.T) {
	for _, shape := range []IdempotencyTable{platformShape, bridgeShape} {
		t.Run(shape.Name, func(t *testing.T) {
			ctx := context.Background()
			db := openIdem(t)
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			s := NewIdempotency(shape, func() time.Duration { return time.Hour }, func() time.Time { return now })
			rec := IdemRecord{Hash: []byte("h1"), Status: 201, Body: []byte(`{"id":1}`), Headers: map[string]string{"ETag": `"1"`}}
			if err := db.Write(ctx, func(tx *sql.Tx) error { return s.Save(ctx, tx, "p1", "POST /x", "k", rec) }); err != nil {
				t.Fatal(err)
			}
			got, err := s.Lookup(ctx, db.Reader(), "p1", "POST /x", "k")
			if err != nil || got == nil {
				t.Fatalf("lookup: %v %v", got, err)
			}
			if got.Status != 201 || string(got.Body) != `{"id":1}` || !got.Matches([]byte("other"), []byte("h1")) || got.Matches([]byte("h2")) {
				t.Fatalf("record %+v", got)
			}
			if shape.Headers != "" && got.Headers["ETag"] != `"1"` {
				t.Fatalf("headers %v", got.Headers)
			}
			// Another owner, scope or key names another record.
			for _, k := range [][3]string{{"p2", "POST /x", "k"}, {"p1", "POST /y", "k"}, {"p1", "POST /x", "k2"}} {
				if r, err := s.Lookup(ctx, db.Reader(), k[0], k[1], k[2]); err != nil || r != nil {
					t.Fatalf("%v: %v %v", k, r, err)
				}
			}
			// Just within the retention it is replayed; past it, absent, and
			// a new answer replaces it.
			now = now.Add(time.Hour)
			if r, _ := s.Lookup(ctx, db.Reader(), "p1", "POST /x", "k"); r == nil {
				t.Fatal("expired at exactly the retention")
			}
			now = now.Add(time.Millisecond)
			if r, _ := s.Lookup(ctx, db.Reader(), "p1", "POST /x", "k"); r != nil {
				t.Fatal("replayed after the retention")
			}
			rec.Hash, rec.Body = []byte("h2"), []byte(`{"id":2}`)
			if err := db.Write(ctx, func(tx *sql.Tx) error { return s.Save(ctx, tx, "p1", "POST /x", "k", rec) }); err != nil {
				t.Fatal(err)
			}
			if r, _ := s.Lookup(ctx, db.Reader(), "p1", "POST /x", "k"); r == nil || string(r.Body) != `{"id":2}` {
				t.Fatalf("replaced record %+v", r)
			}
			// Prune deletes what expired, in chunks, and nothing else.
			for i := 0; i < 5; i++ {
				k := string(rune('a' + i))
				if err := db.Write(ctx, func(tx *sql.Tx) error { return s.Save(ctx, tx, "p1", "POST /x", k, rec) }); err != nil {
					t.Fatal(err)
				}
			}
			now = now.Add(2 * time.Hour)
			if err := db.Write(ctx, func(tx *sql.Tx) error { return s.Save(ctx, tx, "p1", "POST /x", "fresh", rec) }); err != nil {
				t.Fatal(err)
			}
			n, err := s.Prune(ctx, db, 2)
			if err != nil || n != 6 {
				t.Fatalf("pruned %d, %v", n, err)
			}
			var left int
			if err := db.Reader().QueryRow(`SELECT count(*) FROM ` + shape.Name).Scan(&left); err != nil || left != 1 {
				t.Fatalf("left %d, %v", left, err)
			}
		})
	}
}

func TestParseIdempotencyKey(t *testing.T) {
	for _, c := range []struct {
		vals []string
		want string
		err  string
	}{
		{nil, "", ""},
		{[]string{"k"}, "k", ""},
		{[]string{strings.Repeat("a", 200)}, strings.Repeat("a", 200), ""},
		{[]string{strings.Repeat("a", 201)}, "", "1 to 200"},
		{[]string{""}, "", "1 to 200"},
		{[]string{"a", "b"}, "", "exactly one"},
		{[]string{"a\x7f"}, "", "printable"},
		{[]string{"é"}, "", "printable"},
	} {
		got, err := ParseIdempotencyKey(c.vals, 200)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: %q %v", c.vals, got, err)
		}
		if err != nil && ErrorCode(err) != EINVALID {
			t.Errorf("%q: code %q", c.vals, ErrorCode(err))
		}
	}
}
