package bridge_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestMintTokenAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	r := e.do("POST", "/v1/bridge/admin/tokens", e.owner, map[string]any{"id": "ide", "scopes": []string{"submit", "read"}, "profiles": []string{"default"}})
	is.Equal(r.Status, 201)
	body := r.json(t)
	tok := body["token"].(string)
	is.True(strings.HasPrefix(tok, "brg_"))
	is.Equal(len(tok), 4+43)
	is.Equal(body["scopes"], []any{"read", "submit"}) // canonical order
	is.Equal(r.Header.Get("Cache-Control"), "no-store")

	// The token works, and it is never stored in clear.
	is.Equal(e.do("GET", "/v1/bridge/status", tok, nil).Status, 200)
	list := e.do("GET", "/v1/bridge/admin/tokens", e.owner, nil)
	is.Equal(list.Status, 200)
	is.True(!strings.Contains(string(list.Body), tok))
	is.True(strings.Contains(string(list.Body), `"client":"ide"`))
}

func TestMintTokenValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	client := e.token("plain", "read")
	cases := []struct {
		name   string
		token  string
		body   string
		status int
		code   string
	}{
		{"not owner", client, `{"id":"x","scopes":["read"],"profiles":["default"]}`, 403, "owner_only"},
		{"no token", "", `{"id":"x","scopes":["read"],"profiles":["default"]}`, 401, "unauthorized"},
		{"missing id", e.owner, `{"scopes":["read"],"profiles":["default"]}`, 400, "invalid_request"},
		{"id 64 chars ok", e.owner, `{"id":"` + strings.Repeat("a", 64) + `","scopes":["read"],"profiles":["default"]}`, 201, ""},
		{"id 65 chars", e.owner, `{"id":"` + strings.Repeat("a", 65) + `","scopes":["read"],"profiles":["default"]}`, 400, "invalid_request"},
		{"id bad chars", e.owner, `{"id":"a b","scopes":["read"],"profiles":["default"]}`, 400, "invalid_request"},
		{"reserved id", e.owner, `{"id":"owner","scopes":["read"],"profiles":["default"]}`, 400, "invalid_request"},
		{"no scopes", e.owner, `{"id":"x","scopes":[],"profiles":["default"]}`, 400, "invalid_request"},
		{"unknown scope", e.owner, `{"id":"x","scopes":["admin"],"profiles":["default"]}`, 400, "invalid_request"},
		{"duplicate scope", e.owner, `{"id":"x","scopes":["read","read"],"profiles":["default"]}`, 400, "invalid_request"},
		{"all four scopes", e.owner, `{"id":"x4","scopes":["read","submit","control","workflows"],"profiles":["default"]}`, 201, ""},
		{"no profiles", e.owner, `{"id":"x","scopes":["read"],"profiles":[]}`, 400, "invalid_request"},
		{"unknown profile", e.owner, `{"id":"x","scopes":["read"],"profiles":["gpt"]}`, 400, "unknown_profile"},
		{"extra field", e.owner, `{"id":"x","scopes":["read"],"profiles":["default"],"admin":true}`, 400, "invalid_request"},
		{"not json", e.owner, `{"id":`, 400, "invalid_request"},
		{"wrong type", e.owner, `{"id":5,"scopes":["read"],"profiles":["default"]}`, 400, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/bridge/admin/tokens", c.token, c.body)
			if r.Status != c.status || (c.code != "" && r.code() != c.code) {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, c.status, c.code)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.token("ide", "read")
	cases := []struct {
		name string
		hdr  []string
		path string
		want int
	}{
		{"no header", nil, "/v1/bridge/status", 401},
		{"basic scheme", []string{"Authorization", "Basic " + tok}, "/v1/bridge/status", 401},
		{"wrong prefix", []string{"Authorization", "Bearer xyz_" + tok[4:]}, "/v1/bridge/status", 401},
		{"truncated", []string{"Authorization", "Bearer " + tok[:20]}, "/v1/bridge/status", 401},
		{"unknown token", []string{"Authorization", "Bearer brg_" + strings.Repeat("A", 43)}, "/v1/bridge/status", 401},
		{"token in url", nil, "/v1/bridge/status?token=" + tok, 401},
		{"valid", []string{"Authorization", "Bearer " + tok}, "/v1/bridge/status", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("GET", c.path, "", nil, c.hdr...)
			if r.Status != c.want {
				t.Fatalf("status %d (%s), want %d", r.Status, r.Body, c.want)
			}
			if c.want == 401 {
				if r.code() != "unauthorized" || r.Header.Get("WWW-Authenticate") == "" {
					t.Fatalf("bad 401: %s %v", r.Body, r.Header)
				}
				if strings.Contains(string(r.Body), tok) {
					t.Fatal("error echoes the token")
				}
			}
		})
	}
}

func TestScopesAndProfiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	reader := e.token("reader", "read")
	submitter := e.token("submitter", "read,submit", "default")
	controller := e.token("submitter", "control") // same principal, other scopes

	r := e.do("POST", "/v1/bridge/jobs", reader, map[string]any{"prompt": "hi"})
	is.Equal(r.Status, 403)
	is.Equal(r.code(), "insufficient_scope")

	r = e.do("POST", "/v1/bridge/jobs", submitter, map[string]any{"prompt": "hi", "profile": "claude"})
	is.Equal(r.Status, 403)
	is.Equal(r.code(), "profile_not_allowed")

	id := e.submit(submitter, map[string]any{"prompt": "hi"})
	e.waitState(submitter, id, "succeeded")
	r = e.do("POST", "/v1/bridge/jobs/"+id+"/retry", submitter, "{}")
	is.Equal(r.Status, 403) // submit does not imply control
	r = e.do("POST", "/v1/bridge/jobs/"+id+"/retry", controller, "{}")
	is.Equal(r.Status, 202) // same client name: same principal
	r = e.do("GET", "/v1/bridge/jobs/"+id, controller, nil)
	is.Equal(r.Status, 403) // control does not imply read

	r = e.do("GET", "/v1/bridge/admin/tokens", submitter, nil)
	is.Equal(r.Status, 403)
	is.Equal(r.code(), "owner_only")
}

func TestClientIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	a := e.token("alice", "read,submit,control")
	b := e.token("bob", "read,submit,control")
	id := e.submit(a, map[string]any{"prompt": "mine"})
	e.waitState(a, id, "succeeded")
	for _, path := range []string{"", "/audit", "/tools", "/attempts", "/result", "/messages", "/tools/1"} {
		r := e.do("GET", "/v1/bridge/jobs/"+id+path, b, nil)
		is.Equal(r.Status, 404) // another client's job does not exist for bob
		is.Equal(r.code(), "not_found")
	}
	for _, act := range []string{"pause", "resume", "cancel", "retry"} {
		is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/"+act, b, "{}").Status, 404)
	}
	is.Equal(e.do("POST", "/v1/bridge/jobs/"+id+"/messages", b, `{"text":"x"}`).Status, 404)
	list := e.do("GET", "/v1/bridge/jobs", b, nil).json(t)
	is.Equal(len(list["jobs"].([]any)), 0)
	list = e.do("GET", "/v1/bridge/jobs", a, nil).json(t)
	is.Equal(len(list["jobs"].([]any)), 1)
	// The owner administers everything.
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+id, e.owner, nil).Status, 200)
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read,submit")
	other := e.token("other", "read")
	stream, _ := e.stream(tok)
	id := e.submit(tok, map[string]any{"prompt": "background"})
	e.waitState(tok, id, "succeeded")

	r := e.do("DELETE", "/v1/bridge/admin/clients/ide", e.owner, nil)
	is.Equal(r.Status, 200)
	is.Equal(r.json(t)["revokedTokens"], float64(1))
	is.Equal(e.do("GET", "/v1/bridge/status", tok, nil).Status, 401)
	is.Equal(e.do("GET", "/v1/bridge/status", other, nil).Status, 200) // others unaffected

	// The open stream closes (at once; the bound only ends a broken test).
	deadline := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case _, ok := <-stream.events:
			open = ok
		case <-deadline:
			t.Fatal("stream still open 10 s after revocation")
		}
	}
	// Background jobs stay; a new token for the same client sees them.
	again := e.token("ide", "read")
	is.Equal(e.do("GET", "/v1/bridge/jobs/"+id, again, nil).Status, 200)

	is.Equal(e.do("DELETE", "/v1/bridge/admin/clients/nobody", e.owner, nil).Status, 404)
	is.Equal(e.do("DELETE", "/v1/bridge/admin/clients/bad%20name", e.owner, nil).Status, 400)
}

// TestRevocationInDatabaseClosesStreams covers a revocation that does not go
// through the running daemon's API (written straight to the database).
func TestRevocationInDatabaseClosesStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	is := is.New(t)
	tok := e.token("ide", "read")
	stream, _ := e.stream(tok)
	_, err := e.d.DB.Reader().Exec(`SELECT 1`)
	is.NoErr(err)
	is.NoErr(e.d.DB.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE bridge_tokens SET revoked_at = '2026-01-01T00:00:00Z' WHERE client_id = 'ide'`)
		return err
	}))
	deadline := time.After(10 * time.Second) // the watcher sweeps every 500 ms
	for open := true; open; {
		select {
		case _, ok := <-stream.events:
			open = ok
		case <-deadline:
			t.Fatal("stream still open after a database revocation")
		}
	}
}
