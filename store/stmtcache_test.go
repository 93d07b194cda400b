package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// openCaching opens a one-connection pool on a fresh database with the notes
// table and a statement cache of size statements, and answers the cache.
func openCaching(t *testing.T, size int) (*sql.DB, *cachingConn) {
	t.Helper()
	c, err := newCachingConnector(dsn(filepath.Join(t.TempDir(), "c.db"), false, 0), size)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var cc *cachingConn
	if err := conn.Raw(func(dc any) error { cc = dc.(*cachingConn); return nil }); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	return db, cc
}

func cachedTexts(cc *cachingConn) []string {
	var out []string
	for el := cc.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*cachedStmt).text)
	}
	return out
}

func TestStatementCacheReusesPreparedStatements(t *testing.T) {
	is := is.New(t)
	db, cc := openCaching(t, 8)
	const ins = `INSERT INTO notes(body) VALUES (?)`
	for _, b := range []string{"a", "b", "c"} {
		_, err := db.Exec(ins, b)
		is.NoErr(err)
	}
	stmt := cc.byText[ins].Value.(*cachedStmt).stmt
	// A failing run (unique violation) leaves the statement usable.
	_, err := db.Exec(ins, "a")
	is.True(err != nil)
	_, err = db.Exec(ins, "d")
	is.NoErr(err)
	is.True(cc.byText[ins].Value.(*cachedStmt).stmt == stmt) // prepared once
	var n int
	is.NoErr(db.QueryRow(`SELECT count(*) FROM notes WHERE body > ?`, "a").Scan(&n))
	is.Equal(n, 3)
	is.NoErr(db.QueryRow(`SELECT count(*) FROM notes WHERE body > ?`, "c").Scan(&n))
	is.Equal(n, 1) // new arguments, not the previous run's
	is.Equal(len(cachedTexts(cc)), 3)
}

func TestStatementCacheNestedUseOfOneText(t *testing.T) {
	is := is.New(t)
	db, cc := openCaching(t, 8)
	for _, b := range []string{"a", "b", "c"} {
		_, err := db.Exec(`INSERT INTO notes(body) VALUES (?)`, b)
		is.NoErr(err)
	}
	const q = `SELECT body FROM notes WHERE body >= ? ORDER BY body`
	tx, err := db.Begin()
	is.NoErr(err)
	defer tx.Rollback()
	rows, err := tx.Query(q, "a")
	is.NoErr(err)
	var outer, inner []string
	for rows.Next() {
		var b string
		is.NoErr(rows.Scan(&b))
		outer = append(outer, b)
		// The same text while its rows are open runs uncached.
		var first string
		is.NoErr(tx.QueryRow(q, b).Scan(&first))
		inner = append(inner, first)
	}
	is.NoErr(rows.Err())
	is.NoErr(rows.Close())
	is.Equal(outer, []string{"a", "b", "c"})
	is.Equal(inner, []string{"a", "b", "c"})
	is.True(!cc.byText[q].Value.(*cachedStmt).busy)
	var b string
	is.NoErr(tx.QueryRow(q, "b").Scan(&b)) // and cached again after
	is.Equal(b, "b")
}

func TestStatementCacheEvictsLeastRecentlyUsed(t *testing.T) {
	is := is.New(t)
	db, cc := openCaching(t, 2)
	const a, b, c = `SELECT 1`, `SELECT 2`, `SELECT 3`
	tx, err := db.Begin()
	is.NoErr(err)
	defer tx.Rollback()
	rows, err := tx.Query(a) // busy while the others push it out
	is.NoErr(err)
	evicted := cc.byText[a].Value.(*cachedStmt)
	var n int
	is.NoErr(tx.QueryRow(b).Scan(&n))
	is.NoErr(tx.QueryRow(c).Scan(&n))
	is.Equal(cachedTexts(cc), []string{c, b})
	is.True(evicted.evicted)
	is.True(rows.Next())
	is.NoErr(rows.Scan(&n))
	is.Equal(n, 1)
	is.NoErr(rows.Close()) // closes the evicted statement too
	is.NoErr(tx.QueryRow(a).Scan(&n))
	is.Equal(n, 1)
	is.Equal(cachedTexts(cc), []string{a, c})
}

func TestStatementCacheSkipsScripts(t *testing.T) {
	is := is.New(t)
	db, cc := openCaching(t, 8)
	_, err := db.Exec(`INSERT INTO notes(body) VALUES ('x'); INSERT INTO notes(body) VALUES ('y')`)
	is.NoErr(err)
	_, err = db.Exec(`DELETE FROM notes WHERE body = 'x';`) // one statement and its semicolon
	is.NoErr(err)
	is.Equal(cachedTexts(cc)[:2], []string{`DELETE FROM notes WHERE body = 'x';`,
		`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)`})
	var n int
	is.NoErr(db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n))
	is.Equal(n, 1)
	// Explicitly prepared statements are their caller's, not the cache's.
	st, err := db.Prepare(`SELECT count(*) FROM notes WHERE body = ?`)
	is.NoErr(err)
	is.NoErr(st.QueryRow("y").Scan(&n))
	is.Equal(n, 1)
	is.NoErr(st.Close())
	is.Equal(len(cachedTexts(cc)), 3)
	cols, err := db.Query(`SELECT id, body FROM notes`)
	is.NoErr(err)
	types, err := cols.ColumnTypes()
	is.NoErr(err)
	is.Equal(types[1].DatabaseTypeName(), "TEXT")
	is.NoErr(cols.Close())
}
