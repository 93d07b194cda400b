package bridge

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
)

// retentionService is a Service with only what the idempotency records
// need, on a settable clock.
func retentionService(t *testing.T, clock *time.Time, retention time.Duration) *Service {
	t.Helper()
	db := openTestDB(t, filepath.Join(t.TempDir(), "bridge.db"), Migrations())
	t.Cleanup(func() { db.Close() })
	s := &Service{db: db, cfg: Config{IdempotencyRetention: config.Duration(retention)}, now: func() time.Time { return *clock }}
	s.idem = s.newIdemStore()
	return s
}

func remembered(t *testing.T, s *Service, p Principal, k *idem) (*Replay, error) {
	t.Helper()
	var st *Replay
	err := s.db.Write(context.Background(), func(tx *sql.Tx) (err error) {
		st, err = s.replay(context.Background(), tx, p, k)
		return err
	})
	return st, err
}

func remember(t *testing.T, s *Service, p Principal, k *idem, v any) {
	t.Helper()
	if err := s.db.Write(context.Background(), func(tx *sql.Tx) error { return s.remember(context.Background(), tx, p, k, 202, v) }); err != nil {
		t.Fatal(err)
	}
}

func TestIdempotencyRecordsExpire(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clock := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	s := retentionService(t, &clock, 24*time.Hour)
	p := Principal{Client: "ide"}
	k1, err := newIdem("POST /v1/bridge/jobs", "k1", map[string]string{"prompt": "hi"}, []byte(`{"prompt":"hi"}`))
	is.NoErr(err)
	remember(t, s, p, k1, map[string]string{"id": "job-1"})

	// Inside the retention: replayed; with another body: a conflict.
	clock = clock.Add(24 * time.Hour)
	st, err := remembered(t, s, p, k1)
	is.NoErr(err)
	is.True(st != nil)
	is.Equal(string(st.body), `{"id":"job-1"}`)
	other, _ := newIdem("POST /v1/bridge/jobs", "k1", map[string]string{"prompt": "bye"}, []byte(`{"prompt":"bye"}`))
	_, err = remembered(t, s, p, other)
	is.True(err != nil && strings.Contains(err.Error(), "different body"))

	// Past it: absent before any prune, and a new answer replaces it.
	clock = clock.Add(time.Nanosecond)
	st, err = remembered(t, s, p, k1)
	is.NoErr(err)
	is.True(st == nil)
	_, err = remembered(t, s, p, other)
	is.NoErr(err) // an expired key is free for another body
	remember(t, s, p, other, map[string]string{"id": "job-2"})
	st, err = remembered(t, s, p, other)
	is.NoErr(err)
	is.Equal(string(st.body), `{"id":"job-2"}`)
}

func TestPruneIdempotencyDeletesOnlyExpired(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clock := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	s := retentionService(t, &clock, time.Hour)
	p := Principal{Client: "ide"}
	// More than one prune chunk of old records, then a few fresh ones.
	err := s.db.Write(context.Background(), func(tx *sql.Tx) error {
		for i := range pruneChunk + 10 {
			k, _ := newIdem("POST /v1/bridge/jobs", "old-"+strings.Repeat("x", i%7)+time.Duration(i).String(), i, nil)
			if err := s.remember(context.Background(), tx, p, k, 202, map[string]int{"n": i}); err != nil {
				return err
			}
		}
		return nil
	})
	is.NoErr(err)
	clock = clock.Add(30 * time.Minute)
	fresh, _ := newIdem("POST /v1/bridge/jobs", "fresh", 1, nil)
	remember(t, s, p, fresh, map[string]int{"n": -1})

	clock = clock.Add(31 * time.Minute) // the old ones are 61 minutes old
	n, err := s.pruneIdempotency(context.Background())
	is.NoErr(err)
	is.Equal(n, int64(pruneChunk+10))
	var left int
	is.NoErr(s.db.Reader().QueryRow(`SELECT count(*) FROM bridge_idempotency`).Scan(&left))
	is.Equal(left, 1)
	st, err := remembered(t, s, p, fresh)
	is.NoErr(err)
	is.Equal(string(st.body), `{"n":-1}`)
}

func TestIdempotencyResponseStoredPacked(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clock := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	s := retentionService(t, &clock, time.Hour)
	p := Principal{Client: "ide"}
	k, _ := newIdem("POST /v1/bridge/jobs", "big", 1, nil)
	job := map[string]string{"prompt": strings.Repeat("the same words ", 200)}
	remember(t, s, p, k, job)
	var raw []byte
	is.NoErr(s.db.Reader().QueryRow(`SELECT response FROM bridge_idempotency`).Scan(&raw))
	is.True(bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}))
	is.True(len(raw) < 400)
	st, err := remembered(t, s, p, k)
	is.NoErr(err)
	is.True(strings.Contains(string(st.body), strings.Repeat("the same words ", 200)))
}

func TestIdempotencyRetentionBounds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	for d, ok := range map[time.Duration]bool{
		59 * time.Minute: false, time.Hour: true, 24 * time.Hour: true,
		MaxIdempotencyRetention: true, MaxIdempotencyRetention + time.Second: false,
	} {
		c := DefaultConfig()
		c.IdempotencyRetention = config.Duration(d)
		err := c.Validate()
		is.Equal(err == nil, ok)
		if err != nil {
			is.True(strings.Contains(err.Error(), "bridge.idempotency-retention"))
		}
	}
	is.Equal(DefaultConfig().IdempotencyRetention.D(), 24*time.Hour)
}
