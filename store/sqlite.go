// Package store opens the daemon's SQLite database (bridge.db) and applies the
// embedded migrations of every subsystem. Writes go through one connection and
// are group-committed: requests that arrive while a commit is in flight share
// the next transaction, so many concurrent writers pay for one fsync.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options tunes Open.
type Options struct {
	// Readers is the size of the read-only connection pool (default: 4).
	Readers int
	// MaxBatch caps how many write functions share one transaction (default 256).
	MaxBatch int
	// BusyTimeout is how long SQLite waits on a lock (default 5s).
	BusyTimeout time.Duration
	// AllowBehind opens a database whose schema is behind the binary without
	// migrating it; only `bridge migrate` and read-only inspection use it.
	AllowBehind bool
	// ReadOnly opens without creating or migrating anything (status, inspection).
	ReadOnly bool
}

// DB is the opened database: a single writer with group commit and a reader pool.
type DB struct {
	path   string
	writer *sql.DB
	reader *sql.DB
	reqs   chan *writeReq
	stop   chan struct{}
	done   chan struct{}
	max    int

	closeOnce sync.Once
	closeErr  error
}

type writeReq struct {
	ctx    context.Context
	fn     func(*sql.Tx) error
	then   func() // runs in commit order after a successful commit
	single bool   // wants a transaction (and fsync) of its own
	err    chan error
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("store: database is closed")

func dsn(path string, readOnly bool, busy time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// WAL with synchronous=FULL: every commit is durable even across power
		// loss; group commit is what keeps this affordable.
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		// Each write of a shared transaction runs in a savepoint, whose
		// undo copies of pages go to the statement journal; in memory it
		// costs no syscalls (it spilled to a temporary file past 64 KiB).
		// It only ever undoes a savepoint: crash recovery is the WAL's.
		q.Add("_pragma", "temp_store(MEMORY)")
		q.Set("_txlock", "immediate")
	}
	p := filepath.ToSlash(path)
	if runtime.GOOS == "windows" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return "file://" + p + "?" + q.Encode()
}

// Open opens (creating if needed) the database at path and brings it to the
// newest revision of migs when it is new. An existing database that is behind
// answers *SchemaError with Behind set unless opts.AllowBehind; one that is
// ahead of this binary always answers *SchemaError with Ahead set.
func Open(ctx context.Context, path string, migs []Migration, opts Options) (*DB, error) {
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if err := checkMigrations(migs); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(path)
	fresh := errors.Is(statErr, os.ErrNotExist)
	if opts.ReadOnly && fresh {
		return nil, fmt.Errorf("store: %s does not exist", path)
	}
	if fresh {
		// SQLite would create the file 0644; secrets live here, so make it
		// private first (its -wal and -shm files copy these permissions).
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("store: create %s: %w", path, err)
		}
		f.Close()
	}
	writer, err := openPool(dsn(path, opts.ReadOnly, opts.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	if err := probe(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	db := &DB{path: path, writer: writer, max: opts.MaxBatch}
	state, err := readSchemaState(ctx, writer, migs)
	if err != nil {
		writer.Close()
		return nil, err
	}
	switch {
	case len(state.Unknown) > 0:
		writer.Close()
		return nil, &SchemaError{Path: path, Ahead: state.Unknown}
	case (state.Empty || fresh) && !opts.ReadOnly:
		// A new data directory is created at the newest revision.
		if _, err := applyMigrations(ctx, writer, state.Pending); err != nil {
			writer.Close()
			return nil, err
		}
	case len(state.Pending) > 0 && !opts.AllowBehind && !opts.ReadOnly:
		writer.Close()
		return nil, &SchemaError{Path: path, Behind: state.Pending}
	}
	reader, err := openPool(dsn(path, true, opts.BusyTimeout))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("store: open readers: %w", err)
	}
	reader.SetMaxOpenConns(opts.Readers)
	reader.SetMaxIdleConns(opts.Readers)
	db.reader = reader
	if !opts.ReadOnly {
		db.reqs = make(chan *writeReq, opts.MaxBatch)
		db.stop = make(chan struct{})
		db.done = make(chan struct{})
		go db.writeLoop()
	}
	return db, nil
}

// openPool opens a pool of connections to the database of dsn whose
// connections keep their prepared statements (stmtcache.go).
func openPool(dsn string) (*sql.DB, error) {
	if err := registerFuncs(); err != nil {
		return nil, fmt.Errorf("store: register SQL functions: %w", err)
	}
	c, err := newCachingConnector(dsn, stmtCacheSize)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// probe forces SQLite to read the file header so that a corrupt or foreign
// file is reported at open time with one clear message.
func probe(ctx context.Context, db *sql.DB) error {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&v); err != nil {
		if strings.Contains(err.Error(), "not a database") || strings.Contains(err.Error(), "malformed") {
			return fmt.Errorf("the file is not a valid SQLite database (corrupt?): %w", err)
		}
		return err
	}
	return nil
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// Reader is the read-only pool. Reads see every committed write.
func (db *DB) Reader() *sql.DB { return db.reader }

// Write runs fn inside a transaction shared with other concurrent writers and
// returns once that transaction is durably committed (or fn failed). fn runs in
// its own savepoint: its error rolls back only its own changes. fn must not
// keep tx or start goroutines that use it, and may run again when another
// write interrupted the shared transaction (see commitShared).
func (db *DB) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return db.submit(&writeReq{ctx: ctx, fn: fn, err: make(chan error, 1)})
}

// WriteThen is Write with a function that runs after fn's changes are
// committed, before WriteThen returns. then functions run one at a time in
// commit order, on the writer: they must be quick and must not write (use
// them to hand committed facts to an ordered queue).
func (db *DB) WriteThen(ctx context.Context, fn func(tx *sql.Tx) error, then func()) error {
	return db.submit(&writeReq{ctx: ctx, fn: fn, then: then, err: make(chan error, 1)})
}

// WriteSingle runs fn in a transaction of its own, bypassing group commit.
// It exists for the benchmark that measures what group commit buys;
// everything else should call Write.
func (db *DB) WriteSingle(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return db.submit(&writeReq{ctx: ctx, fn: fn, single: true, err: make(chan error, 1)})
}

// Go queues fn like WriteThen but does not wait: the returned channel yields
// the result once the transaction has committed. Writes queued by one
// goroutine commit in the order they were queued, so waiting for the last
// one waits for all of them.
func (db *DB) Go(ctx context.Context, fn func(tx *sql.Tx) error, then func()) <-chan error {
	req := &writeReq{ctx: ctx, fn: fn, then: then, err: make(chan error, 1)}
	if db.reqs == nil {
		req.err <- errors.New("store: database opened read-only")
		return req.err
	}
	select {
	case db.reqs <- req:
	case <-db.stop:
		req.err <- ErrClosed
	case <-ctx.Done():
		req.err <- ctx.Err()
	}
	return req.err
}

func (db *DB) submit(req *writeReq) error {
	if db.reqs == nil {
		return errors.New("store: database opened read-only")
	}
	ctx := req.ctx
	select {
	case db.reqs <- req:
	case <-db.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.err:
		return err
	case <-db.done:
		// The loop drains queued requests before closing done; a request
		// still here was answered, so read its result.
		select {
		case err := <-req.err:
			return err
		default:
			return ErrClosed
		}
	}
}

func (db *DB) writeLoop() {
	defer close(db.done)
	batch := make([]*writeReq, 0, db.max)
	for {
		batch = batch[:0]
		select {
		case r := <-db.reqs:
			batch = append(batch, r)
		case <-db.stop:
			db.drain()
			return
		}
	fill:
		for len(batch) < db.max {
			select {
			case r := <-db.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		db.commit(batch)
	}
}

// drain answers every request still queued at Close.
func (db *DB) drain() {
	for {
		select {
		case r := <-db.reqs:
			db.commit([]*writeReq{r})
		default:
			return
		}
	}
}

func (db *DB) commit(batch []*writeReq) {
	var shared []*writeReq
	for _, r := range batch {
		switch {
		case r.ctx.Err() != nil:
			r.err <- r.ctx.Err()
		case r.single:
			err := db.commitOne(r.fn)
			if err == nil && r.then != nil {
				r.then()
			}
			r.err <- err
		default:
			shared = append(shared, r)
		}
	}
	for len(shared) > 0 {
		shared = db.commitShared(shared)
	}
}

// commitShared runs writes in one transaction, each in its own savepoint,
// and commits them. An interrupted write (its context ended while a
// statement ran) makes SQLite roll the whole transaction back: that write
// is answered with its error, and it returns the other writes, those that
// ran before it too, for a transaction of their own. They must not run
// outside one, and a goroutine's queued writes stay in order. A write
// function may therefore run more than once; it only touches tx and
// resets what it assigns.
func (db *DB) commitShared(shared []*writeReq) []*writeReq {
	tx, err := db.writer.Begin()
	if err != nil {
		for _, r := range shared {
			r.err <- fmt.Errorf("store: begin: %w", err)
		}
		return nil
	}
	results := make([]error, len(shared))
	for i, r := range shared {
		var lost bool
		results[i], lost = runSavepoint(tx, r.fn)
		if lost {
			_ = tx.Rollback() // the transaction is already gone
			r.err <- results[i]
			return append(slices.Clip(shared[:i]), shared[i+1:]...)
		}
	}
	if err := tx.Commit(); err != nil {
		for i := range results {
			if results[i] == nil {
				results[i] = fmt.Errorf("store: commit: %w", err)
			}
		}
	}
	for i, r := range shared {
		if results[i] == nil && r.then != nil {
			r.then()
		}
		r.err <- results[i]
	}
	return nil
}

func (db *DB) commitOne(fn func(*sql.Tx) error) error {
	tx, err := db.writer.Begin()
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := safeCall(tx, fn); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// runSavepoint runs fn in a savepoint of tx. lost reports that the
// savepoint is gone: SQLite rolled the whole transaction back (an
// interrupted statement does that), so nothing of tx is left.
func runSavepoint(tx *sql.Tx, fn func(*sql.Tx) error) (err error, lost bool) {
	if _, err := tx.Exec("SAVEPOINT w"); err != nil {
		return fmt.Errorf("store: savepoint: %w", err), true
	}
	if err := safeCall(tx, fn); err != nil {
		if _, rbErr := tx.Exec("ROLLBACK TO w; RELEASE w"); rbErr != nil {
			return errors.Join(err, fmt.Errorf("store: rollback to savepoint: %w", rbErr)), true
		}
		return err, false
	}
	if _, err := tx.Exec("RELEASE w"); err != nil {
		return fmt.Errorf("store: release savepoint: %w", err), true
	}
	return nil, false
}

// safeCall turns a panic in a write function into an error so one bad request
// cannot take down the writer shared by everyone.
func safeCall(tx *sql.Tx, fn func(*sql.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store: write function panicked: %v", p)
		}
	}()
	return fn(tx)
}

// Close stops the writer after answering queued writes and closes both pools.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		if db.stop != nil {
			close(db.stop)
			<-db.done
		}
		var errs []error
		if db.reader != nil {
			errs = append(errs, db.reader.Close())
		}
		if _, err := db.writer.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil && db.stop != nil {
			errs = append(errs, err)
		}
		errs = append(errs, db.writer.Close())
		db.closeErr = errors.Join(errs...)
	})
	return db.closeErr
}
