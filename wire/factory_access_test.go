package wire_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
)

const (
	corpIssuer   = "https://sso.example.test/realms/acme"
	corpAudience = "platform-api"
	corpClient   = "corp-cli"
)

// corpIdP is an external identity provider: its JWKS served on loopback by
// httptest, its tokens signed by the test.
type corpIdP struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newCorpIdP(t *testing.T) *corpIdP {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "corp-1", Algorithm: "RS256", Use: "sig"}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(srv.Close)
	return &corpIdP{srv: srv, key: key}
}

func (x *corpIdP) yaml() string {
	return fmt.Sprintf(`platform:
  identity:
    providers:
      corp:
        issuer: %s
        jwks-url: %s
        audience: %s
        clients:
          %s: {kind: human}
`, corpIssuer, x.srv.URL, corpAudience, corpClient)
}

// token signs a token for sub with key (the provider's unless given),
// expiring after ttl.
func (x *corpIdP) token(t *testing.T, sub string, key *rsa.PrivateKey, ttl time.Duration) string {
	t.Helper()
	if key == nil {
		key = x.key
	}
	now := time.Now()
	claims := map[string]any{"typ": "Bearer", "iss": corpIssuer, "aud": corpAudience, "azp": corpClient, "sub": sub,
		"iat": now.Add(-time.Hour).Unix(), "exp": now.Add(ttl).Unix()}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "corp-1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testRepo is a git repository with one commit.
func testRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "--all"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func problemCode(t *testing.T, r res) string {
	t.Helper()
	var p struct{ Code string }
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem %d %s: %v", r.status, r.body, err)
	}
	return p.Code
}

func runIDs(t *testing.T, r res) ([]string, string) {
	t.Helper()
	var page struct {
		Runs       []struct{ ID string }
		NextCursor string `json:"next_cursor"`
	}
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, run := range page.Runs {
		ids = append(ids, run.ID)
	}
	return ids, page.NextCursor
}

// TestFactoryRunsReadByPlatformPrincipals: a platform principal reads the
// factory runs bound to a project where its current grants hold run.read,
// and only those (docs/factory-api.md, "Access"); others are 404 to it,
// revoking the grant applies at the next request, routes that change runs
// stay the owner's (403), bad tokens are 401, and the owner keeps
// everything.
func TestFactoryRunsReadByPlatformPrincipals(t *testing.T) {
	t.Parallel()
	idp := newCorpIdP(t)
	e := newDaemonEnv(t, idp.yaml())
	repo := testRepo(t)
	runs := e.services + "/api/v1/runs"
	bound := map[string]string{"tenant": e.ws.TenantID, "project": e.ws.ProjectID}
	create := func(project any) string {
		body := map[string]any{"repo": repo, "mode": "test", "verify": []string{"true"}}
		if project != nil {
			body["project"] = project
		}
		return e.must(201, e.do("POST", runs, e.owner, body))["id"].(string)
	}
	mine := create(bound)
	unbound := create(nil)
	elsewhere := create(map[string]string{"tenant": uuid.NewString(), "project": uuid.NewString()})
	mine2 := create(bound)
	for _, id := range []string{mine, unbound, elsewhere, mine2} {
		deadline := time.Now().Add(30 * time.Second)
		for e.must(200, e.do("GET", runs+"/"+id, e.owner, nil))["state"] != "succeeded" {
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not succeed: %s", id, e.do("GET", runs+"/"+id, e.owner, nil).body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if r := e.do("POST", runs, e.owner, map[string]any{"repo": repo, "mode": "test", "project": map[string]string{"tenant": e.ws.TenantID}}); r.status != 422 || problemCode(t, r) != "FA-VALIDATION" {
		t.Fatalf("project without its id: %d %s", r.status, r.body)
	}

	// alice is a viewer of the local project; bob has no grant.
	link := func(sub string) string {
		return e.must(201, e.do("POST", e.services+"/admin/principals", e.owner, map[string]string{"kind": "human", "issuer": corpIssuer, "subject": sub}))["id"].(string)
	}
	alice, bob := link("alice"), link("bob")
	r := e.do("POST", e.services+"/admin/grants", e.operator(), map[string]any{"principal_id": alice,
		"scope": map[string]string{"tenant": e.ws.TenantID, "project": e.ws.ProjectID}, "role": "viewer"})
	var grant string
	if r.status != 200 || json.Unmarshal(r.body, &grant) != nil {
		t.Fatalf("grant: %d %s", r.status, r.body)
	}
	aliceTok := idp.token(t, "alice", nil, 10*time.Minute)
	bobTok := idp.token(t, "bob", nil, 10*time.Minute)

	reads := []string{"", "/plan", "/journal", "/worker-messages", "/diff", "/artifacts/changes.zip"}
	for _, p := range reads {
		want := e.do("GET", runs+"/"+mine+p, e.owner, nil).status
		if got := e.do("GET", runs+"/"+mine+p, aliceTok, nil); got.status != want || want != 200 && want != 404 {
			t.Errorf("alice GET %s: %d %s, owner %d", p, got.status, got.body, want)
		}
		for _, id := range []string{unbound, elsewhere} {
			if got := e.do("GET", runs+"/"+id+p, aliceTok, nil); got.status != 404 || problemCode(t, got) != "FA-NOT-FOUND" {
				t.Errorf("alice GET %s of another run: %d %s", p, got.status, got.body)
			}
		}
		if got := e.do("GET", runs+"/"+mine+p, bobTok, nil); got.status != 404 {
			t.Errorf("bob GET %s: %d %s", p, got.status, got.body)
		}
	}
	if got := e.must(200, e.do("GET", runs+"/"+mine, aliceTok, nil))["project"]; fmt.Sprint(got) != fmt.Sprint(map[string]any{"tenant": e.ws.TenantID, "project": e.ws.ProjectID}) {
		t.Errorf("run project = %v", got)
	}

	// The list shows alice her project's runs only, page by page.
	ids, cursor := runIDs(t, e.do("GET", runs+"?limit=1", aliceTok, nil))
	if len(ids) != 1 || ids[0] != mine2 || cursor == "" {
		t.Fatalf("alice page 1: %v %q", ids, cursor)
	}
	ids, cursor = runIDs(t, e.do("GET", runs+"?limit=1&cursor="+url.QueryEscape(cursor), aliceTok, nil))
	if len(ids) != 1 || ids[0] != mine || cursor != "" {
		t.Fatalf("alice page 2: %v %q", ids, cursor)
	}
	if ids, _ := runIDs(t, e.do("GET", runs, bobTok, nil)); len(ids) != 0 {
		t.Errorf("bob lists %v", ids)
	}

	// Routes that change runs are the owner's.
	for _, w := range []struct{ path, body string }{{"", `{"repo":"` + repo + `","mode":"test"}`}, {"/" + mine + "/cancel", ""},
		{"/" + mine + "/retry", ""}, {"/" + mine + "/reconcile", `{"note":"x"}`}, {"/" + unbound + "/resume", ""}} {
		if got := e.do("POST", runs+w.path, aliceTok, w.body); got.status != 403 || problemCode(t, got) != "FA-FORBIDDEN" {
			t.Errorf("alice POST %s: %d %s", w.path, got.status, got.body)
		}
	}

	// A disabled principal is refused.
	if got := e.do("POST", e.services+"/admin/principals/"+bob+"/disable", e.operator(), nil); got.status != 200 {
		t.Fatalf("disable: %d %s", got.status, got.body)
	}
	if got := e.do("GET", runs, bobTok, nil); got.status != 403 || problemCode(t, got) != "FA-FORBIDDEN" {
		t.Errorf("disabled bob lists: %d %s", got.status, got.body)
	}

	// Forged, expired and unlinked tokens are 401 on reads and writes.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"forged": idp.token(t, "alice", other, 10*time.Minute), "expired": idp.token(t, "alice", nil, -10*time.Minute),
		"unlinked": idp.token(t, "carol", nil, 10*time.Minute), "garbage": "not-a-jwt",
	} {
		for _, rq := range [][2]string{{"GET", runs + "/" + mine}, {"GET", runs}, {"POST", runs + "/" + mine + "/cancel"}} {
			if got := e.do(rq[0], rq[1], tok, nil); got.status != 401 || problemCode(t, got) != "FA-UNAUTHORIZED" {
				t.Errorf("%s token %s %s: %d %s", name, rq[0], rq[1], got.status, got.body)
			}
		}
	}

	// Revoking the grant applies at alice's next request.
	if got := e.do("DELETE", e.services+"/admin/grants/"+grant, e.operator(), nil); got.status != 200 {
		t.Fatalf("revoke: %d %s", got.status, got.body)
	}
	if got := e.do("GET", runs+"/"+mine, aliceTok, nil); got.status != 404 {
		t.Errorf("alice after revocation: %d %s", got.status, got.body)
	}
	if ids, _ := runIDs(t, e.do("GET", runs, aliceTok, nil)); len(ids) != 0 {
		t.Errorf("alice lists %v after revocation", ids)
	}

	// The owner reads and changes everything; a retry keeps the project.
	if ids, _ := runIDs(t, e.do("GET", runs, e.owner, nil)); len(ids) != 4 {
		t.Errorf("owner lists %v", ids)
	}
	retry := e.must(201, e.do("POST", runs+"/"+mine+"/retry", e.owner, nil))
	if fmt.Sprint(retry["project"]) != fmt.Sprint(map[string]any{"tenant": e.ws.TenantID, "project": e.ws.ProjectID}) {
		t.Errorf("retry project = %v", retry["project"])
	}
}
