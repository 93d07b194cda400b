package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"
)

// stepArgs is one step of a 3-step run in River: each step is a job that,
// in one transaction, completes itself and inserts the next step.
type stepArgs struct {
	Step int    `json:"step"`
	Name string `json:"name"`
}

func (stepArgs) Kind() string { return "bench_step" }

type stepWorker struct {
	river.WorkerDefaults[stepArgs]
	db   *sql.DB
	done *atomic.Int64
}

func (w *stepWorker) Work(ctx context.Context, job *river.Job[stepArgs]) error {
	if job.Args.Step >= 3 {
		return nil // the completer commits it; counted by the completion event
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	client := river.ClientFromContext[*sql.Tx](ctx)
	if _, err := client.InsertTx(ctx, tx, stepArgs{Step: job.Args.Step + 1, Name: job.Args.Name}, nil); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit()
}

type riverSystem struct {
	db     *sql.DB
	client *river.Client[*sql.Tx]
	done   atomic.Int64
	cancel func()
}

// startRiver opens River with riversqlite on dir/river.db, synchronous=FULL.
// SQLite has no LISTEN/NOTIFY, so workers poll: the fetch interval is
// lowered from River's defaults (1 s poll, 100 ms cooldown) to 10 ms / 1 ms.
func startRiver(dir string) (*riverSystem, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8) // writers queue on SQLite's lock (busy_timeout); a worker's own transaction needs a connection of its own
	ctx := context.Background()
	m, err := rivermigrate.New(riversqlite.New(db), nil)
	if err != nil {
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	s := &riverSystem{db: db}
	workers := river.NewWorkers()
	river.AddWorker(workers, &stepWorker{db: db, done: &s.done})
	s.client, err = river.NewClient(riversqlite.New(db), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 32}},
		Workers:           workers,
		FetchPollInterval: 10 * time.Millisecond,
		FetchCooldown:     time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	events, cancel := s.client.Subscribe(river.EventKindJobCompleted)
	s.cancel = cancel
	go func() {
		for ev := range events {
			if ev.Job != nil && ev.Job.Kind == "bench_step" && len(ev.Job.EncodedArgs) > 0 && string(ev.Job.EncodedArgs[:9]) == `{"step":3` {
				s.done.Add(1)
			}
		}
	}()
	if err := s.client.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *riverSystem) name() string { return riverLabel }

func (s *riverSystem) start(ctx context.Context, _ int64) error {
	_, err := s.client.Insert(ctx, stepArgs{Step: 1, Name: "ada"}, nil)
	return err
}

func (s *riverSystem) completed() (int64, error) { return s.done.Load(), nil }

func (s *riverSystem) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.client.Stop(ctx)
	s.cancel()
	return errorsJoin(err, s.db.Close())
}
