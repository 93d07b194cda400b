package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"
)

func TestUnknownKidSingleCoordinatedRefresh(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	srv := newJWKSServer(t, pubJWK(keys[0], "k0"))
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	ctx := context.Background()

	// Warm the cache with k0.
	_, err := v.Verify(ctx, sign(t, keys[0], jose.RS256, "k0", validClaims(clock.Now())))
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(1))

	// Rotation: the provider now also publishes k1. A slow response makes
	// the 50 callers overlap with the fetch.
	srv.setKeys(t, pubJWK(keys[0], "k0"), pubJWK(keys[1], "k1"))
	srv.setDelay(50 * time.Millisecond)
	tok1 := sign(t, keys[1], jose.RS256, "k1", validClaims(clock.Now()))
	var wg sync.WaitGroup
	var failures atomic.Int64
	start := make(chan struct{})
	for range 50 {
		wg.Go(func() {
			<-start
			if _, err := v.Verify(ctx, tok1); err != nil {
				failures.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	is.Equal(failures.Load(), int64(0)) // rotation picked up by everyone
	is.Equal(srv.hits.Load(), int64(2)) // exactly one refresh
	srv.setDelay(0)

	// A second unknown kid within the 5 s cooldown does not refetch.
	clock.Advance(4 * time.Second)
	tok2 := sign(t, keys[2], jose.RS256, "k2", validClaims(clock.Now()))
	_, err = v.Verify(ctx, tok2)
	is.Equal(ReasonOf(err), ReasonUnknownKeyID)
	is.True(errors.Is(err, ReasonJWKSCooldown))
	is.Equal(srv.hits.Load(), int64(2))

	// After the cooldown an unknown kid refreshes again (once).
	clock.Advance(1 * time.Second)
	_, err = v.Verify(ctx, tok2)
	is.Equal(ReasonOf(err), ReasonUnknownKeyID)
	is.Equal(srv.hits.Load(), int64(3))
	_, err = v.Verify(ctx, tok2)
	is.Equal(ReasonOf(err), ReasonUnknownKeyID)
	is.Equal(srv.hits.Load(), int64(3))
}

func TestUnknownKidConcurrentNeverFound(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	srv := newJWKSServer(t, pubJWK(keys[0], "k0"))
	srv.setDelay(20 * time.Millisecond)
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	ctx := context.Background()
	is.NoErr(v.Refresh(ctx, testIssuer))
	is.Equal(srv.hits.Load(), int64(1))

	tok := sign(t, keys[1], jose.RS256, "ghost", validClaims(clock.Now()))
	var wg sync.WaitGroup
	var unknown atomic.Int64
	for range 50 {
		wg.Go(func() {
			if _, err := v.Verify(ctx, tok); ReasonOf(err) == ReasonUnknownKeyID {
				unknown.Add(1)
			}
		})
	}
	wg.Wait()
	is.Equal(unknown.Load(), int64(50))
	is.Equal(srv.hits.Load(), int64(2)) // one refresh for all 50
}

func TestColdStartConcurrentCallersShareFetch(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	srv := newJWKSServer(t, pubJWK(keys[0], "k0"))
	srv.setDelay(30 * time.Millisecond)
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	tok := sign(t, keys[0], jose.RS256, "k0", validClaims(clock.Now()))
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range 20 {
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), tok); err != nil {
				failures.Add(1)
			}
		})
	}
	wg.Wait()
	is.Equal(failures.Load(), int64(0))
	is.Equal(srv.hits.Load(), int64(1))
}

func TestKeyFreshnessAndRotation(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	srv := newJWKSServer(t, pubJWK(keys[0], "k0"))
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	ctx := context.Background()
	mint := func(k *rsa.PrivateKey, kid string) string {
		// Long-lived so that clock jumps do not expire it.
		c := validClaims(clock.Now())
		c["exp"] = clock.Now().Add(24 * time.Hour).Unix()
		return sign(t, k, jose.RS256, kid, c)
	}
	tok0 := mint(keys[0], "k0")

	_, err := v.Verify(ctx, tok0)
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(1))

	// The provider rotates: k0 removed, k1 published. Within 300 s the
	// cached set is still used.
	srv.setKeys(t, pubJWK(keys[1], "k1"))
	clock.Advance(299 * time.Second)
	_, err = v.Verify(ctx, tok0)
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(1))

	// At 300 s the set is stale: served once more while one background
	// refresh runs.
	clock.Advance(1 * time.Second)
	_, err = v.Verify(ctx, tok0)
	is.NoErr(err)
	waitHits(t, srv, 2)
	waitIdle(t, v, testIssuer)
	is.Equal(srv.hits.Load(), int64(2))

	// Refreshed: k0 is gone (its kid is now unknown: one refresh, then
	// rejected), k1 verifies without another fetch.
	_, err = v.Verify(ctx, mint(keys[1], "k1"))
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(2))
	_, err = v.Verify(ctx, tok0)
	is.Equal(ReasonOf(err), ReasonUnknownKeyID)
	is.Equal(srv.hits.Load(), int64(3))
}

func TestFailedRefreshKeepsKeysUntilMaxStale(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	srv := newJWKSServer(t, pubJWK(keys[0], "k0"))
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	ctx := context.Background()
	c := validClaims(clock.Now())
	c["exp"] = clock.Now().Add(48 * time.Hour).Unix()
	tok := sign(t, keys[0], jose.RS256, "k0", c)

	_, err := v.Verify(ctx, tok)
	is.NoErr(err)
	srv.setBody([]byte(`oops`), http.StatusInternalServerError)

	clock.Advance(KeyFreshness)
	_, err = v.Verify(ctx, tok) // stale keys still serve
	is.NoErr(err)
	waitHits(t, srv, 2)
	waitIdle(t, v, testIssuer)

	// Within the failure cooldown no new fetch starts.
	_, err = v.Verify(ctx, tok)
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(2))

	// Past the max-stale bound the old keys are no longer trusted.
	clock.Advance(DefaultMaxStale)
	_, err = v.Verify(ctx, tok)
	is.Equal(ReasonOf(err), ReasonKeysUnavailable)
	is.True(errors.Is(err, ReasonJWKSStatus))
	is.Equal(srv.hits.Load(), int64(3))

	// The provider recovers: the next fetch (after the cooldown) succeeds.
	srv.setKeys(t, pubJWK(keys[0], "k0"))
	clock.Advance(RefreshCooldown)
	_, err = v.Verify(ctx, tok)
	is.NoErr(err)
}

func TestColdStartFailureCooldown(t *testing.T) {
	is := is.New(t)
	srv := newJWKSServer(t)
	srv.setBody([]byte(`{}`), http.StatusServiceUnavailable)
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	tok := sign(t, testKeys()[0], jose.RS256, "k0", validClaims(clock.Now()))

	_, err := v.Verify(context.Background(), tok)
	is.Equal(ReasonOf(err), ReasonKeysUnavailable)
	is.True(errors.Is(err, ReasonJWKSStatus))
	_, err = v.Verify(context.Background(), tok)
	is.True(errors.Is(err, ReasonJWKSCooldown))
	is.Equal(srv.hits.Load(), int64(1))
	clock.Advance(RefreshCooldown)
	_, err = v.Verify(context.Background(), tok)
	is.Equal(ReasonOf(err), ReasonKeysUnavailable)
	is.Equal(srv.hits.Load(), int64(2))
}

// jwksWithPadding returns a JWKS document of exactly size bytes.
func jwksWithPadding(t *testing.T, keys []jose.JSONWebKey, size int) []byte {
	t.Helper()
	body, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	// Insert whitespace before the closing brace (valid JSON).
	if size < len(body) {
		t.Fatalf("JWKS already %d bytes", len(body))
	}
	return append(append(body[:len(body)-1:len(body)-1], []byte(strings.Repeat(" ", size-len(body)))...), '}')
}

func TestJWKSLimits(t *testing.T) {
	k0 := testKeys()[0]
	many := func(n int) []jose.JSONWebKey {
		out := make([]jose.JSONWebKey, n)
		for i := range out {
			out[i] = pubJWK(k0, fmt.Sprintf("k%d", i))
		}
		return out
	}
	cases := []struct {
		name  string
		body  func(t *testing.T) []byte
		inner Reason // "" = accepted
	}{
		{"exactly 256 KiB", func(t *testing.T) []byte { return jwksWithPadding(t, many(1), MaxJWKSBytes) }, ""},
		{"256 KiB + 1", func(t *testing.T) []byte { return jwksWithPadding(t, many(1), MaxJWKSBytes+1) }, ReasonJWKSTooLarge},
		{"64 keys", func(t *testing.T) []byte { b, _ := json.Marshal(jose.JSONWebKeySet{Keys: many(64)}); return b }, ""},
		{"65 keys", func(t *testing.T) []byte { b, _ := json.Marshal(jose.JSONWebKeySet{Keys: many(65)}); return b }, ReasonJWKSTooManyKeys},
		{"not JSON", func(*testing.T) []byte { return []byte("<html>") }, ReasonJWKSInvalid},
		{"no keys member", func(*testing.T) []byte { return []byte(`{"foo":[]}`) }, ReasonJWKSInvalid},
		{"empty set", func(*testing.T) []byte { return []byte(`{"keys":[]}`) }, ReasonJWKSNoKeys},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			srv := newJWKSServer(t)
			srv.setBody(tc.body(t), http.StatusOK)
			clock := newFakeClock()
			v := newTestVerifier(t, srv.URL, clock)
			_, err := v.Verify(context.Background(), sign(t, k0, jose.RS256, "k0", validClaims(clock.Now())))
			if tc.inner == "" {
				is.NoErr(err)
				return
			}
			is.Equal(ReasonOf(err), ReasonKeysUnavailable)
			is.True(errors.Is(err, tc.inner))
		})
	}
}

func TestJWKSOnlyUsableKeysKept(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	is.NoErr(err)
	private, err := json.Marshal(jose.JSONWebKey{Key: keys[1], KeyID: "private", Algorithm: "RS256", Use: "sig"})
	is.NoErr(err)
	encKey, err := json.Marshal(jose.JSONWebKey{Key: &keys[0].PublicKey, KeyID: "enc", Use: "enc"})
	is.NoErr(err)
	smallKey, err := json.Marshal(jose.JSONWebKey{Key: &small.PublicKey, KeyID: "small", Use: "sig"})
	is.NoErr(err)
	good, err := json.Marshal(pubJWK(keys[0], "good"))
	is.NoErr(err)
	body := `{"keys":[` + strings.Join([]string{
		string(good),
		string(private),
		string(encKey),
		string(smallKey),
		`{"kty":"oct","kid":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}`,
		`{"kty":"OKP","kid":"okp","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`,
		`{"kty":"RSA","kid":"broken","n":"!!","e":"AQAB"}`,
		`"not an object"`,
	}, ",") + `]}`
	srv := newJWKSServer(t)
	srv.setBody([]byte(body), http.StatusOK)
	clock := newFakeClock()
	// Kid-less tokens work only if exactly one key survived the filter.
	v := newTestVerifier(t, srv.URL, clock)
	now := clock.Now()
	_, err = v.Verify(context.Background(), sign(t, keys[0], jose.RS256, "", validClaims(now)))
	is.NoErr(err)
	is.Equal(verifyReason(v, sign(t, keys[1], jose.RS256, "private", validClaims(now))), ReasonUnknownKeyID)
	clock.Advance(RefreshCooldown)
	is.Equal(verifyReason(v, sign(t, keys[0], jose.RS256, "enc", validClaims(now))), ReasonUnknownKeyID)
	clock.Advance(RefreshCooldown)
	is.Equal(verifyReason(v, sign(t, small, jose.RS256, "small", validClaims(now))), ReasonUnknownKeyID)
}

func TestJWKSRedirectNotFollowed(t *testing.T) {
	is := is.New(t)
	k0 := testKeys()[0]
	target := newJWKSServer(t, pubJWK(k0, "k0"))
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	clock := newFakeClock()
	v := newTestVerifier(t, redirector.URL, clock)
	_, err := v.Verify(context.Background(), sign(t, k0, jose.RS256, "k0", validClaims(clock.Now())))
	is.Equal(ReasonOf(err), ReasonKeysUnavailable)
	is.True(errors.Is(err, ReasonJWKSRedirect))
	is.Equal(target.hits.Load(), int64(0)) // redirect target never contacted
}

func TestNonConfiguredURLNeverFetched(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	configured := newJWKSServer(t, pubJWK(keys[0], "k0"))
	attacker := newJWKSServer(t, pubJWK(keys[2], "evil"))
	clock := newFakeClock()
	v := newTestVerifier(t, configured.URL, clock)
	now := clock.Now()

	// Header-supplied key locations (jku, x5u) and embedded keys are ignored.
	signWithHeaders := func(iss string) string {
		c := validClaims(now)
		c["iss"] = iss
		opts := (&jose.SignerOptions{}).WithType("JWT").
			WithHeader("kid", "evil").
			WithHeader("jku", attacker.URL).
			WithHeader("x5u", attacker.URL)
		opts.EmbedJWK = false
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: keys[2]}, opts)
		is.NoErr(err)
		tok, err := signer.Sign(mustJSON(t, c))
		is.NoErr(err)
		s, err := tok.CompactSerialize()
		is.NoErr(err)
		return s
	}
	is.Equal(verifyReason(v, signWithHeaders(testIssuer)), ReasonUnknownKeyID)
	is.Equal(verifyReason(v, signWithHeaders(attacker.URL)), ReasonIssuer)

	embedded := func() string {
		opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("JWT")
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: keys[2]}, opts)
		is.NoErr(err)
		tok, err := signer.Sign(mustJSON(t, validClaims(now)))
		is.NoErr(err)
		s, err := tok.CompactSerialize()
		is.NoErr(err)
		return s
	}()
	r := verifyReason(v, embedded)
	is.True(r == ReasonKeyIDRequired || r == ReasonSignature) // never accepted via its own jwk
	is.True(r != "")
	is.Equal(attacker.hits.Load(), int64(0))
	is.True(configured.hits.Load() >= 1)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeyFetchTimeout(t *testing.T) {
	// The production bound is KeyFetchTimeout (5 s, asserted in
	// TestKeyClientConfiguration); a short one keeps this test fast.
	is := is.New(t)
	srv := newJWKSServer(t, pubJWK(testKeys()[0], "k0"))
	// The server would answer after 10 s; the 100 ms timeout must cut the
	// fetch long before (2 s leaves room for a loaded -race run).
	srv.setDelay(10 * time.Second)
	c := &keyCache{
		url:       srv.URL,
		client:    newKeyHTTPClient(nil, 100*time.Millisecond),
		now:       time.Now,
		timeout:   100 * time.Millisecond,
		freshness: KeyFreshness,
		cooldown:  RefreshCooldown,
		maxStale:  DefaultMaxStale,
	}
	start := time.Now()
	_, err := c.get(context.Background())
	is.True(errors.Is(err, ReasonJWKSFetch))
	is.True(time.Since(start) < 2*time.Second)
}

func TestCallerCancellationDoesNotAbortSharedFetch(t *testing.T) {
	is := is.New(t)
	k0 := testKeys()[0]
	srv := newJWKSServer(t, pubJWK(k0, "k0"))
	// The keys come 1 s after the caller's 10 ms deadline: a caller stalled
	// on a loaded machine still gives up before the fetch completes.
	srv.setDelay(time.Second)
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	tok := sign(t, k0, jose.RS256, "k0", validClaims(clock.Now()))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := v.Verify(ctx, tok)
	is.Equal(ReasonOf(err), ReasonKeysUnavailable)
	is.True(errors.Is(err, context.DeadlineExceeded))

	// The fetch continued for the others and populated the cache.
	waitIdle(t, v, testIssuer)
	_, err = v.Verify(context.Background(), tok)
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(1))
}
