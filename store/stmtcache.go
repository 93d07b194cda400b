package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"reflect"
	"strings"

	"modernc.org/sqlite"
)

// Prepared statements: the driver parses every statement text it is given
// on each Exec or Query, and parsing was a quarter of the CPU of a run start
// (BENCHMARKS.md, "Run start and transitions"). Each connection keeps the
// statements it has prepared, by text, and reuses them; callers keep
// writing plain tx.ExecContext(ctx, text, args...).

// stmtCacheSize bounds the statements one connection keeps: the repository's
// fixed texts fit many times over, and texts built per call (lists with
// optional filters) only push the least recently used ones out.
const stmtCacheSize = 512

// cachingConnector opens driver connections that reuse prepared statements.
type cachingConnector struct {
	base driver.Connector
	size int
}

func newCachingConnector(dsn string, size int) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return &cachingConnector{base: base, size: size}, nil
}

func (c *cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(cacheableConn)
	if !ok {
		return conn, nil // another driver: nothing to cache
	}
	return &cachingConn{inner: inner, size: c.size, byText: map[string]*list.Element{}, lru: list.New()}, nil
}

func (c *cachingConnector) Driver() driver.Driver { return c.base.Driver() }

// cacheableConn is what the driver's connection offers and the cache
// passes through.
type cacheableConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a driver connection with its prepared statements. The
// database/sql package never uses one connection from two goroutines at
// once (rows are closed under the connection's lock too), so it needs no
// lock of its own.
type cachingConn struct {
	inner  cacheableConn
	size   int
	byText map[string]*list.Element // of *cachedStmt
	lru    *list.List               // most recently used first
}

// cachedStmt is a prepared statement of the cache. busy: rows of it are
// open, so it cannot run again (or be closed) until they are closed.
type cachedStmt struct {
	text string
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	busy    bool
	evicted bool
}

var (
	_ cacheableConn = (*cachingConn)(nil)
	_ driver.Rows   = (*cachedRows)(nil)
)

// cacheable: a text of more than one statement is parsed again on every
// run by the driver whatever is done here, so it is not kept.
func cacheable(text string) bool {
	return !strings.Contains(strings.TrimRight(strings.TrimSpace(text), ";"), ";")
}

// get answers the cached statement of text, preparing it when needed, or
// nil when text is not kept (the caller runs it uncached).
func (c *cachingConn) get(ctx context.Context, text string) (*cachedStmt, error) {
	if el, ok := c.byText[text]; ok {
		cs := el.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil // its rows are open (a nested use of the same text)
		}
		c.lru.MoveToFront(el)
		return cs, nil
	}
	if !cacheable(text) {
		return nil, nil
	}
	ds, err := c.inner.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	st, ok := ds.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		_ = ds.Close()
		return nil, nil
	}
	cs := &cachedStmt{text: text, stmt: st}
	c.byText[text] = c.lru.PushFront(cs)
	c.evict()
	return cs, nil
}

// evict closes the least recently used statements beyond the bound (a busy
// one is closed when its rows are).
func (c *cachingConn) evict() {
	for c.lru.Len() > c.size {
		el := c.lru.Back()
		cs := el.Value.(*cachedStmt)
		c.lru.Remove(el)
		delete(c.byText, cs.text)
		cs.evicted = true
		if !cs.busy {
			_ = cs.stmt.Close()
		}
	}
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	return cs.stmt.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.inner.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return &cachedRows{Rows: rows, stmt: cs}, nil
}

// Prepare and PrepareContext serve explicit prepared statements (db.Prepare):
// those belong to their caller, who closes them, so they bypass the cache.
func (c *cachingConn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(ctx, query)
}

func (c *cachingConn) Begin() (driver.Tx, error) { //nolint:staticcheck // driver.Conn requires it
	return c.inner.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.BeginTx(ctx, opts)
}

func (c *cachingConn) Ping(ctx context.Context) error { return c.inner.Ping(ctx) }

func (c *cachingConn) ResetSession(ctx context.Context) error { return c.inner.ResetSession(ctx) }

func (c *cachingConn) IsValid() bool { return c.inner.IsValid() }

// Close finalizes the cached statements, then closes the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		errs = append(errs, el.Value.(*cachedStmt).stmt.Close())
	}
	c.lru.Init()
	clear(c.byText)
	errs = append(errs, c.inner.Close())
	return errors.Join(errs...)
}

// cachedRows are the rows of a cached statement: closing them frees the
// statement for its next run.
type cachedRows struct {
	driver.Rows
	stmt   *cachedStmt
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.stmt.busy = false
	if r.stmt.evicted {
		err = errors.Join(err, r.stmt.stmt.Close())
	}
	return err
}

// The column type methods pass through to the driver's rows (ColumnTypes).

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
