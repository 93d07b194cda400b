package identity

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/store"
)

const auditColumns = `seq, at, request_id, method, route, principal_id, action, capability, tenant_id, project_id,
	environment_id, resource_id, allowed, reason, grant_id`

// auditRows reads platform_access_audit, every column as text, in seq order.
func auditRows(t *testing.T, db *store.DB, where string, args ...any) []string {
	t.Helper()
	rows, err := db.Reader().Query(`SELECT `+auditColumns+` FROM platform_access_audit `+where+` ORDER BY seq`, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := make([]any, 15)
		for i := range vals {
			vals[i] = new(any)
		}
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, v := range vals {
			fmt.Fprintf(&b, "%T:%v|", *(v.(*any)), *(v.(*any)))
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAccessDecisionsMigrated opens a data directory whose decisions were
// written in the former layout (one row of text per decision): after
// 0036_access_audit_compact, platform_access_audit answers them exactly
// as before, their contexts are stored once, and new decisions reuse them.
func TestAccessDecisionsMigrated(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	old, err := store.Open(ctx, path, auditMigrations(t, 3), store.Options{})
	is.NoErr(err)
	const route = "/api/v1/tenants/{tenant}/projects/{project}/environments/{environment}/runs"
	is.NoErr(old.Write(ctx, func(tx *sql.Tx) error {
		for i := range 6 {
			allowed, reason := i%3 != 2, "allowed"
			if !allowed {
				reason = "no grant"
			}
			if _, err := tx.Exec(`INSERT INTO platform_access_audit(at, request_id, method, route, principal_id, action, capability,
				tenant_id, project_id, environment_id, resource_id, allowed, reason, grant_id) VALUES (?, ?, 'POST', ?, 'p1', 'authorize', 'run.start',
				't1', 'pr1', 'e1', ?, ?, ?, 'g1')`, 1000+i, fmt.Sprintf("req-%d", i), route, strings.Repeat("r", i%2), allowed, reason); err != nil {
				return err
			}
		}
		// Defaults as the former table filled them.
		_, err := tx.Exec(`INSERT INTO platform_access_audit(at, request_id, method, route, action, allowed, reason) VALUES (2000, 'req-x', 'GET', '/x', 'authenticate', 0, 'bad token')`)
		return err
	}))
	before := auditRows(t, old, "")
	is.Equal(len(before), 7)
	is.NoErr(old.Close())

	_, err = store.Migrate(ctx, path, auditMigrations(t, 99))
	is.NoErr(err)
	db, err := store.Open(ctx, path, auditMigrations(t, 99), store.Options{})
	is.NoErr(err)
	defer db.Close()
	is.Equal(auditRows(t, db, ""), before)
	contexts := contextRows(t, db)
	is.Equal(contexts, 3) // allowed, refused, the bad token

	// New decisions: the same context as converted rows, and a new one.
	a := NewAuditLog(db, slog.New(slog.DiscardHandler))
	at := time.UnixMilli(3000).UTC()
	d := api.Decision{At: at, RequestID: "req-new", Method: "POST", Route: route, PrincipalID: "p1", Action: "authorize", Capability: "run.start",
		Allowed: true, Reason: "allowed", GrantID: "g1"}
	d.Scope.Tenant, d.Scope.Project, d.Scope.Environment, d.Scope.Resource = "t1", "pr1", "e1", "res"
	a.Record(d)
	d.RequestID, d.Action, d.Capability = "req-new2", "delegate", "grant.create"
	a.Record(d)
	is.NoErr(a.Close())
	contexts = contextRows(t, db)
	is.Equal(contexts, 4)
	is.Equal(auditRows(t, db, "WHERE request_id = ?", "req-new"), []string{
		"int64:8|int64:3000|string:req-new|string:POST|string:" + route + "|string:p1|string:authorize|string:run.start|string:t1|string:pr1|string:e1|string:res|int64:1|string:allowed|string:g1|"})
	// A read by request id uses the decisions' index, through the view.
	var plan strings.Builder
	rows, err := db.Reader().Query(`EXPLAIN QUERY PLAN SELECT * FROM platform_access_audit WHERE request_id = ?`, "req-new")
	is.NoErr(err)
	for rows.Next() {
		var id, parent, unused int
		var detail string
		is.NoErr(rows.Scan(&id, &parent, &unused, &detail))
		plan.WriteString(detail + "\n")
	}
	is.NoErr(rows.Close())
	is.True(strings.Contains(plan.String(), "USING INDEX platform_access_decisions_request")) // plan
	is.True(!strings.Contains(plan.String(), "SCAN"))                                         // plan

	// Retention deletes decisions, and the contexts no decision left refers
	// to; the contexts of the two decisions kept stay.
	is.Equal(prune(t, db, a, 2500), int64(7))
	is.Equal(len(auditRows(t, db, "")), 2)
	contexts = contextRows(t, db)
	is.Equal(contexts, 2)
}

// TestPrunedContextRecordedAgain: a context the writer has cached is
// deleted by a prune (its decisions expired); a later decision with that
// context is recorded with a context row again, not with the deleted key.
func TestPrunedContextRecordedAgain(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db := openDB(t)
	a := NewAuditLog(db, slog.New(slog.DiscardHandler))
	defer a.Close()
	d := func(id string, at int64, method string) api.Decision {
		return api.Decision{At: time.UnixMilli(at).UTC(), RequestID: id, Method: method, Route: "/r", Action: api.ActionAuthorize, Allowed: true, Reason: "x"}
	}
	a.Record(d("old", 1000, "GET"))
	a.Record(d("other", 3000, "POST")) // keeps the largest key alive
	is.NoErr(a.Flush(ctx))
	is.Equal(prune(t, db, a, 2000), int64(1))
	contexts := contextRows(t, db)
	is.Equal(contexts, 1) // GET's context went with its decision

	// A new context takes the next key; the GET decision's context is
	// stored again rather than pointing at the deleted key.
	a.Record(d("third", 4000, "PUT"))
	a.Record(d("again", 5000, "GET"))
	is.NoErr(a.Flush(ctx))
	rows := auditRows(t, db, "WHERE request_id IN ('other', 'third', 'again')")
	is.Equal(len(rows), 3)
	is.True(strings.Contains(rows[0], "string:POST|"))
	is.True(strings.Contains(rows[1], "string:PUT|"))
	is.True(strings.Contains(rows[2], "string:GET|"))
	var orphans int
	is.NoErr(db.Reader().QueryRow(`SELECT count(*) FROM platform_access_decisions d
		WHERE NOT EXISTS (SELECT 1 FROM platform_access_contexts c WHERE c.id = d.context_id)`).Scan(&orphans))
	is.Equal(orphans, 0)
}

// TestContextCacheBounded: more distinct contexts than the writer caches
// (a client choosing methods) are all recorded, and the cache stays bounded.
func TestContextCacheBounded(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db := openDB(t)
	a := NewAuditLog(db, slog.New(slog.DiscardHandler))
	const n = maxCachedContexts + 100
	for i := range n {
		a.Record(api.Decision{At: time.UnixMilli(int64(i)), RequestID: fmt.Sprint(i), Method: fmt.Sprintf("M%d", i), Route: "/r", Action: api.ActionAuthorize, Reason: "x"})
	}
	is.NoErr(a.Flush(ctx))
	is.True(len(a.contexts) <= maxCachedContexts) // flushed: the writer is idle
	is.NoErr(a.Close())
	is.Equal(len(auditRows(t, db, "")), n)
}

// contextRows counts the stored access contexts.
func contextRows(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.Reader().QueryRow(`SELECT count(*) FROM platform_access_contexts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// prune runs the audit log's retention for decisions before ms and
// answers how many it deleted.
func prune(t *testing.T, db *store.DB, a *AuditLog, ms int64) int64 {
	t.Helper()
	var n int64
	if err := db.Write(context.Background(), func(tx *sql.Tx) (err error) {
		n, err = a.Prune(context.Background(), tx, time.UnixMilli(ms))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
