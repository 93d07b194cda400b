package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

var testMigs = []Migration{
	{Version: 1, Name: "0001_items", SQL: `CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`},
	{Version: 2, Name: "0002_notes", SQL: `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`},
}

func openTest(t testing.TB, migs []Migration) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := Open(context.Background(), path, migs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func count(t testing.TB, db *DB, table string) int {
	t.Helper()
	var n int
	if err := db.Reader().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFreshDatabaseIsCreatedAtNewestRevision(t *testing.T) {
	is := is.New(t)
	db, path := openTest(t, testMigs)
	applied, err := db.Applied(context.Background())
	is.NoErr(err)
	is.Equal(len(applied), 2)
	is.Equal(applied[1].Name, "0002_notes")
	fi, err := os.Stat(path)
	is.NoErr(err)
	if os.PathSeparator == '/' {
		is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	}
}

func TestBehindDatabaseRefusedUntilMigrated(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := Open(ctx, path, testMigs[:1], Options{})
	is.NoErr(err)
	is.NoErr(db.Close())

	_, err = Open(ctx, path, testMigs, Options{})
	var se *SchemaError
	is.True(errors.As(err, &se))
	is.Equal(len(se.Behind), 1)
	is.Equal(se.Behind[0].Name, "0002_notes")
	is.True(len(se.Ahead) == 0)
	is.True(containsAll(err.Error(), "bridge migrate", "0002_notes"))

	applied, err := Migrate(ctx, path, testMigs)
	is.NoErr(err)
	is.Equal(len(applied), 1)
	applied, err = Migrate(ctx, path, testMigs)
	is.NoErr(err)
	is.Equal(len(applied), 0) // idempotent

	db, err = Open(ctx, path, testMigs, Options{})
	is.NoErr(err)
	is.Equal(count(t, db, "notes"), 0)
	db.Close()
}

func TestAheadDatabaseRefused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := Open(ctx, path, testMigs, Options{})
	is.NoErr(err)
	db.Close()
	for _, opts := range []Options{{}, {AllowBehind: true}} {
		_, err = Open(ctx, path, testMigs[:1], opts)
		var se *SchemaError
		is.True(errors.As(err, &se))
		is.Equal(se.Ahead, []string{"0002_notes"})
		is.True(containsAll(err.Error(), "newer bridge"))
	}
	_, err = Migrate(ctx, path, testMigs[:1])
	is.True(err != nil)
}

func TestFailedMigrationLeavesLastGoodRevision(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := Open(ctx, path, testMigs[:1], Options{})
	is.NoErr(err)
	db.Close()
	bad := append([]Migration{}, testMigs[0], Migration{Version: 2, Name: "0002_bad", SQL: `CREATE TABLE oops (; nonsense`})
	_, err = Migrate(ctx, path, bad)
	is.True(err != nil)
	db, err = Open(ctx, path, testMigs[:1], Options{})
	is.NoErr(err)
	applied, _ := db.Applied(ctx)
	is.Equal(len(applied), 1)
	db.Close()
}

func TestDuplicateMigrationVersionsRejected(t *testing.T) {
	is := is.New(t)
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"),
		[]Migration{{Version: 1, Name: "a"}, {Version: 1, Name: "b"}}, Options{})
	is.True(err != nil)
}

func TestCorruptFileIsOneClearError(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "bridge.db")
	is.NoErr(os.WriteFile(path, []byte("this is definitely not an SQLite database, it is text"), 0o600))
	_, err := Open(context.Background(), path, testMigs, Options{})
	is.True(err != nil)
	is.True(containsAll(err.Error(), "not a valid SQLite database"))
	data, _ := os.ReadFile(path)
	is.Equal(string(data), "this is definitely not an SQLite database, it is text") // untouched
}

func TestForeignDatabaseRefused(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "other.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	is.NoErr(err)
	_, err = raw.Exec(`CREATE TABLE t(x)`)
	is.NoErr(err)
	raw.Close()
	_, err = Open(context.Background(), path, testMigs, Options{})
	is.True(err != nil)
	is.True(containsAll(err.Error(), "not a bridge database"))
}

func TestGroupCommitConcurrentWritersAllDurable(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db, path := openTest(t, testMigs)
	const writers, each = 64, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				errs <- db.Write(ctx, func(tx *sql.Tx) error {
					_, err := tx.Exec(`INSERT INTO notes(body) VALUES (?)`, "x")
					return err
				})
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	is.Equal(count(t, db, "notes"), writers*each)
	is.NoErr(db.Close())
	db2, err := Open(ctx, path, testMigs, Options{})
	is.NoErr(err)
	defer db2.Close()
	is.Equal(count(t, db2, "notes"), writers*each)
}

func TestFailingWriteRollsBackOnlyItself(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db, _ := openTest(t, testMigs)
	is.NoErr(db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO items(v) VALUES ('a')`)
		return err
	}))
	var wg sync.WaitGroup
	results := make([]error, 40)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = db.Write(ctx, func(tx *sql.Tx) error {
				if _, err := tx.Exec(`INSERT INTO notes(body) VALUES (?)`, i); err != nil {
					return err
				}
				if i%2 == 0 {
					// A unique violation after a successful insert: both must vanish.
					_, err := tx.Exec(`INSERT INTO items(v) VALUES ('a')`)
					return err
				}
				return nil
			})
		}(i)
	}
	wg.Wait()
	for i, err := range results {
		is.Equal(err != nil, i%2 == 0)
	}
	is.Equal(count(t, db, "notes"), 20)
	is.Equal(count(t, db, "items"), 1)
}

func TestPanickingWriteIsAnError(t *testing.T) {
	is := is.New(t)
	db, _ := openTest(t, testMigs)
	err := db.Write(context.Background(), func(tx *sql.Tx) error { panic("boom") })
	is.True(err != nil)
	is.NoErr(db.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO notes(body) VALUES ('after')`)
		return err
	}))
	is.Equal(count(t, db, "notes"), 1)
}

func TestCancelledWriteDoesNothing(t *testing.T) {
	is := is.New(t)
	db, _ := openTest(t, testMigs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO notes(body) VALUES ('x')`)
		return err
	})
	is.True(errors.Is(err, context.Canceled))
	is.Equal(count(t, db, "notes"), 0)
}

func TestWriteAfterCloseFails(t *testing.T) {
	is := is.New(t)
	db, _ := openTest(t, testMigs)
	is.NoErr(db.Close())
	is.NoErr(db.Close()) // idempotent
	err := db.Write(context.Background(), func(tx *sql.Tx) error { return nil })
	is.True(errors.Is(err, ErrClosed))
}

func TestWriteSingleCommitsAlone(t *testing.T) {
	is := is.New(t)
	db, _ := openTest(t, testMigs)
	is.NoErr(db.WriteSingle(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO notes(body) VALUES ('x')`)
		return err
	}))
	err := db.WriteSingle(context.Background(), func(tx *sql.Tx) error {
		tx.Exec(`INSERT INTO notes(body) VALUES ('y')`)
		return errors.New("no")
	})
	is.True(err != nil)
	is.Equal(count(t, db, "notes"), 1)
}

func TestReadOnlyOpen(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	_, err := Open(ctx, filepath.Join(t.TempDir(), "missing.db"), testMigs, Options{ReadOnly: true})
	is.True(err != nil)
	db, path := openTest(t, testMigs)
	db.Close()
	ro, err := Open(ctx, path, testMigs, Options{ReadOnly: true})
	is.NoErr(err)
	defer ro.Close()
	is.True(ro.Write(ctx, func(*sql.Tx) error { return nil }) != nil)
}

func TestLoadMigrationsNames(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(os.MkdirAll(filepath.Join(dir, "m"), 0o700))
	is.NoErr(os.WriteFile(filepath.Join(dir, "m", "0001_boot.sql"), []byte("CREATE TABLE a(x);"), 0o600))
	migs, err := LoadMigrations(os.DirFS(dir), "m")
	is.NoErr(err)
	is.Equal(migs[0].Version, 1)
	is.Equal(migs[0].Name, "0001_boot")
	is.NoErr(os.WriteFile(filepath.Join(dir, "m", "bad.sql"), []byte(""), 0o600))
	_, err = LoadMigrations(os.DirFS(dir), "m")
	is.True(err != nil)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestWriteThenRunsInCommitOrderOnlyAfterCommit(t *testing.T) {
	is := is.New(t)
	db, _ := openTest(t, testMigs)
	ctx := context.Background()
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_ = db.WriteThen(ctx, func(tx *sql.Tx) error {
				if i%5 == 0 {
					return errors.New("refused")
				}
				_, err := tx.Exec(`INSERT INTO notes(body) VALUES (?)`, i)
				return err
			}, func() {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
		}(i)
	}
	wg.Wait()
	is.Equal(len(order), 40) // failed writes run no hook
	// Hooks ran in the order the rows were committed.
	rows, err := db.Reader().Query(`SELECT body FROM notes ORDER BY id`)
	is.NoErr(err)
	defer rows.Close()
	var committed []int
	for rows.Next() {
		var v int
		is.NoErr(rows.Scan(&v))
		committed = append(committed, v)
	}
	is.Equal(order, committed)
}

// A write whose statement is interrupted (its context is cancelled while
// it runs) makes SQLite roll back the whole shared transaction. Only that
// write fails: the writes before and after it in the batch run again in a
// transaction of their own, in order, and none runs outside a transaction.
func TestInterruptedWriteLeavesItsBatchConsistent(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db, _ := openTest(t, testMigs)
	note := func(body string) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO notes(body) VALUES (?)`, body)
			return err
		}
	}
	// The writer is held until the three writes are queued, so that they
	// make one batch.
	gate, running := make(chan struct{}), make(chan struct{})
	blocker := db.Go(ctx, func(*sql.Tx) error { close(running); <-gate; return nil }, nil)
	<-running
	before := db.Go(ctx, note("before"), nil)
	slowCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	slow := db.Go(slowCtx, func(tx *sql.Tx) error {
		close(started)
		_, err := tx.ExecContext(slowCtx, `INSERT INTO notes(body)
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) SELECT 'slow' FROM n`)
		return err
	}, nil)
	after := db.Go(ctx, note("after"), nil)
	close(gate)
	is.NoErr(<-blocker)
	<-started
	time.Sleep(50 * time.Millisecond)
	cancel()
	is.NoErr(<-before)
	is.True(<-slow != nil)
	is.NoErr(<-after)
	var bodies []string
	rows, err := db.Reader().Query(`SELECT body FROM notes ORDER BY id`)
	is.NoErr(err)
	defer rows.Close()
	for rows.Next() {
		var b string
		is.NoErr(rows.Scan(&b))
		bodies = append(bodies, b)
	}
	is.Equal(bodies, []string{"before", "after"})
	is.NoErr(db.Write(ctx, note("later")))
	is.Equal(count(t, db, "notes"), 3)
}
