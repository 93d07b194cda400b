package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration is one forward-only schema change. Versions are global across
// subsystems: the platform keeps the numbers its spec names (0001_boot ...
// 0028_files); the bridge takes 100-199, ingest 200-299, callbacks 300-399,
// factory 400-499.
type Migration struct {
	Version int
	Name    string // e.g. "0001_boot"
	SQL     string
}

var migrationFile = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// LoadMigrations reads every NNNN_name.sql file of dir in fsys (an embed.FS).
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("store: read migrations %s: %w", dir, err)
	}
	var migs []Migration
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		m := migrationFile.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("store: migration file %q is not named NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: read %s: %w", e.Name(), err)
		}
		migs = append(migs, Migration{Version: v, Name: strings.TrimSuffix(e.Name(), ".sql"), SQL: string(data)})
	}
	return migs, nil
}

// MustLoad is LoadMigrations for embedded files known at build time; a bad
// name there is a programming error caught by every test run.
func MustLoad(fsys fs.FS, dir string) []Migration {
	m, err := LoadMigrations(fsys, dir)
	if err != nil {
		panic(err)
	}
	return m
}

func checkMigrations(migs []Migration) error {
	seen := map[int]string{}
	for _, m := range migs {
		if m.Version <= 0 {
			return fmt.Errorf("store: migration %q has version %d", m.Name, m.Version)
		}
		if other, ok := seen[m.Version]; ok {
			return fmt.Errorf("store: migrations %q and %q share version %d", other, m.Name, m.Version)
		}
		seen[m.Version] = m.Name
	}
	return nil
}

// SchemaError reports a database whose schema does not match the binary.
type SchemaError struct {
	Path   string
	Behind []Migration // known to the binary, not applied
	Ahead  []string    // applied, unknown to the binary
}

func (e *SchemaError) Error() string {
	if len(e.Ahead) > 0 {
		return fmt.Sprintf("store: %s was written by a newer bridge (unknown migrations %s); upgrade the binary", e.Path, strings.Join(e.Ahead, ", "))
	}
	names := make([]string, len(e.Behind))
	for i, m := range e.Behind {
		names[i] = m.Name
	}
	return fmt.Sprintf("store: %s is behind this binary (%d pending: %s); run `bridge migrate`", e.Path, len(e.Behind), strings.Join(names, ", "))
}

type schemaState struct {
	Empty   bool
	Pending []Migration
	Unknown []string
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

func readSchemaState(ctx context.Context, db *sql.DB, migs []Migration) (schemaState, error) {
	var st schemaState
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type='table'`).Scan(&tables); err != nil {
		return st, fmt.Errorf("store: read schema: %w", err)
	}
	applied := map[int]bool{}
	if tables > 0 {
		var has int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type='table' AND name='schema_migrations'`).Scan(&has); err != nil {
			return st, fmt.Errorf("store: read schema: %w", err)
		}
		if has == 0 {
			return st, fmt.Errorf("store: the database has tables but no schema_migrations: not a bridge database")
		}
		rows, err := db.QueryContext(ctx, `SELECT version, name FROM schema_migrations`)
		if err != nil {
			return st, fmt.Errorf("store: read schema_migrations: %w", err)
		}
		defer rows.Close()
		known := map[int]bool{}
		for _, m := range migs {
			known[m.Version] = true
		}
		for rows.Next() {
			var v int
			var name string
			if err := rows.Scan(&v, &name); err != nil {
				return st, fmt.Errorf("store: read schema_migrations: %w", err)
			}
			applied[v] = true
			if !known[v] {
				st.Unknown = append(st.Unknown, name)
			}
		}
		if err := rows.Err(); err != nil {
			return st, fmt.Errorf("store: read schema_migrations: %w", err)
		}
	}
	st.Empty = tables == 0
	for _, m := range migs {
		if !applied[m.Version] {
			st.Pending = append(st.Pending, m)
		}
	}
	slices.SortFunc(st.Pending, func(a, b Migration) int { return a.Version - b.Version })
	return st, nil
}

// applyMigrations runs each pending migration in its own transaction, so a
// failure leaves the database at the last good revision.
func applyMigrations(ctx context.Context, db *sql.DB, pending []Migration) ([]Migration, error) {
	if _, err := db.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("store: create schema_migrations: %w", err)
	}
	var done []Migration
	for _, m := range pending {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return done, fmt.Errorf("store: migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return done, fmt.Errorf("store: migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, Text(time.Now())); err != nil {
			tx.Rollback()
			return done, fmt.Errorf("store: record migration %s: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return done, fmt.Errorf("store: migration %s: commit: %w", m.Name, err)
		}
		done = append(done, m)
	}
	return done, nil
}

// Migrate brings the database at path up to date and returns what it applied.
func Migrate(ctx context.Context, path string, migs []Migration) ([]Migration, error) {
	db, err := Open(ctx, path, migs, Options{AllowBehind: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st, err := readSchemaState(ctx, db.writer, migs)
	if err != nil {
		return nil, err
	}
	if len(st.Pending) == 0 {
		return nil, nil
	}
	// Migrations bypass the group-commit loop: they are DDL, run once, and
	// must be applied in order.
	return applyMigrations(ctx, db.writer, st.Pending)
}

// Applied lists the migrations recorded in the database, oldest first.
func (db *DB) Applied(ctx context.Context) ([]Migration, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("store: read schema_migrations: %w", err)
	}
	defer rows.Close()
	var out []Migration
	for rows.Next() {
		var m Migration
		if err := rows.Scan(&m.Version, &m.Name); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
