package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentbridge/bridge/httpx"
)

const (
	// DefaultLeeway is the clock skew tolerated on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// maxLeeway keeps the leeway "small": larger values would quietly extend
	// every token's lifetime.
	maxLeeway = 5 * time.Minute
	// bearerType is the payload claim typ every access token must carry.
	bearerType = "Bearer"
	// maxUnixSeconds is 9999-12-31T23:59:59Z; larger dates are malformed.
	maxUnixSeconds = 253402300799
)

// supportedAlgorithm reports the only algorithms a configuration may allow:
// asymmetric signatures whose keys can be published. HS* and none are never
// accepted, which rules out public-key/HMAC confusion.
func supportedAlgorithm(a jose.SignatureAlgorithm) bool {
	switch a {
	case jose.RS256, jose.RS384, jose.RS512,
		jose.PS256, jose.PS384, jose.PS512,
		jose.ES256, jose.ES384, jose.ES512:
		return true
	}
	return false
}

// Issuer configures one trusted identity provider.
type Issuer struct {
	// Issuer is the exact iss value of the provider's tokens.
	Issuer string
	// JWKSURL is the only URL keys are fetched from for this issuer.
	JWKSURL string
	// Audience must appear in the token's aud claim.
	Audience string
	// ClientIDs lists the accepted clients (azp, else client_id).
	ClientIDs []string
	// Algorithms allowed for this issuer; default ["RS256"].
	Algorithms []string
	// Leeway tolerated on time claims; default DefaultLeeway, at most 5 min.
	Leeway time.Duration
}

// VerifierOptions configures NewVerifier.
type VerifierOptions struct {
	Issuers []Issuer
	// Now is the clock; default time.Now. Injected by tests.
	Now func() time.Time
	// RootCAs adds trust roots for https JWKS URLs; nil means the system pool.
	RootCAs *x509.CertPool
	// MaxStale bounds how long keys are used when refreshes keep failing,
	// measured from the last successful fetch; default DefaultMaxStale. It
	// is raised to KeyFreshness if smaller.
	MaxStale time.Duration
}

// Verifier verifies bearer tokens offline against the configured issuers'
// published keys. It is safe for concurrent use.
type Verifier struct {
	issuers map[string]*issuerState
	algs    []jose.SignatureAlgorithm // union over issuers, for parsing
	now     func() time.Time
	memo    *sigMemo // nil disables the signature memo
}

type issuerState struct {
	cfg     Issuer
	algs    []jose.SignatureAlgorithm
	clients map[string]struct{}
	leeway  time.Duration
	cache   *keyCache
}

// Claims are the verified claims of a token.
type Claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	ClientID  string // azp, else client_id
	Expiry    time.Time
	IssuedAt  time.Time // zero when absent
	NotBefore time.Time // zero when absent
	ID        string    // jti, may be empty
	Scopes    []string  // from scope (space separated) or scp
	// Raw holds every payload claim as decoded by encoding/json.
	Raw map[string]any
}

// NewVerifier validates the configuration and returns a Verifier. No key is
// fetched until the first Verify (or Refresh).
func NewVerifier(opts VerifierOptions) (*Verifier, error) {
	if len(opts.Issuers) == 0 {
		return nil, errors.New("auth: verifier needs at least one issuer")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	maxStale := opts.MaxStale
	if maxStale <= 0 {
		maxStale = DefaultMaxStale
	}
	maxStale = max(maxStale, KeyFreshness)
	client := newKeyHTTPClient(opts.RootCAs, KeyFetchTimeout)
	v := &Verifier{
		issuers: make(map[string]*issuerState, len(opts.Issuers)),
		now:     now,
		memo:    newSigMemo(defaultMemoEntries),
	}
	for i, cfg := range opts.Issuers {
		st, err := newIssuerState(cfg)
		if err != nil {
			return nil, fmt.Errorf("auth: issuer %d: %w", i, err)
		}
		if _, dup := v.issuers[cfg.Issuer]; dup {
			return nil, fmt.Errorf("auth: issuer %q configured twice", cfg.Issuer)
		}
		st.cache = &keyCache{
			url:       cfg.JWKSURL,
			client:    client,
			now:       now,
			timeout:   KeyFetchTimeout,
			freshness: KeyFreshness,
			cooldown:  RefreshCooldown,
			maxStale:  maxStale,
		}
		v.issuers[cfg.Issuer] = st
		for _, a := range st.algs {
			if !slices.Contains(v.algs, a) {
				v.algs = append(v.algs, a)
			}
		}
	}
	return v, nil
}

func newIssuerState(cfg Issuer) (*issuerState, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("issuer is empty")
	}
	if cfg.Audience == "" {
		return nil, errors.New("audience is empty")
	}
	if len(cfg.ClientIDs) == 0 {
		return nil, errors.New("no client ids")
	}
	if err := validateJWKSURL(cfg.JWKSURL); err != nil {
		return nil, err
	}
	st := &issuerState{cfg: cfg, clients: make(map[string]struct{}, len(cfg.ClientIDs))}
	for _, c := range cfg.ClientIDs {
		if c == "" {
			return nil, errors.New("empty client id")
		}
		st.clients[c] = struct{}{}
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = []string{string(jose.RS256)}
	}
	for _, a := range algs {
		alg := jose.SignatureAlgorithm(a)
		if !supportedAlgorithm(alg) {
			return nil, fmt.Errorf("algorithm %q not supported", a)
		}
		if !slices.Contains(st.algs, alg) {
			st.algs = append(st.algs, alg)
		}
	}
	switch {
	case cfg.Leeway < 0:
		return nil, errors.New("negative leeway")
	case cfg.Leeway == 0:
		st.leeway = DefaultLeeway
	case cfg.Leeway > maxLeeway:
		return nil, fmt.Errorf("leeway %s exceeds %s", cfg.Leeway, maxLeeway)
	default:
		st.leeway = cfg.Leeway
	}
	return st, nil
}

// Refresh fetches the key set of issuer now (joining a fetch in progress),
// e.g. to warm the cache at start-up. It does not consume the unknown-kid
// cooldown.
func (v *Verifier) Refresh(ctx context.Context, issuer string) error {
	st, ok := v.issuers[issuer]
	if !ok {
		return fmt.Errorf("auth: refresh: %w", ReasonIssuer)
	}
	if _, err := st.cache.refresh(ctx); err != nil {
		return fmt.Errorf("auth: refresh keys of %q: %w", issuer, err)
	}
	return nil
}

// BearerToken extracts the token from an "Authorization: Bearer" header.
// Exactly one Authorization header is accepted.
func BearerToken(r *http.Request) (string, error) {
	val, err := httpx.SingleHeader(r.Header, "Authorization")
	if err != nil {
		return "", reject(ReasonMalformed, err)
	}
	if val == "" {
		return "", reject(ReasonMissing, nil)
	}
	scheme, tok, ok := strings.Cut(val, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", reject(ReasonMalformed, errors.New("not a Bearer authorization"))
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", reject(ReasonMissing, nil)
	}
	return tok, nil
}

// Verify checks rawToken and returns its claims. Every failure is a
// *VerifyError with a distinct Reason; none of them contain the token.
//
// Order matters for cost, not for the verdict: cheap structural and claim
// checks run first, so a token with wrong claims never causes a key fetch
// or an RSA operation; the signature is checked last, over the same payload
// whose claims were checked. A repeated token whose exact bytes already
// verified under the same, still published key skips only the RSA
// operation (see sigMemo).
func (v *Verifier) Verify(ctx context.Context, rawToken string) (*Claims, error) {
	if rawToken == "" {
		return nil, reject(ReasonMissing, nil)
	}
	if len(rawToken) > MaxTokenBytes {
		return nil, reject(ReasonTooLarge, nil)
	}
	if err := checkCompactShape(rawToken); err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte(rawToken))
	if e, ok := v.memo.lookup(h); ok {
		if c, done, err := v.verifyKnown(ctx, e); done {
			return c, err
		}
	}
	jws, err := jose.ParseSignedCompact(rawToken, v.algs)
	if err != nil {
		var algErr *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &algErr) {
			return nil, reject(ReasonAlgorithm, nil)
		}
		return nil, reject(ReasonMalformed, errors.New("invalid JWS"))
	}
	if len(jws.Signatures) != 1 {
		return nil, reject(ReasonMalformed, errors.New("expected exactly one signature"))
	}
	header := jws.Signatures[0].Header
	alg := jose.SignatureAlgorithm(header.Algorithm)

	payload := jws.UnsafePayloadWithoutVerification()
	raw := make(map[string]any, 16)
	if err := json.Unmarshal(payload, &raw); err != nil || raw == nil {
		return nil, reject(ReasonMalformed, errors.New("payload is not a JSON object"))
	}
	// encoding/json keeps the last of repeated claims, and another
	// verifier might keep the first: such a token means two things, so it
	// means nothing. Invalid UTF-8 and lone surrogates likewise.
	if err := httpx.CheckJSON(payload); err != nil {
		return nil, reject(ReasonMalformed, err)
	}
	c, st, err := v.checkClaims(raw, alg)
	if err != nil {
		return nil, err
	}
	keys, err := v.selectKeys(ctx, st, header.KeyID, alg)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		ok := v.memo.verified(h, k.Key)
		if !ok {
			_, err := jws.Verify(k.Key)
			ok = err == nil
		}
		if ok {
			e := memoEntry{key: k.Key, expires: c.Expiry.Add(st.leeway), st: st, kid: header.KeyID, alg: alg}
			if len(payload) > memoClaimsMax {
				v.memo.put(h, e, v.now())
				return c, nil // not kept: the caller's own
			}
			e.claims = c
			v.memo.put(h, e, v.now())
			return copyClaims(c), nil
		}
	}
	return nil, reject(ReasonSignature, nil)
}

// verifyKnown checks a token the memo knows (e): its time claims against
// now and its key against the current key set, in the order Verify
// checks them. done is false when the memo knows only the signature, or
// the key that verified it is no longer among the token's candidate keys:
// Verify then checks the token in full.
func (v *Verifier) verifyKnown(ctx context.Context, e memoEntry) (c *Claims, done bool, err error) {
	if e.claims == nil {
		return nil, false, nil
	}
	st, now := e.st, v.now()
	if !now.Before(e.claims.Expiry.Add(st.leeway)) {
		return nil, true, reject(ReasonExpired, nil)
	}
	// Absent nbf and iat are zero times, which pass both checks.
	if now.Add(st.leeway).Before(e.claims.NotBefore) {
		return nil, true, reject(ReasonNotYetValid, nil)
	}
	if e.claims.IssuedAt.After(now.Add(st.leeway)) {
		return nil, true, reject(ReasonIssuedInFuture, nil)
	}
	keys, err := v.selectKeys(ctx, st, e.kid, e.alg)
	if err != nil {
		return nil, true, err
	}
	for _, k := range keys {
		if k.Key == e.key {
			return copyClaims(e.claims), true, nil
		}
	}
	return nil, false, nil
}

// copyClaims copies c, nested claim values included, so that no caller
// shares the memo's claims.
func copyClaims(c *Claims) *Claims {
	cp := *c
	cp.Audience, cp.Scopes = slices.Clone(c.Audience), slices.Clone(c.Scopes)
	if c.Raw != nil {
		cp.Raw = copyJSON(c.Raw).(map[string]any)
	}
	return &cp
}

// copyJSON copies a value decoded by encoding/json: objects and arrays
// are copied, scalars are immutable.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = copyJSON(x)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = copyJSON(x)
		}
		return a
	default:
		return v
	}
}

// checkCompactShape accepts only JWS compact serialization: three
// base64url segments. JWE (five segments) and JSON serializations are
// refused with their own reason.
func checkCompactShape(tok string) error {
	if tok[0] == '{' {
		return reject(ReasonNotCompact, errors.New("JSON serialization"))
	}
	dots := 0
	for i := 0; i < len(tok); i++ {
		switch b := tok[i]; {
		case b == '.':
			dots++
		case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '-', b == '_':
		default:
			return reject(ReasonMalformed, errors.New("character outside base64url"))
		}
	}
	switch dots {
	case 2:
		return nil
	case 4:
		return reject(ReasonNotCompact, errors.New("JWE compact serialization"))
	default:
		return reject(ReasonMalformed, errors.New("wrong number of segments"))
	}
}

// checkClaims validates the unverified payload against the configuration of
// the issuer it names. The signature is verified afterwards with that
// issuer's keys only, which binds the claims to the issuer.
func (v *Verifier) checkClaims(raw map[string]any, alg jose.SignatureAlgorithm) (*Claims, *issuerState, error) {
	iss, _, err := stringClaim(raw, "iss")
	if err != nil {
		return nil, nil, err
	}
	st, ok := v.issuers[iss]
	if !ok {
		return nil, nil, reject(ReasonIssuer, nil)
	}
	if !slices.Contains(st.algs, alg) {
		return nil, nil, reject(ReasonAlgorithm, nil)
	}
	typ, _, err := stringClaim(raw, "typ")
	if err != nil {
		return nil, nil, err
	}
	if typ != bearerType {
		return nil, nil, reject(ReasonTokenType, nil)
	}
	aud, err := audienceClaim(raw)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Contains(aud, st.cfg.Audience) {
		return nil, nil, reject(ReasonAudience, nil)
	}
	client, hasAZP, err := stringClaim(raw, "azp")
	if err != nil {
		return nil, nil, err
	}
	if !hasAZP {
		if client, _, err = stringClaim(raw, "client_id"); err != nil {
			return nil, nil, err
		}
	}
	if _, ok := st.clients[client]; !ok {
		return nil, nil, reject(ReasonClient, nil)
	}
	sub, _, err := stringClaim(raw, "sub")
	if err != nil {
		return nil, nil, err
	}
	if sub == "" {
		return nil, nil, reject(ReasonSubject, nil)
	}

	now := v.now()
	exp, hasExp, err := timeClaim(raw, "exp")
	if err != nil {
		return nil, nil, err
	}
	if !hasExp {
		return nil, nil, reject(ReasonExpiryMissing, nil)
	}
	// RFC 7519: the token must not be accepted on or after exp.
	if !now.Before(exp.Add(st.leeway)) {
		return nil, nil, reject(ReasonExpired, nil)
	}
	nbf, hasNBF, err := timeClaim(raw, "nbf")
	if err != nil {
		return nil, nil, err
	}
	if hasNBF && now.Add(st.leeway).Before(nbf) {
		return nil, nil, reject(ReasonNotYetValid, nil)
	}
	iat, hasIAT, err := timeClaim(raw, "iat")
	if err != nil {
		return nil, nil, err
	}
	if hasIAT && iat.After(now.Add(st.leeway)) {
		return nil, nil, reject(ReasonIssuedInFuture, nil)
	}
	jti, _, err := stringClaim(raw, "jti")
	if err != nil {
		return nil, nil, err
	}
	scopes, err := scopeClaim(raw)
	if err != nil {
		return nil, nil, err
	}
	return &Claims{
		Issuer:    iss,
		Subject:   sub,
		Audience:  aud,
		ClientID:  client,
		Expiry:    exp,
		IssuedAt:  iat,
		NotBefore: nbf,
		ID:        jti,
		Scopes:    scopes,
		Raw:       raw,
	}, st, nil
}

// selectKeys returns the candidate keys for the token's kid and alg,
// running the coordinated unknown-kid refresh when needed.
func (v *Verifier) selectKeys(ctx context.Context, st *issuerState, kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, error) {
	ks, err := st.cache.get(ctx)
	if err != nil {
		return nil, reject(ReasonKeysUnavailable, err)
	}
	var cands []jose.JSONWebKey
	if kid == "" {
		// Without kid the choice would be ambiguous, so it is only allowed
		// when the issuer publishes a single key.
		if len(ks.keys) != 1 {
			return nil, reject(ReasonKeyIDRequired, nil)
		}
		cands = ks.keys
	} else {
		cands = ks.byKID(kid)
		if len(cands) == 0 {
			ks, err = st.cache.refreshForKID(ctx, kid)
			if err != nil {
				return nil, reject(ReasonUnknownKeyID, err)
			}
			cands = ks.byKID(kid)
			if len(cands) == 0 {
				return nil, reject(ReasonUnknownKeyID, nil)
			}
		}
	}
	fit := cands[:0:0]
	for _, k := range cands {
		if keyFits(k, alg) {
			fit = append(fit, k)
		}
	}
	if len(fit) == 0 {
		return nil, reject(ReasonKeyMismatch, nil)
	}
	return fit, nil
}

// keyFits reports whether k may verify a signature made with alg: the key
// type and curve must match, and a key that names its alg must name this one.
func keyFits(k jose.JSONWebKey, alg jose.SignatureAlgorithm) bool {
	if k.Algorithm != "" && k.Algorithm != string(alg) {
		return false
	}
	switch pub := k.Key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
			return true
		}
	case *ecdsa.PublicKey:
		switch alg {
		case jose.ES256:
			return pub.Curve == elliptic.P256()
		case jose.ES384:
			return pub.Curve == elliptic.P384()
		case jose.ES512:
			return pub.Curve == elliptic.P521()
		}
	}
	return false
}

func stringClaim(raw map[string]any, name string) (string, bool, error) {
	v, ok := raw[name]
	if !ok {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", true, reject(ReasonMalformed, fmt.Errorf("claim %s is not a string", name))
	}
	return s, true, nil
}

func timeClaim(raw map[string]any, name string) (time.Time, bool, error) {
	v, ok := raw[name]
	if !ok {
		return time.Time{}, false, nil
	}
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || f < 0 || f > maxUnixSeconds {
		return time.Time{}, true, reject(ReasonMalformed, fmt.Errorf("claim %s is not a valid NumericDate", name))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true, nil
}

func audienceClaim(raw map[string]any) ([]string, error) {
	switch a := raw["aud"].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{a}, nil
	case []any:
		out := make([]string, 0, len(a))
		for _, e := range a {
			s, ok := e.(string)
			if !ok {
				return nil, reject(ReasonMalformed, errors.New("claim aud holds a non-string"))
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, reject(ReasonMalformed, errors.New("claim aud is neither string nor array"))
	}
}

// scopeClaim reads OAuth scopes: "scope" (space separated string, RFC 8693)
// or "scp" (array or string, common in other providers).
func scopeClaim(raw map[string]any) ([]string, error) {
	if s, ok := raw["scope"]; ok {
		str, ok := s.(string)
		if !ok {
			return nil, reject(ReasonMalformed, errors.New("claim scope is not a string"))
		}
		return strings.Fields(str), nil
	}
	switch s := raw["scp"].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(s), nil
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			str, ok := e.(string)
			if !ok {
				return nil, reject(ReasonMalformed, errors.New("claim scp holds a non-string"))
			}
			out = append(out, str)
		}
		return out, nil
	default:
		return nil, reject(ReasonMalformed, errors.New("claim scp has an invalid type"))
	}
}
