package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/cli/local"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/identity"
)

// fakeOIDC is an external identity provider with discovery, JWKS, device
// authorization, authorization code with PKCE, and refresh tokens.
type fakeOIDC struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	sub string

	mu         sync.Mutex
	pending    int // authorization_pending answers before success
	polls      int
	refreshes  int
	challenges map[string]string // code -> S256 challenge
	pkceOK     bool
	ttl        int64
}

func newFakeOIDC(t *testing.T, sub string) *fakeOIDC {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeOIDC{key: key, sub: sub, challenges: map[string]string{}, ttl: 600}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, 200, map[string]string{"issuer": f.srv.URL, "jwks_uri": f.srv.URL + "/jwks",
			"device_authorization_endpoint": f.srv.URL + "/device", "authorization_endpoint": f.srv.URL + "/authorize",
			"token_endpoint": f.srv.URL + "/token"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, 200, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /device", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") != "cli" || r.FormValue("scope") != "openid" {
			writeTestJSON(w, 400, map[string]string{"error": "invalid_request"})
			return
		}
		writeTestJSON(w, 200, map[string]any{"device_code": "dc-1", "user_code": "WDJB-MJHT", "verification_uri": f.srv.URL + "/activate",
			"interval": 1, "expires_in": 60})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("response_type") != "code" || q.Get("client_id") != "cli" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "bad authorize request", 400)
			return
		}
		f.mu.Lock()
		f.challenges["code-1"] = q.Get("code_challenge")
		f.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=code-1&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.FormValue("grant_type") {
		case "urn:ietf:params:oauth:grant-type:device_code":
			f.polls++
			if r.FormValue("device_code") != "dc-1" {
				writeTestJSON(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
			if f.polls <= f.pending {
				writeTestJSON(w, 400, map[string]string{"error": "authorization_pending"})
				return
			}
		case "authorization_code":
			ch, ok := f.challenges[r.FormValue("code")]
			f.pkceOK = ok && pkceChallenge(r.FormValue("code_verifier")) == ch
			if !f.pkceOK {
				writeTestJSON(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
		case "refresh_token":
			f.refreshes++
			if r.FormValue("refresh_token") != "rt-1" {
				writeTestJSON(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
		default:
			writeTestJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		writeTestJSON(w, 200, map[string]any{"access_token": f.token(), "token_type": "Bearer", "expires_in": f.ttl, "refresh_token": "rt-1"})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOIDC) token() string {
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: f.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k"))
	now := time.Now()
	tok, _ := jwt.Signed(signer).Claims(map[string]any{"typ": "Bearer", "iss": f.srv.URL, "aud": "platform-api", "azp": "cli",
		"sub": f.sub, "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}).Serialize()
	return tok
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// browser is a stderr that "opens" the first authorization URL printed.
type browser struct {
	prefix string
	mu     sync.Mutex
	buf    bytes.Buffer
	once   sync.Once
	status chan int
}

func (b *browser) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	s := b.buf.String()
	b.mu.Unlock()
	if i := strings.Index(s, b.prefix); i >= 0 {
		u := strings.Fields(s[i:])[0]
		b.once.Do(func() {
			go func() {
				res, err := http.Get(u) // follows the redirect to the CLI's loopback address
				if err != nil {
					b.status <- 0
					return
				}
				res.Body.Close()
				b.status <- res.StatusCode
			}()
		})
	}
	return len(p), nil
}

func (b *browser) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLoginWithExternalProviders(t *testing.T) {
	is := is.New(t)
	corp := newFakeOIDC(t, "alice")
	corp.pending = 1
	corp.ttl = 1 // expires at once: the next command refreshes
	web := newFakeOIDC(t, "walter")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`platform:
  identity:
    providers:
      corp:
        display-name: Corp SSO
        issuer: %[1]s
        jwks-url: %[1]s/jwks
        audience: platform-api
        clients: {cli: {kind: human}}
      web:
        issuer: %[2]s
        jwks-url: %[2]s/jwks
        audience: platform-api
        clients: {cli: {kind: human}}
    sign-in:
      corp: {provider: corp, client: cli, scopes: [openid]}
      web: {provider: web, client: cli, flow: authorization-code, scopes: [openid, profile]}
`, corp.srv.URL, web.srv.URL)
	is.NoErr(os.WriteFile(filepath.Join(dir, daemon.ConfigFile), []byte(cfg), 0o600))
	_, stop := serveInProcess(t, dir)
	defer stop()
	ctx := context.Background()

	// Device flow: the code is shown, the sign-in is not linked yet.
	code, _, errw := run(ctx, "login", "--data-dir", dir, "--provider", "corp")
	is.Equal(code, 0)
	is.True(strings.Contains(errw, "enter the code WDJB-MJHT"))
	is.True(strings.Contains(errw, "not linked to a platform principal"))
	is.True(strings.Contains(errw, "--issuer "+corp.srv.URL+" --subject alice"))
	is.True(corp.polls >= 2) // authorization_pending, then the token

	// An administrator links it and grants access; the token then works.
	code, out, _ := run(ctx, "platform", "principal", "create", "--data-dir", dir, "--issuer", corp.srv.URL, "--subject", "alice", "--json")
	is.Equal(code, 0)
	var alice identity.Principal
	is.NoErr(json.Unmarshal([]byte(out), &alice))
	code, out, _ = run(ctx, "platform", "identity", "--data-dir", dir, "--json")
	is.Equal(code, 0)
	var op identity.Identity
	is.NoErr(json.Unmarshal([]byte(out), &op))
	code, _, _ = run(ctx, "platform", "grant", "--data-dir", dir, "--principal", alice.ID, "--tenant", op.Workspaces[0].ID, "--role", "viewer")
	is.Equal(code, 0)
	code, out, _ = run(ctx, "platform", "--provider", "corp", "identity", "--data-dir", dir, "--json")
	is.Equal(code, 0)
	var id identity.Identity
	is.NoErr(json.Unmarshal([]byte(out), &id))
	is.Equal(id.PrincipalID, alice.ID)
	is.Equal(len(id.Workspaces), 1)
	is.True(corp.refreshes >= 1) // the expired token was renewed with the refresh token
	// Alice is a viewer: provisioning is refused.
	code, _, errw = run(ctx, "platform", "--provider", "corp", "project", "create", "--data-dir", dir, "--tenant", op.Workspaces[0].ID, "--name", "x")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-FORBIDDEN"))

	// Authorization code with PKCE: the URL is "opened", the redirect lands
	// on the CLI's loopback address.
	b := &browser{prefix: web.srv.URL + "/authorize?", status: make(chan int, 1)}
	var stdout bytes.Buffer
	code = ExecuteWith(ctx, local.Side{}, Build{Version: "test"}, []string{"login", "--data-dir", dir, "--provider", "web", "--timeout", "30s", "--json"}, &stdout, b)
	is.Equal(code, 0)
	is.Equal(<-b.status, 200)
	web.mu.Lock()
	is.True(web.pkceOK)
	web.mu.Unlock()
	var unlinked map[string]any
	is.NoErr(json.Unmarshal(stdout.Bytes(), &unlinked))
	is.Equal(unlinked["linked"], false)
	is.Equal(unlinked["subject"], "walter")

	// Unknown provider.
	code, _, errw = run(ctx, "login", "--data-dir", dir, "--provider", "nope")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, `no sign-in entry for provider "nope"`))
	// A provider without a cached sign-in.
	code, _, errw = run(ctx, "platform", "--provider", "other", "identity", "--data-dir", dir)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "bridge login --provider other"))
}
