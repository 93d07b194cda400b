package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // DBOS on SQLite (modernc)
)

// dbosSystem is DBOS Transact Go with its system database on SQLite: a
// workflow of three steps (echo, noop, result), each checkpointed.
type dbosSystem struct {
	ctx   dbos.Context
	db    *sql.DB
	label string
	done  atomic.Int64
}

func greet(_ context.Context) (string, error)   { return "ada", nil }
func nothing(_ context.Context) (string, error) { return "{}", nil }

func threeSteps(ctx dbos.Context, name string) (string, error) {
	if _, err := dbos.RunAsStep(ctx, greet); err != nil {
		return "", err
	}
	if _, err := dbos.RunAsStep(ctx, nothing); err != nil {
		return "", err
	}
	return dbos.RunAsStep(ctx, func(context.Context) (string, error) { return name, nil })
}

// startDBOS opens DBOS on dir/dbos.db. full=true gives it our durability
// (synchronous=FULL on every connection); false keeps DBOS's own default
// (it opens the URL with synchronous=NORMAL).
func startDBOS(dir string, full bool) (*dbosSystem, error) {
	path := filepath.Join(dir, "dbos.db")
	cfg := dbos.Config{AppName: "bench", Logger: slog.New(slog.DiscardHandler)}
	s := &dbosSystem{label: dbosFullLabel}
	if full {
		db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(8) // as DBOS sizes its own pool
		s.db, cfg.SQLiteSystemDB = db, db
	} else {
		s.label = dbosNormalLabel
		cfg.DatabaseURL = "sqlite:" + path
	}
	ctx, err := dbos.NewContext(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("dbos: %w", err)
	}
	dbos.RegisterWorkflow(ctx, threeSteps)
	if err := dbos.Launch(ctx); err != nil {
		return nil, fmt.Errorf("dbos launch: %w", err)
	}
	s.ctx = ctx
	return s, nil
}

func (s *dbosSystem) name() string { return s.label }

func (s *dbosSystem) start(_ context.Context, _ int64) error {
	h, err := dbos.RunWorkflow(s.ctx, threeSteps, "ada")
	if err != nil {
		return err
	}
	go func() {
		if _, err := h.GetResult(); err == nil {
			s.done.Add(1)
		}
	}()
	return nil
}

func (s *dbosSystem) completed() (int64, error) { return s.done.Load(), nil }

func (s *dbosSystem) close() error {
	dbos.Shutdown(s.ctx, 5*time.Second)
	if s.db != nil {
		return s.db.Close()
	}
	return nil
}
