package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/spf13/cobra"
	"github.com/zalando/go-keyring"

	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/identity"
)

// TestPlatformNewUser is the new user's path through the CLI: serve prints
// the local workspace, `platform login` signs in, `platform token` gives a
// token that works with plain HTTP, and the provisioning commands work.
func TestPlatformNewUser(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx := context.Background()
	st, stop := serveInProcess(t, dir)
	defer stop()

	code, out, errw := run(ctx, "platform", "login", "--data-dir", dir)
	is.Equal(code, 0)
	is.Equal(errw, "")
	is.True(strings.Contains(out, "Principal "))
	is.True(strings.Contains(out, "tenant      "))
	is.True(strings.Contains(out, "environment "))
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, tokenCacheFile))
		is.NoErr(err)
		is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	}

	code, out, _ = run(ctx, "platform", "token", "--data-dir", dir)
	is.Equal(code, 0)
	tok := strings.TrimSpace(out)
	is.Equal(strings.Count(tok, "."), 2)
	var id identity.Identity
	getJSON(t, st.ServicesURL+"/api/v1/identity", tok, &id)
	is.Equal(id.Kind, "human")
	is.Equal(len(id.Workspaces), 1)
	ws := id.Workspaces[0]

	code, out, _ = run(ctx, "login", "--data-dir", dir, "--provider", "local")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Signed in with local"))
	code, out, _ = run(ctx, "platform", "identity", "--data-dir", dir, "--json")
	is.Equal(code, 0)
	var id2 identity.Identity
	is.NoErr(json.Unmarshal([]byte(out), &id2))
	is.Equal(id2.PrincipalID, id.PrincipalID)

	// Provisioning.
	T := ws.ID
	code, out, _ = run(ctx, "platform", "project", "create", "--data-dir", dir, "--tenant", T, "--name", "payments", "--json", "--idempotency-key", "p-1")
	is.Equal(code, 0)
	var p identity.Project
	is.NoErr(json.Unmarshal([]byte(out), &p))
	code, out, _ = run(ctx, "platform", "project", "create", "--data-dir", dir, "--tenant", T, "--name", "payments", "--json", "--idempotency-key", "p-1")
	is.Equal(code, 0)
	var again identity.Project
	is.NoErr(json.Unmarshal([]byte(out), &again))
	is.Equal(again.ID, p.ID) // replayed
	code, out, _ = run(ctx, "platform", "project", "list", "--data-dir", dir, "--tenant", T)
	is.Equal(code, 0)
	is.True(strings.Contains(out, p.ID+"  payments"))
	code, out, _ = run(ctx, "platform", "env", "create", "--data-dir", dir, "--tenant", T, "--project", p.ID, "--name", "prod", "--json")
	is.Equal(code, 0)
	var e identity.Environment
	is.NoErr(json.Unmarshal([]byte(out), &e))
	code, out, _ = run(ctx, "platform", "environment", "show", "--data-dir", dir, "--tenant", T, "--project", p.ID, "--environment", e.ID)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Environment "+e.ID+" (prod)"))
	code, out, _ = run(ctx, "platform", "environment", "list", "--data-dir", dir, "--tenant", T, "--project", p.ID, "--json")
	is.Equal(code, 0)
	is.True(strings.Contains(out, e.ID))

	// A new tenant is administered by the local operator by default.
	code, out, _ = run(ctx, "platform", "tenant", "create", "--data-dir", dir, "--name", "acme", "--json")
	is.Equal(code, 0)
	var tnt identity.Tenant
	is.NoErr(json.Unmarshal([]byte(out), &tnt))
	code, out, _ = run(ctx, "platform", "tenant", "show", "--data-dir", dir, "--tenant", tnt.ID)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "(acme)"))
	code, _, _ = run(ctx, "platform", "tenant", "create", "--data-dir", dir, "--name", "bare", "--no-admin")
	is.Equal(code, 0)

	// Principals and grants.
	issuer := st.ServicesURL + "/idp"
	code, out, _ = run(ctx, "platform", "principal", "create", "--data-dir", dir, "--issuer", issuer, "--subject", "bob", "--json")
	is.Equal(code, 0)
	var bob identity.Principal
	is.NoErr(json.Unmarshal([]byte(out), &bob))
	code, out, _ = run(ctx, "platform", "grant", "--data-dir", dir, "--principal", bob.ID, "--tenant", T, "--project", p.ID, "--role", "viewer", "--capability", "run.start")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Granted viewer+run.start at tenant "+T+" / project "+p.ID))
	grantID := out[strings.LastIndex(out, "(grant ")+7 : strings.LastIndex(out, ")")]
	code, out, _ = run(ctx, "platform", "grant", "list", "--data-dir", dir, "--tenant", T, "--principal", bob.ID)
	is.Equal(code, 0)
	is.True(strings.Contains(out, grantID))
	code, out, _ = run(ctx, "platform", "grant", "revoke", "--data-dir", dir, grantID)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Revoked grant "+grantID))
	code, out, _ = run(ctx, "platform", "principal", "disable", "--data-dir", dir, bob.ID, "--revision", "1")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "disabled (revision 2)"))
	code, _, errw = run(ctx, "platform", "principal", "enable", "--data-dir", dir, bob.ID, "--revision", "1")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-ETAG, HTTP 412"))
	code, out, _ = run(ctx, "platform", "principal", "list", "--data-dir", dir, "--kind", "human")
	is.Equal(code, 0)
	is.True(strings.Contains(out, bob.ID))
	is.True(strings.Contains(out, "(disabled)"))

	// Failures: the API's problem, one line, exit 1; usage errors exit 2.
	code, _, errw = run(ctx, "platform", "project", "create", "--data-dir", dir, "--tenant", "nope", "--name", "x")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-NOT-FOUND, HTTP 404"))
	code, _, errw = run(ctx, "platform", "project", "create", "--data-dir", dir, "--tenant", T, "--name", " ")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "/name: name must not be blank"))
	code, _, _ = run(ctx, "platform", "project", "create", "--data-dir", dir, "--tenant", T)
	is.Equal(code, ExitUsage)
	code, _, _ = run(ctx, "platform", "grant", "--data-dir", dir, "--tenant", T)
	is.Equal(code, ExitUsage)

	// Logout forgets the token; the next command signs in again by itself.
	code, out, _ = run(ctx, "platform", "logout", "--data-dir", dir)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "Forgot"))
	code, _, errw = run(ctx, "platform", "identity", "--data-dir", dir)
	is.Equal(code, 0)
	is.True(strings.Contains(errw, "Signed in as the local operator"))
	// A token that went bad (here: forged) is renewed once automatically.
	c := newTokenCache(dir)
	ct, err := c.Get("local")
	is.NoErr(err)
	ct.AccessToken = "a.b.c"
	is.NoErr(c.Put(ct))
	code, _, _ = run(ctx, "platform", "identity", "--data-dir", dir)
	is.Equal(code, 0)
}

func TestPlatformDaemonNotRunning(t *testing.T) {
	is := is.New(t)
	for _, args := range [][]string{{"platform", "login"}, {"platform", "identity"}, {"login", "--provider", "corp"}} {
		code, _, errw := run(context.Background(), append(args, "--data-dir", t.TempDir())...)
		is.Equal(code, ExitNotRunning)
		is.True(strings.Contains(errw, "not running"))
	}
}

// TestServePrintsLocalWorkspace: a fresh directory gets a workspace whose
// ids serve prints.
func TestServePrintsLocalWorkspace(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := run(ctx, "serve", "--data-dir", dir, "--port", "0", "--services-port", "0", "--log-level", "error")
		done <- res{c, o, e}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := daemon.ReadState(dir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, _ := run(context.Background(), "platform", "identity", "--data-dir", dir, "--json")
	is.Equal(code, 0)
	var id identity.Identity
	is.NoErr(json.Unmarshal([]byte(out), &id))
	cancel()
	r := <-done
	is.Equal(r.code, 0)
	ws := id.Workspaces[0]
	is.True(strings.Contains(r.out, "tenant:       "+ws.ID))
	is.True(strings.Contains(r.out, "project:      "+ws.Projects[0].ID))
	is.True(strings.Contains(r.out, "environment:  "+ws.Projects[0].Environments[0].ID))
}

func TestTokenCacheKeychain(t *testing.T) {
	is := is.New(t)
	defer keyring.MockInitWithError(errors.New("tests never use the OS keychain"))
	dir := t.TempDir()
	keyring.MockInit()
	c := &tokenCache{dir: dir, keyring: true}
	tok := &cachedToken{Provider: "corp", AccessToken: "x.y.z", ExpiresAt: time.Now().Add(time.Hour)}
	is.NoErr(c.Put(tok))
	_, err := os.Stat(filepath.Join(dir, tokenCacheFile))
	is.True(os.IsNotExist(err)) // in the keychain, not the file
	got, err := c.Get("corp")
	is.NoErr(err)
	is.Equal(got.AccessToken, "x.y.z")
	found, err := c.Delete("corp")
	is.NoErr(err)
	is.True(found)
	got, err = c.Get("corp")
	is.NoErr(err)
	is.True(got == nil)

	// Without a keychain the 0600 file is used.
	keyring.MockInitWithError(errors.New("no keychain"))
	is.NoErr(c.Put(tok))
	got, err = c.Get("corp")
	is.NoErr(err)
	is.Equal(got.AccessToken, "x.y.z")
	_, err = os.Stat(filepath.Join(dir, tokenCacheFile))
	is.NoErr(err)
	is.True(!(&cachedToken{AccessToken: "a", ExpiresAt: time.Now().Add(10 * time.Second)}).usable(time.Now()))
}

// TestEveryPlatformCommandHasHelp walks the whole platform tree.
func TestEveryPlatformCommandHasHelp(t *testing.T) {
	a := &app{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" || c.Example == "" || c.Long == "" {
			t.Errorf("%q lacks Short, Long or Example", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(a.platformCmd())
	walk(a.loginCmd())
}

func getJSON(t *testing.T, url, tok string, out any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
