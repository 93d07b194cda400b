package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	testIssuer   = "https://idp.example.test/realms/platform"
	testAudience = "platform-api"
	testClient   = "bridge-cli"
)

// testKeys are generated once per test binary; key generation dominates
// otherwise.
var testKeys = sync.OnceValue(func() []*rsa.PrivateKey {
	keys := make([]*rsa.PrivateKey, 3)
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

var testECKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

// fakeClock is an adjustable clock for the verifier and IdP.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// jwksServer serves a replaceable JWKS document and counts requests.
type jwksServer struct {
	*httptest.Server
	mu    sync.Mutex
	body  []byte
	code  int
	delay time.Duration
	hits  atomic.Int64
}

func newJWKSServer(t testing.TB, keys ...jose.JSONWebKey) *jwksServer {
	t.Helper()
	s := &jwksServer{code: http.StatusOK}
	s.setKeys(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		body, code, delay := s.body, s.code, s.delay
		s.mu.Unlock()
		if delay > 0 {
			// A client that gives up ends the wait, so a long delay does
			// not hold up Close at cleanup.
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) setKeys(t testing.TB, keys ...jose.JSONWebKey) {
	t.Helper()
	body, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	s.setBody(body, http.StatusOK)
}

func (s *jwksServer) setBody(body []byte, code int) {
	s.mu.Lock()
	s.body, s.code = body, code
	s.mu.Unlock()
}

func (s *jwksServer) setDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

func pubJWK(k *rsa.PrivateKey, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}
}

// validClaims returns a payload accepted by the standard test verifier.
func validClaims(now time.Time) map[string]any {
	return map[string]any{
		"typ":   "Bearer",
		"iss":   testIssuer,
		"aud":   testAudience,
		"azp":   testClient,
		"sub":   "user-1",
		"iat":   now.Unix(),
		"exp":   now.Add(10 * time.Minute).Unix(),
		"jti":   "id-1",
		"scope": "openid profile",
	}
}

// sign creates a compact JWS over claims with key, alg and optional kid.
func sign(t testing.TB, key any, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// signRaw signs payload bytes as they are (sign re-encodes a claims map,
// which cannot repeat a claim).
func signRaw(t testing.TB, key any, kid, payload string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// newTestVerifier builds a verifier for testIssuer fetching from srv.
func newTestVerifier(t testing.TB, url string, clock *fakeClock, mod ...func(*Issuer)) *Verifier {
	t.Helper()
	iss := Issuer{
		Issuer:    testIssuer,
		JWKSURL:   url,
		Audience:  testAudience,
		ClientIDs: []string{testClient, "other-allowed-client"},
	}
	for _, m := range mod {
		m(&iss)
	}
	v, err := NewVerifier(VerifierOptions{Issuers: []Issuer{iss}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitIdle waits until no key fetch of issuer is in flight.
func waitIdle(t testing.TB, v *Verifier, issuer string) {
	t.Helper()
	c := v.issuers[issuer].cache
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		idle := c.inflight == nil
		c.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("key fetch still in flight")
}

// waitHits waits until srv has served at least n requests.
func waitHits(t testing.TB, srv *jwksServer, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for srv.hits.Load() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := srv.hits.Load(); got < n {
		t.Fatalf("JWKS hits = %d, want >= %d", got, n)
	}
}

func verifyReason(v *Verifier, tok string) Reason {
	_, err := v.Verify(context.Background(), tok)
	if err == nil {
		return ""
	}
	return ReasonOf(err)
}
