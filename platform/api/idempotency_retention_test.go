package api_test

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
)

// testClock is a settable clock for retention tests.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestIdempotencyRecordExpiresAfterRetention(t *testing.T) {
	is := is.New(t)
	clock := newTestClock()
	e := newEnv(t, func(o *api.Options) { o.Now = clock.Now; o.IdempotencyRetention = 2 * time.Hour })
	path := "/api/v1/tenants/" + tenantA + "/things"

	first := e.call(t, "POST", path, "alice", `{"name":"one"}`, key("k1"))
	is.Equal(first.status, 201)
	// Just inside the retention: replayed, nothing runs again.
	clock.Advance(2 * time.Hour)
	r := e.call(t, "POST", path, "alice", `{"name":"one"}`, key("k1"))
	is.Equal(r.status, 201)
	is.Equal(r.header.Get(api.HeaderReplayed), "true")
	is.Equal(string(r.body), string(first.body))
	// A millisecond past it the record is expired even before a prune:
	// the change runs again and its new result replaces the record.
	clock.Advance(time.Millisecond)
	r = e.call(t, "POST", path, "alice", `{"name":"one"}`, key("k1"))
	is.Equal(r.status, 201)
	is.Equal(r.header.Get(api.HeaderReplayed), "")
	is.True(string(r.body) != string(first.body)) // a new thing id
	var things, records int
	is.NoErr(e.db.Reader().QueryRow(`SELECT count(*) FROM things`).Scan(&things))
	is.Equal(things, 2)
	is.NoErr(e.db.Reader().QueryRow(`SELECT count(*) FROM platform_idempotency`).Scan(&records))
	is.Equal(records, 1)
	// The new record is replayed, and conflicts like any other.
	again := e.call(t, "POST", path, "alice", `{"name":"one"}`, key("k1"))
	is.Equal(again.header.Get(api.HeaderReplayed), "true")
	is.Equal(string(again.body), string(r.body))
	is.Equal(e.call(t, "POST", path, "alice", `{"name":"two"}`, key("k1")).status, 409)
}

func TestPruneIdempotencyKeepsUnexpired(t *testing.T) {
	is := is.New(t)
	clock := newTestClock()
	e := newEnv(t, func(o *api.Options) { o.Now = clock.Now })
	path := "/api/v1/tenants/" + tenantA + "/things"
	is.Equal(e.call(t, "POST", path, "alice", `{"name":"old"}`, key("old")).status, 201)
	clock.Advance(time.Hour)
	is.Equal(e.call(t, "POST", path, "alice", `{"name":"new"}`, key("new")).status, 201)

	var n int64
	is.NoErr(e.db.Write(context.Background(), func(tx *sql.Tx) (err error) {
		n, err = api.PruneIdempotency(context.Background(), tx, clock.Now().Add(-30*time.Minute))
		return err
	}))
	is.Equal(n, int64(1))
	var keys []string
	rows, err := e.db.Reader().Query(`SELECT key FROM platform_idempotency`)
	is.NoErr(err)
	for rows.Next() {
		var k string
		is.NoErr(rows.Scan(&k))
		keys = append(keys, k)
	}
	is.NoErr(rows.Close())
	is.Equal(keys, []string{"new"})
	r := e.call(t, "POST", path, "alice", `{"name":"new"}`, key("new"))
	is.Equal(r.header.Get(api.HeaderReplayed), "true")
}

func TestIdempotencyResultStoredPacked(t *testing.T) {
	is := is.New(t)
	e := newEnv(t)
	path := "/api/v1/tenants/" + tenantA + "/things"
	long := strings.Repeat("abcdefgh", 200) // 1,600 bytes that compress well
	first := e.call(t, "POST", path, "alice", `{"name":"`+long+`"}`, key("big"))
	is.Equal(first.status, 201)
	var stored []byte
	is.NoErr(e.db.Reader().QueryRow(`SELECT body FROM platform_idempotency WHERE key = 'big'`).Scan(&stored))
	is.True(bytes.HasPrefix(stored, []byte{0x28, 0xb5, 0x2f, 0xfd})) // a zstd frame
	is.True(len(stored) < len(first.body)/4)
	r := e.call(t, "POST", path, "alice", `{"name":"`+long+`"}`, key("big"))
	is.Equal(r.header.Get(api.HeaderReplayed), "true")
	is.Equal(string(r.body), string(first.body))

	// A record written before packing (plain JSON) still replays.
	is.Equal(e.call(t, "POST", path, "alice", `{"name":"plain"}`, key("plain")).status, 201)
	is.NoErr(e.db.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE platform_idempotency SET body = ? WHERE key = 'plain'`, []byte(`{"id":77,"name":"plain"}`))
		return err
	}))
	r = e.call(t, "POST", path, "alice", `{"name":"plain"}`, key("plain"))
	is.Equal(r.header.Get(api.HeaderReplayed), "true")
	is.Equal(strings.TrimSpace(string(r.body)), `{"id":77,"name":"plain"}`)
}
