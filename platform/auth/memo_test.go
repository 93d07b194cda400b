package auth

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"
)

func TestSignatureMemoNeverBypassesChecks(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	srv := newJWKSServer(t, pubJWK(keys[0], "k0"))
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	ctx := context.Background()
	c := validClaims(clock.Now())
	c["exp"] = clock.Now().Add(time.Hour).Unix()
	tok := sign(t, keys[0], jose.RS256, "k0", c)

	_, err := v.Verify(ctx, tok)
	is.NoErr(err)
	is.Equal(v.memo.len(), 1)
	_, err = v.Verify(ctx, tok) // memo hit
	is.NoErr(err)
	is.Equal(v.memo.len(), 1)

	// Different bytes (a corrupted signature) never match the memo.
	bad := tok[:len(tok)-2] + flip(tok[len(tok)-2]) + tok[len(tok)-1:]
	is.Equal(verifyReason(v, bad), ReasonSignature)

	// The provider replaces the key behind the same kid: after the refresh
	// the memo entry (bound to the old key object) no longer applies.
	srv.setKeys(t, pubJWK(keys[1], "k0"))
	clock.Advance(KeyFreshness)
	_, err = v.Verify(ctx, tok) // stale keys served, refresh started
	is.NoErr(err)
	waitHits(t, srv, 2)
	waitIdle(t, v, testIssuer)
	is.Equal(verifyReason(v, tok), ReasonSignature)

	// Expiry is checked on every call, memo or not.
	srv.setKeys(t, pubJWK(keys[0], "k0"))
	clock.Advance(KeyFreshness)
	_, _ = v.Verify(ctx, tok)
	waitHits(t, srv, 3)
	waitIdle(t, v, testIssuer)
	_, err = v.Verify(ctx, tok)
	is.NoErr(err)
	clock.Advance(time.Hour)
	is.Equal(verifyReason(v, tok), ReasonExpired)
}

func flip(b byte) string {
	if b == 'A' {
		return "B"
	}
	return "A"
}

func TestSignatureMemoBounded(t *testing.T) {
	is := is.New(t)
	m := newSigMemo(8)
	now := time.Now()
	key := &struct{}{}
	for i := range 20 {
		m.add(sha256.Sum256([]byte(strings.Repeat("x", i))), key, now.Add(time.Minute), now)
		is.True(m.len() <= 8)
	}
	last := sha256.Sum256([]byte(strings.Repeat("x", 19)))
	is.True(m.verified(last, key))
	is.True(!m.verified(last, &struct{ x int }{})) // other key object
	is.True(!m.verified(sha256.Sum256(nil), key))  // unknown token

	// Expired entries are dropped first when full.
	m = newSigMemo(2)
	m.add(sha256.Sum256([]byte("old")), key, now, now)
	m.add(sha256.Sum256([]byte("live")), key, now.Add(time.Hour), now)
	m.add(sha256.Sum256([]byte("new")), key, now.Add(time.Hour), now.Add(time.Second))
	is.True(m.verified(sha256.Sum256([]byte("live")), key))
	is.True(m.verified(sha256.Sum256([]byte("new")), key))
	is.True(!m.verified(sha256.Sum256([]byte("old")), key))
}

// A memo hit answers the claims the full check found, as a copy: a caller
// that changes them changes nothing for the next one.
func TestSignatureMemoHitAnswersCopiedClaims(t *testing.T) {
	is := is.New(t)
	key := testKeys()[0]
	clock := newFakeClock()
	v, ctx := newTestVerifier(t, newJWKSServer(t, pubJWK(key, "k0")).URL, clock), context.Background()
	claims := validClaims(clock.Now())
	claims["groups"] = []any{"a", "b"}
	tok := sign(t, key, jose.RS256, "k0", claims)

	first, err := v.Verify(ctx, tok)
	is.NoErr(err)
	e, ok := v.memo.lookup(sha256.Sum256([]byte(tok)))
	is.True(ok && e.claims != nil) // the memo kept the claims
	first.Raw["sub"], first.Subject = "changed", "changed"
	first.Audience[0] = "changed"
	first.Raw["groups"].([]any)[0] = "changed" // nested in the raw claims
	is.Equal(e.claims.Subject, "user-1")
	is.Equal(e.claims.Raw["groups"].([]any)[0], "a")
	second, err := v.Verify(ctx, tok) // memo hit
	is.NoErr(err)
	is.True(second.Subject != "changed")
	is.True(second.Raw["sub"] != "changed")
	is.True(second.Audience[0] != "changed")
	is.Equal(second.Raw["groups"].([]any)[0], "a")
	is.Equal(second.Expiry, first.Expiry)
}

// A token whose payload is over memoClaimsMax is memoised by its signature
// only: its claims are checked in full on each use.
func TestSignatureMemoKeepsNoLargeClaims(t *testing.T) {
	is := is.New(t)
	key := testKeys()[0]
	clock := newFakeClock()
	v, ctx := newTestVerifier(t, newJWKSServer(t, pubJWK(key, "k0")).URL, clock), context.Background()
	claims := validClaims(clock.Now())
	claims["pad"] = strings.Repeat("x", memoClaimsMax)
	tok := sign(t, key, jose.RS256, "k0", claims)
	_, err := v.Verify(ctx, tok)
	is.NoErr(err)
	e, ok := v.memo.lookup(sha256.Sum256([]byte(tok)))
	is.True(ok)              // the signature is known
	is.True(e.claims == nil) // the claims are not kept
	_, err = v.Verify(ctx, tok)
	is.NoErr(err)
}
