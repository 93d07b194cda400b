package api_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/store"
)

// TestIdempotencyRecordsMigrated opens a data directory with records in
// the format before 0034_idempotency_compact (keyed by principal, scope
// and key, answers stored plain or packed) and replays them after
// migrating: same status, body and headers; another body still conflicts.
func TestIdempotencyRecordsMigrated(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	var old []store.Migration
	for _, m := range platform.Migrations() {
		if m.Version < 34 {
			old = append(old, m)
		}
	}
	_, err := store.Migrate(ctx, path, append(old, thingsMigration))
	is.NoErr(err)
	const alice = "0190a000-0000-7000-8000-0000000000a1"
	scope := "POST /api/v1/tenants/" + tenantA + "/things"
	hash := sha256.Sum256([]byte(`{"name":"old"}`))
	big := `{"id":41,"name":"` + "abcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefgh" + `"}`
	hashBig := sha256.Sum256([]byte(`{"name":"abcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefgh"}`))
	db, err := sql.Open("sqlite", "file:"+path)
	is.NoErr(err)
	_, err = db.Exec(`INSERT INTO platform_idempotency(principal_id, scope, key, request_hash, status, body, headers, created_at)
		VALUES (?, ?, 'old', ?, 201, ?, ?, strftime('%s','now') * 1000), (?, ?, 'big', ?, 201, ?, '{}', strftime('%s','now') * 1000)`,
		alice, scope, hash[:], []byte(`{"id":40,"name":"old"}`), `{"ETag":"\"1\"","Location":"/api/v1/tenants/`+tenantA+`/things/40"}`,
		alice, scope, hashBig[:], store.Pack([]byte(big)))
	is.NoErr(err)
	is.NoErr(db.Close())

	e := newEnvAt(t, path)
	var id []byte
	is.NoErr(e.db.Reader().QueryRow(`SELECT id FROM platform_idempotency WHERE key = 'old'`).Scan(&id))
	is.Equal(id, httpx.IdempotencyID(alice, scope, "old")) // SQL and Go key a record alike
	p := "/api/v1/tenants/" + tenantA + "/things"
	r := e.call(t, "POST", p, "alice", `{"name":"old"}`, key("old"))
	is.Equal(r.status, 201)
	is.Equal(r.header.Get(api.HeaderReplayed), "true")
	is.Equal(strings.TrimSpace(string(r.body)), `{"id":40,"name":"old"}`)
	is.Equal(r.header.Get("ETag"), `"1"`)
	is.Equal(r.header.Get("Location"), "/api/v1/tenants/"+tenantA+"/things/40")
	r = e.call(t, "POST", p, "alice", `{"name":"abcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefghabcdefgh"}`, key("big"))
	is.Equal(r.header.Get(api.HeaderReplayed), "true")
	is.Equal(strings.TrimSpace(string(r.body)), big)
	is.Equal(e.call(t, "POST", p, "alice", `{"name":"other"}`, key("old")).status, 409)
	// Another principal's key of the same text is its own.
	r = e.call(t, "POST", p, "bob", `{"name":"old"}`, key("old"))
	is.Equal(r.status, 201)
	is.Equal(r.header.Get(api.HeaderReplayed), "")
}
