package auth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/matryer/is"
)

// standardSetup publishes k0, k1 (RSA) and an EC key under "ec".
func standardSetup(t *testing.T) (*Verifier, *jwksServer, *fakeClock) {
	t.Helper()
	keys := testKeys()
	ec := testECKey()
	srv := newJWKSServer(t,
		pubJWK(keys[0], "k0"),
		pubJWK(keys[1], "k1"),
		jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "ec", Algorithm: "ES256", Use: "sig"},
	)
	clock := newFakeClock()
	return newTestVerifier(t, srv.URL, clock), srv, clock
}

func TestVerifyValidToken(t *testing.T) {
	is := is.New(t)
	v, srv, clock := standardSetup(t)
	now := clock.Now()

	tok := sign(t, testKeys()[0], jose.RS256, "k0", validClaims(now))
	c, err := v.Verify(context.Background(), tok)
	is.NoErr(err)
	is.Equal(c.Issuer, testIssuer)
	is.Equal(c.Subject, "user-1")
	is.Equal(c.Audience, []string{testAudience})
	is.Equal(c.ClientID, testClient)
	is.Equal(c.Expiry, now.Add(10*time.Minute))
	is.Equal(c.IssuedAt, now)
	is.Equal(c.ID, "id-1")
	is.Equal(c.Scopes, []string{"openid", "profile"})
	is.Equal(c.Raw["sub"], "user-1")
	is.Equal(srv.hits.Load(), int64(1)) // one fetch

	// Warm cache: no further fetch.
	_, err = v.Verify(context.Background(), tok)
	is.NoErr(err)
	is.Equal(srv.hits.Load(), int64(1))
}

func TestVerifyAcceptedVariants(t *testing.T) {
	v, _, clock := standardSetup(t)
	now := clock.Now()
	k0 := testKeys()[0]
	cases := []struct {
		name   string
		mutate func(map[string]any)
		check  func(*is.I, *Claims)
	}{
		{"client_id when azp absent", func(m map[string]any) {
			delete(m, "azp")
			m["client_id"] = "other-allowed-client"
		}, func(is *is.I, c *Claims) { is.Equal(c.ClientID, "other-allowed-client") }},
		{"audience array", func(m map[string]any) { m["aud"] = []string{"account", testAudience} },
			func(is *is.I, c *Claims) { is.Equal(c.Audience, []string{"account", testAudience}) }},
		{"expired within leeway", func(m map[string]any) { m["exp"] = now.Add(-29 * time.Second).Unix() }, nil},
		{"nbf within leeway", func(m map[string]any) { m["nbf"] = now.Add(29 * time.Second).Unix() }, nil},
		{"iat within leeway", func(m map[string]any) { m["iat"] = now.Add(29 * time.Second).Unix() }, nil},
		{"scp array", func(m map[string]any) { delete(m, "scope"); m["scp"] = []string{"a", "b"} },
			func(is *is.I, c *Claims) { is.Equal(c.Scopes, []string{"a", "b"}) }},
		{"fractional exp", func(m map[string]any) { m["exp"] = float64(now.Unix()) + 60.5 }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			claims := validClaims(now)
			tc.mutate(claims)
			c, err := v.Verify(context.Background(), sign(t, k0, jose.RS256, "k0", claims))
			is.NoErr(err)
			if tc.check != nil {
				tc.check(is, c)
			}
		})
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestVerifyRejections(t *testing.T) {
	v, _, clock := standardSetup(t)
	now := clock.Now()
	keys := testKeys()
	k0 := keys[0]

	withClaims := func(mutate func(map[string]any)) string {
		c := validClaims(now)
		mutate(c)
		return sign(t, k0, jose.RS256, "k0", c)
	}
	payload, err := json.Marshal(validClaims(now))
	if err != nil {
		t.Fatal(err)
	}

	// alg "none" with a valid payload and an empty signature.
	algNone := b64(`{"alg":"none","typ":"JWT","kid":"k0"}`) + "." + b64(string(payload)) + "."

	// HS256 keyed with the RSA public key (key confusion attack).
	der, err := x509.MarshalPKIXPublicKey(&k0.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hs256 := sign(t, pubPEM, jose.HS256, "k0", validClaims(now))

	// A JWE in compact form.
	enc, err := jose.NewEncrypter(jose.A128GCM, jose.Recipient{Algorithm: jose.RSA_OAEP_256, Key: &k0.PublicKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jweObj, err := enc.Encrypt(payload)
	if err != nil {
		t.Fatal(err)
	}
	jwe, err := jweObj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}

	// JWS JSON serialization.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jwsObj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	jsonSerialized := jwsObj.FullSerialize()

	valid := sign(t, k0, jose.RS256, "k0", validClaims(now))
	parts := strings.Split(valid, ".")
	tamperedClaims := validClaims(now)
	tamperedClaims["sub"] = "admin"
	tamperedPayload, err := json.Marshal(tamperedClaims)
	if err != nil {
		t.Fatal(err)
	}
	tampered := parts[0] + "." + b64(string(tamperedPayload)) + "." + parts[2]
	// Validly signed payloads that read differently to different parsers:
	// a repeated claim (encoding/json keeps the last), invalid UTF-8, a
	// lone surrogate.
	repeated := func(claim, extra string) string {
		t.Helper()
		return signRaw(t, k0, "k0", strings.Replace(string(payload), "{", `{"`+claim+`":`+extra+`,`, 1))
	}

	cases := []struct {
		name string
		tok  string
		want Reason
	}{
		{"missing", "", ReasonMissing},
		{"oversized", strings.Repeat("a", MaxTokenBytes+1), ReasonTooLarge},
		{"one segment", "abc", ReasonMalformed},
		{"four segments", "a.b.c.d", ReasonMalformed},
		{"bad characters", "a b.c.d", ReasonMalformed},
		{"garbage segments", "abc.def.ghi", ReasonMalformed},
		{"payload not an object", sign(t, k0, jose.RS256, "k0", nil)[:0] + parts[0] + "." + b64(`[1,2]`) + "." + parts[2], ReasonMalformed},
		{"jwe", jwe, ReasonNotCompact},
		{"json serialization", jsonSerialized, ReasonNotCompact},
		{"alg none", algNone, ReasonAlgorithm},
		{"HS256 with public key", hs256, ReasonAlgorithm},
		{"RS384 not allowed", sign(t, k0, jose.RS384, "k0", validClaims(now)), ReasonAlgorithm},
		{"expired beyond leeway", withClaims(func(m map[string]any) { m["exp"] = now.Add(-31 * time.Second).Unix() }), ReasonExpired},
		{"expired exactly at leeway", withClaims(func(m map[string]any) { m["exp"] = now.Add(-30 * time.Second).Unix() }), ReasonExpired},
		{"exp missing", withClaims(func(m map[string]any) { delete(m, "exp") }), ReasonExpiryMissing},
		{"exp not a number", withClaims(func(m map[string]any) { m["exp"] = "tomorrow" }), ReasonMalformed},
		{"exp absurd", withClaims(func(m map[string]any) { m["exp"] = 1e300 }), ReasonMalformed},
		{"nbf in future", withClaims(func(m map[string]any) { m["nbf"] = now.Add(31 * time.Second).Unix() }), ReasonNotYetValid},
		{"iat in future", withClaims(func(m map[string]any) { m["iat"] = now.Add(31 * time.Second).Unix() }), ReasonIssuedInFuture},
		{"wrong issuer", withClaims(func(m map[string]any) { m["iss"] = "https://evil.example.test" }), ReasonIssuer},
		{"issuer prefix", withClaims(func(m map[string]any) { m["iss"] = testIssuer + "/" }), ReasonIssuer},
		{"issuer missing", withClaims(func(m map[string]any) { delete(m, "iss") }), ReasonIssuer},
		{"wrong audience", withClaims(func(m map[string]any) { m["aud"] = "other-api" }), ReasonAudience},
		{"audience missing", withClaims(func(m map[string]any) { delete(m, "aud") }), ReasonAudience},
		{"audience array without ours", withClaims(func(m map[string]any) { m["aud"] = []string{"a", "b"} }), ReasonAudience},
		{"wrong client", withClaims(func(m map[string]any) { m["azp"] = "evil-client" }), ReasonClient},
		{"azp wins over client_id", withClaims(func(m map[string]any) { m["azp"] = "evil"; m["client_id"] = testClient }), ReasonClient},
		{"client missing", withClaims(func(m map[string]any) { delete(m, "azp") }), ReasonClient},
		{"typ missing", withClaims(func(m map[string]any) { delete(m, "typ") }), ReasonTokenType},
		{"typ ID", withClaims(func(m map[string]any) { m["typ"] = "ID" }), ReasonTokenType},
		{"typ lowercase", withClaims(func(m map[string]any) { m["typ"] = "bearer" }), ReasonTokenType},
		{"sub empty", withClaims(func(m map[string]any) { m["sub"] = "" }), ReasonSubject},
		{"sub missing", withClaims(func(m map[string]any) { delete(m, "sub") }), ReasonSubject},
		{"sub not a string", withClaims(func(m map[string]any) { m["sub"] = 42 }), ReasonMalformed},
		{"tampered payload", tampered, ReasonSignature},
		{"sub repeated", repeated("sub", `"admin"`), ReasonMalformed},
		{"aud repeated", repeated("aud", `"other-api"`), ReasonMalformed},
		{"exp repeated", repeated("exp", "1"), ReasonMalformed},
		{"claim repeated through an escape", repeated(`\u0073ub`, `"admin"`), ReasonMalformed},
		{"invalid UTF-8", repeated("name", "\"\xff\""), ReasonMalformed},
		{"lone surrogate", repeated("name", `"\ud800"`), ReasonMalformed},
		{"signed by foreign key under known kid", sign(t, keys[2], jose.RS256, "k0", validClaims(now)), ReasonSignature},
		{"no kid with two keys", sign(t, k0, jose.RS256, "", validClaims(now)), ReasonKeyIDRequired},
		{"EC key for RS256", sign(t, k0, jose.RS256, "ec", validClaims(now)), ReasonKeyMismatch},
		{"unknown kid", sign(t, keys[2], jose.RS256, "nope", validClaims(now)), ReasonUnknownKeyID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			c, err := v.Verify(context.Background(), tc.tok)
			is.True(err != nil) // must be rejected
			is.True(c == nil)
			is.Equal(ReasonOf(err), tc.want)
			is.True(errors.Is(err, tc.want))
			if len(tc.tok) > 16 {
				is.True(!strings.Contains(err.Error(), tc.tok)) // token never in the error
			}
		})
	}
}

func TestVerifyNoKidSingleKey(t *testing.T) {
	is := is.New(t)
	k0 := testKeys()[0]
	srv := newJWKSServer(t, jose.JSONWebKey{Key: &k0.PublicKey, Use: "sig"})
	clock := newFakeClock()
	v := newTestVerifier(t, srv.URL, clock)
	_, err := v.Verify(context.Background(), sign(t, k0, jose.RS256, "", validClaims(clock.Now())))
	is.NoErr(err)
}

func TestVerifyTokenSizeBoundary(t *testing.T) {
	is := is.New(t)
	v, _, clock := standardSetup(t)
	k0 := testKeys()[0]

	// Build a valid token of exactly MaxTokenBytes: size the padding claim
	// arithmetically, then vary an extra header field because base64url
	// cannot produce every length.
	build := func(hdrPad, pad int) string {
		c := validClaims(clock.Now())
		c["pad"] = strings.Repeat("x", pad)
		opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k0").
			WithHeader("x", strings.Repeat("h", hdrPad))
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k0}, opts)
		is.NoErr(err)
		tok, err := jwt.Signed(signer).Claims(c).Serialize()
		is.NoErr(err)
		return tok
	}
	var exact string
	for hdrPad := 0; hdrPad < 4 && exact == ""; hdrPad++ {
		base := build(hdrPad, 0)
		guess := (MaxTokenBytes - len(base)) * 3 / 4
		for pad := guess - 3; pad <= guess+3; pad++ {
			if tok := build(hdrPad, pad); len(tok) == MaxTokenBytes {
				exact = tok
				break
			}
		}
	}
	is.Equal(len(exact), MaxTokenBytes)
	_, err := v.Verify(context.Background(), exact)
	is.NoErr(err) // exactly 32 KiB is accepted

	_, err = v.Verify(context.Background(), exact+"A")
	is.Equal(ReasonOf(err), ReasonTooLarge)
}

func TestNewVerifierConfig(t *testing.T) {
	base := Issuer{Issuer: testIssuer, JWKSURL: "https://idp.example.test/jwks", Audience: "a", ClientIDs: []string{"c"}}
	cases := []struct {
		name string
		mod  func(*Issuer)
		ok   bool
	}{
		{"valid", func(*Issuer) {}, true},
		{"http loopback", func(i *Issuer) { i.JWKSURL = "http://127.0.0.1:1/jwks" }, true},
		{"http localhost", func(i *Issuer) { i.JWKSURL = "http://localhost:1/jwks" }, true},
		{"http remote", func(i *Issuer) { i.JWKSURL = "http://idp.example.test/jwks" }, false},
		{"ftp", func(i *Issuer) { i.JWKSURL = "ftp://idp.example.test/jwks" }, false},
		{"credentials in URL", func(i *Issuer) { i.JWKSURL = "https://u:p@idp.example.test/jwks" }, false},
		{"no issuer", func(i *Issuer) { i.Issuer = "" }, false},
		{"no audience", func(i *Issuer) { i.Audience = "" }, false},
		{"no client", func(i *Issuer) { i.ClientIDs = nil }, false},
		{"HS256", func(i *Issuer) { i.Algorithms = []string{"HS256"} }, false},
		{"none", func(i *Issuer) { i.Algorithms = []string{"none"} }, false},
		{"ES256", func(i *Issuer) { i.Algorithms = []string{"ES256", "RS256"} }, true},
		{"negative leeway", func(i *Issuer) { i.Leeway = -time.Second }, false},
		{"huge leeway", func(i *Issuer) { i.Leeway = time.Hour }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			iss := base
			iss.ClientIDs = append([]string(nil), base.ClientIDs...)
			tc.mod(&iss)
			_, err := NewVerifier(VerifierOptions{Issuers: []Issuer{iss}})
			is.Equal(err == nil, tc.ok)
		})
	}
	t.Run("duplicate issuer", func(t *testing.T) {
		is := is.New(t)
		_, err := NewVerifier(VerifierOptions{Issuers: []Issuer{base, base}})
		is.True(err != nil)
	})
}

// The key client must ignore proxy settings, refuse redirects and time out
// after 5 s. Loopback test servers are never proxied by net/http anyway, so
// the configuration itself is asserted.
func TestKeyClientConfiguration(t *testing.T) {
	is := is.New(t)
	v, _, _ := standardSetup(t)
	c := v.issuers[testIssuer].cache.client
	is.Equal(c.Timeout, KeyFetchTimeout)
	tr, ok := c.Transport.(*http.Transport)
	is.True(ok)
	is.True(tr.Proxy == nil) // no ambient proxy
	is.True(c.CheckRedirect != nil)
	is.True(errors.Is(c.CheckRedirect(nil, nil), ReasonJWKSRedirect))
}

func TestBearerToken(t *testing.T) {
	cases := []struct {
		name    string
		headers []string
		want    string
		reason  Reason
	}{
		{"ok", []string{"Bearer abc.def.ghi"}, "abc.def.ghi", ""},
		{"case-insensitive scheme", []string{"bearer abc"}, "abc", ""},
		{"missing", nil, "", ReasonMissing},
		{"empty token", []string{"Bearer "}, "", ReasonMissing},
		{"basic", []string{"Basic dXNlcjpwdw=="}, "", ReasonMalformed},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", ReasonMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, h := range tc.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := BearerToken(r)
			is.Equal(got, tc.want)
			is.Equal(ReasonOf(err), tc.reason)
		})
	}
}

func TestVerifyIssuerSelectsItsOwnKeys(t *testing.T) {
	// Two issuers with separate key sets: a token naming issuer B but signed
	// by issuer A's key (same kid) must fail, and only B's URL is fetched.
	is := is.New(t)
	keys := testKeys()
	srvA := newJWKSServer(t, pubJWK(keys[0], "shared"))
	srvB := newJWKSServer(t, pubJWK(keys[1], "shared"))
	clock := newFakeClock()
	v, err := NewVerifier(VerifierOptions{Now: clock.Now, Issuers: []Issuer{
		{Issuer: "https://a.test", JWKSURL: srvA.URL, Audience: testAudience, ClientIDs: []string{testClient}},
		{Issuer: "https://b.test", JWKSURL: srvB.URL, Audience: testAudience, ClientIDs: []string{testClient}},
	}})
	is.NoErr(err)
	c := validClaims(clock.Now())
	c["iss"] = "https://b.test"
	is.Equal(verifyReason(v, sign(t, keys[0], jose.RS256, "shared", c)), ReasonSignature)
	is.Equal(srvA.hits.Load(), int64(0))
	is.Equal(srvB.hits.Load(), int64(1))
	is.Equal(verifyReason(v, sign(t, keys[1], jose.RS256, "shared", c)), Reason(""))
}
