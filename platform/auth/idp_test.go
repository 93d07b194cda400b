package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/matryer/is"
)

const ownerToken = "owner-secret-token"

// idpHarness runs an IdP behind an httptest server whose URL is the issuer.
type idpHarness struct {
	idp       *IdP
	srv       *httptest.Server
	clock     *fakeClock
	jwksHits  atomic.Int64
	clientID  string
	audience  string
	verifier  *Verifier
	ownerSubj string
}

func newIdPHarness(t *testing.T, key *rsa.PrivateKey, mod func(*IdPOptions)) *idpHarness {
	t.Helper()
	h := &idpHarness{clock: newFakeClock(), clientID: "bridge-cli", audience: "agent-bridge-platform", ownerSubj: "local-operator"}
	var handler atomic.Pointer[http.Handler]
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == PathJWKS {
			h.jwksHits.Add(1)
		}
		(*handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	opts := IdPOptions{
		Issuer:   h.srv.URL,
		Key:      key,
		Audience: h.audience,
		ClientID: h.clientID,
		Now:      h.clock.Now,
		Approver: func(r *http.Request) (string, bool) {
			got := r.Header.Get("Authorization")
			ok := subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+ownerToken)) == 1
			return h.ownerSubj, ok
		},
	}
	if mod != nil {
		mod(&opts)
	}
	idp, err := NewIdP(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.idp = idp
	hd := idp.Handler()
	handler.Store(&hd)
	// The platform side: a plain Verifier fed only the IdP's issuer config.
	h.verifier, err = NewVerifier(VerifierOptions{Issuers: []Issuer{idp.VerifierIssuer()}, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *idpHarness) post(t *testing.T, path string, form url.Values, auth string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func (h *idpHarness) deviceCode(t *testing.T) (deviceCode, userCode string, body map[string]any) {
	t.Helper()
	code, body := h.post(t, PathDeviceCode, url.Values{"client_id": {h.clientID}}, "")
	if code != http.StatusOK {
		t.Fatalf("device code: %d %v", code, body)
	}
	return body["device_code"].(string), body["user_code"].(string), body
}

func (h *idpHarness) poll(t *testing.T, deviceCode string) (int, map[string]any) {
	t.Helper()
	return h.post(t, PathToken, url.Values{
		"grant_type":  {GrantTypeDeviceCode},
		"device_code": {deviceCode},
		"client_id":   {h.clientID},
	}, "")
}

func TestIdPDeviceFlowTokenVerifiesThroughJWKS(t *testing.T) {
	is := is.New(t)
	h := newIdPHarness(t, testKeys()[0], nil)

	dc, uc, body := h.deviceCode(t)
	is.Equal(body["verification_uri"], h.srv.URL+PathDevice)
	is.Equal(body["expires_in"], float64(DefaultDeviceCodeTTL/time.Second))
	is.Equal(body["interval"], float64(DefaultPollInterval/time.Second))
	is.Equal(len(uc), 9) // XXXX-XXXX
	is.True(len(dc) >= 43)

	// Pending; polling again too early answers slow_down.
	status, body := h.poll(t, dc)
	is.Equal(status, http.StatusBadRequest)
	is.Equal(body["error"], "authorization_pending")
	status, body = h.poll(t, dc)
	is.Equal(status, http.StatusBadRequest)
	is.Equal(body["error"], "slow_down")
	// The interval grew by 5 s: waiting the original 5 s is still too early.
	h.clock.Advance(DefaultPollInterval)
	_, body = h.poll(t, dc)
	is.Equal(body["error"], "slow_down")
	h.clock.Advance(DefaultPollInterval + 2*slowDownStep)
	_, body = h.poll(t, dc)
	is.Equal(body["error"], "authorization_pending")

	// Approval needs the owner token.
	status, body = h.post(t, PathDeviceApprove, url.Values{"user_code": {uc}}, "Bearer wrong")
	is.Equal(status, http.StatusUnauthorized)
	status, _ = h.post(t, PathDeviceApprove, url.Values{"user_code": {"BCDF-GHJK"}}, "Bearer "+ownerToken)
	is.Equal(status, http.StatusNotFound)
	status, body = h.post(t, PathDeviceApprove, url.Values{"user_code": {strings.ToLower(uc)}}, "Bearer "+ownerToken)
	is.Equal(status, http.StatusOK)
	is.Equal(body["status"], "ok")
	status, _ = h.post(t, PathDeviceApprove, url.Values{"user_code": {uc}}, "Bearer "+ownerToken)
	is.Equal(status, http.StatusConflict) // already decided

	h.clock.Advance(time.Minute)
	status, body = h.poll(t, dc)
	is.Equal(status, http.StatusOK)
	is.Equal(body["token_type"], "Bearer")
	is.Equal(body["expires_in"], float64(DefaultTokenTTL/time.Second))
	tok := body["access_token"].(string)

	// The device code is single use.
	_, body = h.poll(t, dc)
	is.Equal(body["error"], "invalid_grant")

	// The platform verifies it over HTTP JWKS, like any external provider.
	is.Equal(h.jwksHits.Load(), int64(0))
	claims, err := h.verifier.Verify(context.Background(), tok)
	is.NoErr(err)
	is.Equal(h.jwksHits.Load(), int64(1))
	is.Equal(claims.Subject, h.ownerSubj)
	is.Equal(claims.Issuer, h.srv.URL)
	is.Equal(claims.ClientID, h.clientID)
	is.Equal(claims.Audience, []string{h.audience})
	is.Equal(claims.Raw["typ"], "Bearer")
	is.True(claims.ID != "")
	is.Equal(claims.Expiry, h.clock.Now().Add(DefaultTokenTTL))

	// And it expires like any token.
	h.clock.Advance(DefaultTokenTTL + DefaultLeeway)
	_, err = h.verifier.Verify(context.Background(), tok)
	is.Equal(ReasonOf(err), ReasonExpired)
}

func TestIdPDeviceFlowErrors(t *testing.T) {
	t.Run("denied", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		dc, uc, _ := h.deviceCode(t)
		status, _ := h.post(t, PathDeviceApprove, url.Values{"user_code": {uc}, "action": {"deny"}}, "Bearer "+ownerToken)
		is.Equal(status, http.StatusOK)
		_, body := h.poll(t, dc)
		is.Equal(body["error"], "access_denied")
	})
	t.Run("expired", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		dc, uc, _ := h.deviceCode(t)
		h.clock.Advance(DefaultDeviceCodeTTL)
		is.True(errors.Is(h.idp.Approve(uc, "x"), ErrDeviceCodeExpired))
		_, body := h.poll(t, dc)
		is.Equal(body["error"], "expired_token")
	})
	t.Run("unknown device code", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		_, body := h.poll(t, "nope")
		is.Equal(body["error"], "invalid_grant")
	})
	t.Run("wrong grant type", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		status, body := h.post(t, PathToken, url.Values{"grant_type": {"password"}, "client_id": {h.clientID}}, "")
		is.Equal(status, http.StatusBadRequest)
		is.Equal(body["error"], "unsupported_grant_type")
	})
	t.Run("wrong client", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		status, body := h.post(t, PathDeviceCode, url.Values{"client_id": {"evil"}}, "")
		is.Equal(status, http.StatusUnauthorized)
		is.Equal(body["error"], "invalid_client")
		dc, _, _ := h.deviceCode(t)
		status, body = h.post(t, PathToken, url.Values{"grant_type": {GrantTypeDeviceCode}, "device_code": {dc}, "client_id": {"evil"}}, "")
		is.Equal(status, http.StatusUnauthorized)
		is.Equal(body["error"], "invalid_client")
	})
	t.Run("repeated parameter", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		status, body := h.post(t, PathDeviceCode, url.Values{"client_id": {h.clientID, h.clientID}}, "")
		is.Equal(status, http.StatusBadRequest)
		is.Equal(body["error"], "invalid_request")
	})
	t.Run("bounded pending", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], func(o *IdPOptions) { o.MaxPending = 2 })
		h.deviceCode(t)
		h.deviceCode(t)
		status, body := h.post(t, PathDeviceCode, url.Values{"client_id": {h.clientID}}, "")
		is.Equal(status, http.StatusServiceUnavailable)
		is.Equal(body["error"], "temporarily_unavailable")
		// Expired entries are purged and make room again.
		h.clock.Advance(DefaultDeviceCodeTTL)
		h.deviceCode(t)
	})
	t.Run("approval endpoint disabled without approver", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], func(o *IdPOptions) { o.Approver = nil })
		_, uc, _ := h.deviceCode(t)
		status, _ := h.post(t, PathDeviceApprove, url.Values{"user_code": {uc}}, "Bearer "+ownerToken)
		is.Equal(status, http.StatusNotFound)
		is.NoErr(h.idp.Approve(uc, "operator")) // in-process approval still works
	})
	t.Run("method not allowed", func(t *testing.T) {
		is := is.New(t)
		h := newIdPHarness(t, testKeys()[0], nil)
		resp, err := h.srv.Client().Get(h.srv.URL + PathToken)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusMethodNotAllowed)
	})
}

// An oversized form is 413 problem+json, on every form endpoint.
func TestIdPOversizedBodyIs413(t *testing.T) {
	is := is.New(t)
	h := newIdPHarness(t, testKeys()[0], nil)
	big := url.Values{"grant_type": {GrantTypeDeviceCode}, "client_id": {h.clientID},
		"device_code": {strings.Repeat("x", 10<<20)}}
	for _, path := range []string{PathToken, PathDeviceCode} {
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(big.Encode()))
		is.NoErr(err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := h.srv.Client().Do(req)
		is.NoErr(err)
		var p map[string]any
		is.NoErr(json.NewDecoder(resp.Body).Decode(&p))
		resp.Body.Close()
		is.Equal(resp.StatusCode, http.StatusRequestEntityTooLarge)
		is.Equal(resp.Header.Get("Content-Type"), "application/problem+json")
		is.Equal(p["code"], "PF-REQUEST-TOO-LARGE")
		is.Equal(p["status"], float64(413))
	}
	// A small unreadable form is still the OAuth error.
	status, body := h.post(t, PathToken, url.Values{"grant_type": {"password"}, "client_id": {h.clientID}}, "")
	is.Equal(status, http.StatusBadRequest)
	is.Equal(body["error"], "unsupported_grant_type")
}

func TestIdPDiscoveryAndJWKS(t *testing.T) {
	is := is.New(t)
	h := newIdPHarness(t, testKeys()[0], nil)
	resp, err := h.srv.Client().Get(h.srv.URL + PathDiscovery)
	is.NoErr(err)
	defer resp.Body.Close()
	var doc map[string]any
	is.NoErr(json.NewDecoder(resp.Body).Decode(&doc))
	is.Equal(doc["issuer"], h.srv.URL)
	is.Equal(doc["jwks_uri"], h.srv.URL+PathJWKS)
	is.Equal(doc["token_endpoint"], h.srv.URL+PathToken)
	is.Equal(doc["device_authorization_endpoint"], h.srv.URL+PathDeviceCode)

	resp2, err := h.srv.Client().Get(h.srv.URL + PathJWKS)
	is.NoErr(err)
	defer resp2.Body.Close()
	raw, err := io.ReadAll(resp2.Body)
	is.NoErr(err)
	is.True(!strings.Contains(string(raw), `"d"`)) // public only
	var set jose.JSONWebKeySet
	is.NoErr(json.Unmarshal(raw, &set))
	is.Equal(len(set.Keys), 1)
	is.Equal(set.Keys[0].KeyID, h.idp.KeyID())
	is.True(set.Keys[0].IsPublic())
}

func TestIdPKeyRotation(t *testing.T) {
	is := is.New(t)
	keys := testKeys()
	// The current deployment signs with keys[1] and still publishes
	// keys[0], with which the previous deployment (same issuer) signed.
	h := newIdPHarness(t, keys[1], func(o *IdPOptions) { o.PreviousKeys = []*rsa.PublicKey{&keys[0].PublicKey} })
	oldIdP, err := NewIdP(IdPOptions{Issuer: h.srv.URL, Key: keys[0], Audience: h.audience, ClientID: h.clientID, Now: h.clock.Now})
	is.NoErr(err)
	oldTok, err := oldIdP.Mint("alice", nil)
	is.NoErr(err)
	newTok, err := h.idp.Mint("bob", map[string]any{"name": "Bob"})
	is.NoErr(err)

	c, err := h.verifier.Verify(context.Background(), oldTok)
	is.NoErr(err)
	is.Equal(c.Subject, "alice")
	c, err = h.verifier.Verify(context.Background(), newTok)
	is.NoErr(err)
	is.Equal(c.Subject, "bob")
	is.Equal(c.Raw["name"], "Bob")
	is.True(h.idp.KeyID() != oldIdP.KeyID())

	// Without the previous key published, the old token no longer verifies.
	h2 := newIdPHarness(t, keys[1], nil)
	oldIdP2, err := NewIdP(IdPOptions{Issuer: h2.srv.URL, Key: keys[0], Audience: h2.audience, ClientID: h2.clientID, Now: h2.clock.Now})
	is.NoErr(err)
	oldTok2, err := oldIdP2.Mint("alice", nil)
	is.NoErr(err)
	_, err = h2.verifier.Verify(context.Background(), oldTok2)
	is.Equal(ReasonOf(err), ReasonUnknownKeyID)
}

func TestIdPMint(t *testing.T) {
	is := is.New(t)
	h := newIdPHarness(t, testKeys()[0], nil)
	for _, reserved := range []string{"iss", "sub", "aud", "azp", "exp", "iat", "jti", "typ", "nbf", "client_id"} {
		_, err := h.idp.Mint("alice", map[string]any{reserved: "x"})
		is.True(err != nil) // reserved claim cannot be overridden
	}
	_, err := h.idp.Mint("", nil)
	is.True(err != nil)
	tok, err := h.idp.Mint("alice", nil)
	is.NoErr(err)
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256})
	is.NoErr(err)
	is.Equal(jws.Signatures[0].Header.KeyID, h.idp.KeyID())
	is.Equal(jws.Signatures[0].Header.Algorithm, "RS256")
}

func TestNewIdPValidation(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	base := IdPOptions{Issuer: "http://127.0.0.1:1", Key: testKeys()[0], Audience: "a", ClientID: "c"}
	cases := []struct {
		name string
		mod  func(*IdPOptions)
	}{
		{"no key", func(o *IdPOptions) { o.Key = nil }},
		{"short key", func(o *IdPOptions) { o.Key = small }},
		{"bad issuer", func(o *IdPOptions) { o.Issuer = "not a url" }},
		{"issuer with query", func(o *IdPOptions) { o.Issuer = "http://127.0.0.1:1/?x=1" }},
		{"no audience", func(o *IdPOptions) { o.Audience = "" }},
		{"no client", func(o *IdPOptions) { o.ClientID = "" }},
		{"short previous key", func(o *IdPOptions) { o.PreviousKeys = []*rsa.PublicKey{&small.PublicKey} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			o := base
			tc.mod(&o)
			_, err := NewIdP(o)
			is.True(err != nil)
		})
	}
	_, err = NewIdP(base)
	is.New(t).NoErr(err)
}

func TestKeyPEMRoundTrip(t *testing.T) {
	is := is.New(t)
	k, err := GenerateKey()
	is.NoErr(err)
	is.Equal(k.N.BitLen(), SigningKeyBits)
	pemBytes, err := MarshalPrivateKeyPEM(k)
	is.NoErr(err)
	back, err := ParsePrivateKeyPEM(pemBytes)
	is.NoErr(err)
	is.True(back.Equal(k))

	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	back, err = ParsePrivateKeyPEM(pkcs1)
	is.NoErr(err)
	is.True(back.Equal(k))

	_, err = ParsePrivateKeyPEM([]byte("garbage"))
	is.True(err != nil)
	_, err = ParsePrivateKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}))
	is.True(err != nil)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	is.NoErr(err)
	smallPEM, err := MarshalPrivateKeyPEM(small)
	is.NoErr(err)
	_, err = ParsePrivateKeyPEM(smallPEM)
	is.True(err != nil) // too short

	kid1, err := KeyID(&k.PublicKey)
	is.NoErr(err)
	kid2, err := KeyID(&back.PublicKey)
	is.NoErr(err)
	is.Equal(kid1, kid2) // deterministic thumbprint
}

func TestUserCodeAlphabet(t *testing.T) {
	is := is.New(t)
	for range 200 {
		uc, err := randomUserCode(rand.Reader)
		is.NoErr(err)
		n, ok := normalizeUserCode(uc)
		is.True(ok)
		is.Equal(n, uc)
	}
	_, ok := normalizeUserCode("AAAA-AAAA") // vowels never issued
	is.True(!ok)
	n, ok := normalizeUserCode(" bcdf-ghjk ")
	is.True(ok)
	is.Equal(n, "BCDFGHJK")
}
