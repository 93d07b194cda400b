package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/agentbridge/bridge/httpx"
)

// Paths served by IdP.Handler, relative to the issuer URL. Mount the handler
// so that Issuer+path reaches it (use http.StripPrefix when the issuer URL
// has a path, e.g. issuer "http://127.0.0.1:7420/idp").
const (
	PathDiscovery     = "/.well-known/openid-configuration"
	PathJWKS          = "/oauth/jwks"
	PathDeviceCode    = "/oauth/device/code"
	PathDevice        = "/oauth/device" // verification_uri: human instructions
	PathDeviceApprove = "/oauth/device/approve"
	PathToken         = "/oauth/token"
)

// GrantTypeDeviceCode is the RFC 8628 grant type.
const GrantTypeDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"

// IdP defaults.
const (
	DefaultTokenTTL      = time.Hour
	DefaultDeviceCodeTTL = 10 * time.Minute
	DefaultPollInterval  = 5 * time.Second
	DefaultMaxPending    = 64
	// slowDownStep is the RFC 8628 interval increase after slow_down.
	slowDownStep = 5 * time.Second
	// maxFormBytes bounds IdP request bodies; the forms are tiny.
	maxFormBytes = 16 << 10
	// codeRequestTooLarge is the platform's code for an oversized body
	// (platform/api.CodeRequestTooLarge, which this package cannot import).
	codeRequestTooLarge = "PF-REQUEST-TOO-LARGE"
	// userCodeAlphabet is RFC 8628's recommended consonant-only set: no
	// vowels (no accidental words) and no easily confused characters.
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLen      = 8
	maxSubjectLen    = 255
)

// DeviceError is returned by IdP.Approve and IdP.Deny.
type DeviceError string

func (e DeviceError) Error() string { return "auth: device authorization: " + string(e) }

// Device authorization errors.
const (
	ErrUnknownUserCode   DeviceError = "unknown user code"
	ErrDeviceCodeExpired DeviceError = "device code expired"
	ErrDeviceCodeDecided DeviceError = "device code already approved or denied"
)

// DeviceApprover authenticates the local operator on the approval endpoint
// (the daemon checks the owner token) and names the subject the approved
// token is issued to. It must rely on an explicit credential such as an
// Authorization header, never on ambient ones like cookies, so the endpoint
// cannot be driven cross-site.
type DeviceApprover func(r *http.Request) (subject string, ok bool)

// IdPOptions configures NewIdP.
type IdPOptions struct {
	// Issuer is the external base URL of the handler, e.g.
	// "http://127.0.0.1:7420/idp"; it is the tokens' iss.
	Issuer string
	// Key signs tokens (RS256). The caller persists it; see GenerateKey.
	Key *rsa.PrivateKey
	// PreviousKeys are still published in the JWKS so tokens signed before
	// a rotation keep verifying until they expire.
	PreviousKeys []*rsa.PublicKey
	Audience     string
	ClientID     string
	// TokenTTL is the access token lifetime; default DefaultTokenTTL.
	TokenTTL time.Duration
	// DeviceCodeTTL is the device code lifetime; default DefaultDeviceCodeTTL.
	DeviceCodeTTL time.Duration
	// PollInterval is the minimum polling interval; default DefaultPollInterval.
	PollInterval time.Duration
	// MaxPending bounds pending device authorizations; default DefaultMaxPending.
	MaxPending int
	// Approver guards POST PathDeviceApprove; nil disables that endpoint
	// (Approve can still be called in-process).
	Approver DeviceApprover
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rand is the randomness source for codes and jti; default crypto/rand.
	Rand io.Reader
}

// IdP is the embedded identity provider. It keeps pending device
// authorizations in memory only: a restart drops pending logins (clients
// start over) but never issued tokens, which stay valid until they expire
// because the signing key is persisted by the caller.
type IdP struct {
	issuer      string
	key         *rsa.PrivateKey
	kid         string
	jwks        []byte // pre-encoded public key set
	discovery   []byte
	audience    string
	clientID    string
	tokenTTL    time.Duration
	deviceTTL   time.Duration
	interval    time.Duration
	maxPending  int
	approver    DeviceApprover
	now         func() time.Time
	rand        io.Reader
	verifyURI   string
	jwksURL     string
	tokenURL    string
	deviceURL   string
	approvalURL string

	mu      sync.Mutex
	devices map[string]*deviceAuth // by SHA-256 of the device code
	byUser  map[string]*deviceAuth // by normalized user code
}

type deviceState int

const (
	devicePending deviceState = iota
	deviceApproved
	deviceDenied
)

type deviceAuth struct {
	hash      string
	userCode  string
	expiresAt time.Time
	interval  time.Duration
	lastPoll  time.Time
	state     deviceState
	subject   string
}

// NewIdP validates opts and builds the identity provider.
func NewIdP(opts IdPOptions) (*IdP, error) {
	u, err := url.Parse(opts.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, errors.New("auth: idp: issuer must be an absolute http(s) URL without query, fragment or credentials")
	}
	if opts.Key == nil {
		return nil, errors.New("auth: idp: signing key required")
	}
	if opts.Key.N.BitLen() < minRSABits {
		return nil, errors.New("auth: idp: signing key shorter than 2048 bits")
	}
	if opts.Audience == "" || opts.ClientID == "" {
		return nil, errors.New("auth: idp: audience and client id required")
	}
	base := strings.TrimSuffix(opts.Issuer, "/")
	p := &IdP{
		issuer:      opts.Issuer,
		key:         opts.Key,
		audience:    opts.Audience,
		clientID:    opts.ClientID,
		tokenTTL:    orDefault(opts.TokenTTL, DefaultTokenTTL),
		deviceTTL:   orDefault(opts.DeviceCodeTTL, DefaultDeviceCodeTTL),
		interval:    orDefault(opts.PollInterval, DefaultPollInterval),
		maxPending:  opts.MaxPending,
		approver:    opts.Approver,
		now:         opts.Now,
		rand:        opts.Rand,
		verifyURI:   base + PathDevice,
		jwksURL:     base + PathJWKS,
		tokenURL:    base + PathToken,
		deviceURL:   base + PathDeviceCode,
		approvalURL: base + PathDeviceApprove,
		devices:     make(map[string]*deviceAuth),
		byUser:      make(map[string]*deviceAuth),
	}
	if p.maxPending <= 0 {
		p.maxPending = DefaultMaxPending
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.rand == nil {
		p.rand = rand.Reader
	}
	if p.kid, err = KeyID(&opts.Key.PublicKey); err != nil {
		return nil, fmt.Errorf("auth: idp: %w", err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{publicJWK(&opts.Key.PublicKey, p.kid)}}
	for i, pk := range opts.PreviousKeys {
		if pk == nil || pk.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("auth: idp: previous key %d missing or shorter than 2048 bits", i)
		}
		kid, err := KeyID(pk)
		if err != nil {
			return nil, fmt.Errorf("auth: idp: previous key %d: %w", i, err)
		}
		if kid == p.kid {
			continue
		}
		set.Keys = append(set.Keys, publicJWK(pk, kid))
	}
	if len(set.Keys) > MaxJWKSKeys {
		return nil, fmt.Errorf("auth: idp: at most %d published keys", MaxJWKSKeys)
	}
	if p.jwks, err = json.Marshal(set); err != nil {
		return nil, fmt.Errorf("auth: idp: encode JWKS: %w", err)
	}
	if p.discovery, err = json.Marshal(p.discoveryDoc()); err != nil {
		return nil, fmt.Errorf("auth: idp: encode discovery: %w", err)
	}
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func publicJWK(pub *rsa.PublicKey, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}
}

// Issuer returns the issuer URL (iss of minted tokens).
func (p *IdP) Issuer() string { return p.issuer }

// KeyID returns the kid of the current signing key.
func (p *IdP) KeyID() string { return p.kid }

// VerifierIssuer returns the Verifier configuration that trusts this IdP
// through its published JWKS, exactly like an external provider.
func (p *IdP) VerifierIssuer() Issuer {
	return Issuer{
		Issuer:     p.issuer,
		JWKSURL:    p.jwksURL,
		Audience:   p.audience,
		ClientIDs:  []string{p.clientID},
		Algorithms: []string{string(jose.RS256)},
	}
}

// reservedClaim reports the claims Mint sets, which extra may not override.
func reservedClaim(name string) bool {
	switch name {
	case "iss", "sub", "aud", "azp", "client_id", "exp", "iat", "nbf", "jti", "typ":
		return true
	}
	return false
}

// Mint issues an RS256 access token for subject with claims typ=Bearer, iss,
// aud, azp, sub, iat, exp and jti, and the kid header. extra adds claims but
// cannot override any of those.
func (p *IdP) Mint(subject string, extra map[string]any) (string, error) {
	if subject == "" || len(subject) > maxSubjectLen {
		return "", errors.New("auth: mint: subject must be 1..255 bytes")
	}
	claims := make(map[string]any, len(extra)+8)
	for k, v := range extra {
		if reservedClaim(k) {
			return "", fmt.Errorf("auth: mint: claim %q is reserved", k)
		}
		claims[k] = v
	}
	jti, err := uuid.NewRandomFromReader(p.rand)
	if err != nil {
		return "", fmt.Errorf("auth: mint: token id: %w", err)
	}
	now := p.now()
	claims["typ"] = bearerType
	claims["iss"] = p.issuer
	claims["aud"] = p.audience
	claims["azp"] = p.clientID
	claims["sub"] = subject
	claims["iat"] = jwt.NewNumericDate(now)
	claims["exp"] = jwt.NewNumericDate(now.Add(p.tokenTTL))
	claims["jti"] = jti.String()

	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), p.kid)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key}, opts)
	if err != nil {
		return "", fmt.Errorf("auth: mint: signer: %w", err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("auth: mint: sign: %w", err)
	}
	return tok, nil
}

// Handler serves the IdP endpoints (see the Path constants).
func (p *IdP) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathDiscovery, p.serveStatic(p.discovery, "application/json"))
	mux.HandleFunc("GET "+PathJWKS, p.serveStatic(p.jwks, "application/jwk-set+json"))
	mux.HandleFunc("GET "+PathDevice, p.serveDevicePage)
	mux.HandleFunc("POST "+PathDeviceCode, p.serveDeviceCode)
	mux.HandleFunc("POST "+PathDeviceApprove, p.serveApprove)
	mux.HandleFunc("POST "+PathToken, p.serveToken)
	return mux
}

func (p *IdP) discoveryDoc() map[string]any {
	return map[string]any{
		"issuer":                                p.issuer,
		"jwks_uri":                              p.jwksURL,
		"token_endpoint":                        p.tokenURL,
		"device_authorization_endpoint":         p.deviceURL,
		"grant_types_supported":                 []string{GrantTypeDeviceCode},
		"response_types_supported":              []string{},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(jose.RS256)},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"claims_supported":                      []string{"iss", "sub", "aud", "azp", "exp", "iat", "jti", "typ"},
	}
}

func (p *IdP) serveStatic(body []byte, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		// Shorter than the verifier's 300 s freshness so that caches in
		// between never delay a rotation beyond one freshness period.
		w.Header().Set("Cache-Control", "public, max-age=60")
		_, _ = w.Write(body)
	}
}

func (p *IdP) serveDevicePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "Agent Bridge sign-in\n\n"+
		"This identity provider signs in the local operator only. Approve the code shown by\n"+
		"`bridge platform login` from the same machine; the approval is authenticated with\n"+
		"the daemon owner token (POST "+p.approvalURL+" with form field user_code).\n")
}

// oauthStatus is the identity provider's one table from OAuth error codes
// to statuses (RFC 6749 section 5.2, RFC 8628 section 3.5, and the
// approval route of docs/platform-api.md, "Built-in identity provider"):
// an error is 400 unless listed.
var oauthStatus = map[string]int{
	"invalid_client":          http.StatusUnauthorized,
	"unauthorized":            http.StatusUnauthorized,
	"invalid_user_code":       http.StatusNotFound,
	"already_decided":         http.StatusConflict,
	"temporarily_unavailable": http.StatusServiceUnavailable,
	"server_error":            http.StatusInternalServerError,
}

// oauthError writes an RFC 6749 section 5.2 error body, its status from
// oauthStatus.
func oauthError(w http.ResponseWriter, code, desc string) {
	status, ok := oauthStatus[code]
	if !ok {
		status = http.StatusBadRequest
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	body := map[string]string{"error": code}
	if desc != "" {
		body["error_description"] = desc
	}
	_ = json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// parseForm reads a bounded urlencoded body. Parameters may not repeat
// (RFC 6749 section 3.1) and query parameters are ignored.
func parseForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		// An oversized body is no OAuth error but the platform's 413
		// (docs/platform-api.md, "Built-in identity provider").
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpx.WriteProblem(w, r, &httpx.Problem{Status: http.StatusRequestEntityTooLarge, Code: codeRequestTooLarge,
				Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)})
			return nil, false
		}
		oauthError(w, "invalid_request", "unreadable form body")
		return nil, false
	}
	for _, v := range r.PostForm {
		if len(v) > 1 {
			oauthError(w, "invalid_request", "repeated parameter")
			return nil, false
		}
	}
	return r.PostForm, true
}

func (p *IdP) checkClient(w http.ResponseWriter, form url.Values) bool {
	if form.Get("client_id") != p.clientID {
		oauthError(w, "invalid_client", "unknown client")
		return false
	}
	return true
}

// serveDeviceCode starts a device authorization (RFC 8628 section 3.1/3.2).
func (p *IdP) serveDeviceCode(w http.ResponseWriter, r *http.Request) {
	form, ok := parseForm(w, r)
	if !ok || !p.checkClient(w, form) {
		return
	}
	d, deviceCode, err := p.startDevice()
	if err != nil {
		if errors.Is(err, errTooManyPending) {
			w.Header().Set("Retry-After", strconv.Itoa(int(p.interval.Seconds())))
			oauthError(w, "temporarily_unavailable", "too many pending sign-ins")
			return
		}
		oauthError(w, "server_error", "")
		return
	}
	display := d.userCode[:4] + "-" + d.userCode[4:]
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code":               deviceCode,
		"user_code":                 display,
		"verification_uri":          p.verifyURI,
		"verification_uri_complete": p.verifyURI + "?user_code=" + display,
		"expires_in":                int(p.deviceTTL.Seconds()),
		"interval":                  int(p.interval.Seconds()),
	})
}

var errTooManyPending = errors.New("too many pending device authorizations")

func (p *IdP) startDevice() (*deviceAuth, string, error) {
	secret := make([]byte, 32)
	if _, err := io.ReadFull(p.rand, secret); err != nil {
		return nil, "", fmt.Errorf("device code: %w", err)
	}
	deviceCode := base64.RawURLEncoding.EncodeToString(secret)
	now := p.now()

	p.mu.Lock()
	defer p.mu.Unlock()
	p.purgeExpiredLocked(now)
	if len(p.devices) >= p.maxPending {
		return nil, "", errTooManyPending
	}
	var userCode string
	for {
		uc, err := randomUserCode(p.rand)
		if err != nil {
			return nil, "", err
		}
		if _, taken := p.byUser[uc]; !taken {
			userCode = uc
			break
		}
	}
	d := &deviceAuth{
		hash:      hashDeviceCode(deviceCode),
		userCode:  userCode,
		expiresAt: now.Add(p.deviceTTL),
		interval:  p.interval,
	}
	p.devices[d.hash] = d
	p.byUser[userCode] = d
	return d, deviceCode, nil
}

// hashDeviceCode keys the store by a hash so the map never holds the bearer
// secret itself.
func hashDeviceCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return string(sum[:])
}

// randomUserCode draws userCodeLen characters uniformly (rejection sampling
// avoids modulo bias).
func randomUserCode(r io.Reader) (string, error) {
	const n = byte(len(userCodeAlphabet))
	const limit = 256 - 256%int(n)
	out := make([]byte, 0, userCodeLen)
	buf := make([]byte, 16)
	for len(out) < userCodeLen {
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", fmt.Errorf("user code: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < userCodeLen {
				out = append(out, userCodeAlphabet[b%n])
			}
		}
	}
	return string(out), nil
}

func (p *IdP) purgeExpiredLocked(now time.Time) {
	for h, d := range p.devices {
		if !now.Before(d.expiresAt) {
			p.removeLocked(h, d)
		}
	}
}

func (p *IdP) removeLocked(hash string, d *deviceAuth) {
	delete(p.devices, hash)
	delete(p.byUser, d.userCode)
}

// normalizeUserCode accepts the code as displayed, in any case, with or
// without the dash.
func normalizeUserCode(s string) (string, bool) {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(s))
	if len(s) != userCodeLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(userCodeAlphabet, rune(s[i])) {
			return "", false
		}
	}
	return s, true
}

// Approve grants the pending device authorization identified by userCode to
// subject. The daemon calls it once the operator has proven possession of
// the owner token.
func (p *IdP) Approve(userCode, subject string) error {
	if subject == "" || len(subject) > maxSubjectLen {
		return errors.New("auth: approve: subject must be 1..255 bytes")
	}
	return p.decide(userCode, deviceApproved, subject)
}

// Deny refuses the pending device authorization identified by userCode; the
// polling client receives access_denied.
func (p *IdP) Deny(userCode string) error {
	return p.decide(userCode, deviceDenied, "")
}

func (p *IdP) decide(userCode string, state deviceState, subject string) error {
	uc, ok := normalizeUserCode(userCode)
	if !ok {
		return ErrUnknownUserCode
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.byUser[uc]
	if !ok {
		return ErrUnknownUserCode
	}
	if !now.Before(d.expiresAt) {
		return ErrDeviceCodeExpired
	}
	if d.state != devicePending {
		return ErrDeviceCodeDecided
	}
	d.state, d.subject = state, subject
	return nil
}

// serveApprove is the HTTP approval entry point, guarded by the Approver.
func (p *IdP) serveApprove(w http.ResponseWriter, r *http.Request) {
	if p.approver == nil {
		http.NotFound(w, r)
		return
	}
	// One Authorization header: an approver reading the first of two
	// must not be offered a choice.
	_, repeated := httpx.SingleHeader(r.Header, "Authorization")
	subject, ok := p.approver(r)
	if repeated != nil || !ok {
		w.Header().Set("WWW-Authenticate", "Bearer")
		oauthError(w, "unauthorized", "owner authentication required")
		return
	}
	form, ok := parseForm(w, r)
	if !ok {
		return
	}
	var err error
	switch form.Get("action") {
	case "", "approve":
		err = p.Approve(form.Get("user_code"), subject)
	case "deny":
		err = p.Deny(form.Get("user_code"))
	default:
		oauthError(w, "invalid_request", "action must be approve or deny")
		return
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case errors.Is(err, ErrUnknownUserCode):
		oauthError(w, "invalid_user_code", "")
	case errors.Is(err, ErrDeviceCodeExpired):
		oauthError(w, "expired_token", "")
	case errors.Is(err, ErrDeviceCodeDecided):
		oauthError(w, "already_decided", "")
	default:
		oauthError(w, "invalid_request", "")
	}
}

// serveToken is the token endpoint for the device code grant
// (RFC 8628 section 3.4/3.5).
func (p *IdP) serveToken(w http.ResponseWriter, r *http.Request) {
	form, ok := parseForm(w, r)
	if !ok {
		return
	}
	if form.Get("grant_type") != GrantTypeDeviceCode {
		oauthError(w, "unsupported_grant_type", "")
		return
	}
	if !p.checkClient(w, form) {
		return
	}
	code := form.Get("device_code")
	if code == "" {
		oauthError(w, "invalid_request", "device_code required")
		return
	}
	subject, errCode := p.poll(hashDeviceCode(code))
	if errCode != "" {
		oauthError(w, errCode, "")
		return
	}
	tok, err := p.Mint(subject, nil)
	if err != nil {
		oauthError(w, "server_error", "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok,
		"token_type":   "Bearer",
		"expires_in":   int(p.tokenTTL.Seconds()),
	})
}

// poll applies one token request to the device authorization. It returns
// the subject once approved (consuming the code) or an RFC 8628 error code.
func (p *IdP) poll(hash string) (subject, errCode string) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.devices[hash]
	if !ok {
		return "", "invalid_grant"
	}
	if !now.Before(d.expiresAt) {
		p.removeLocked(hash, d)
		return "", "expired_token"
	}
	switch d.state {
	case deviceApproved:
		p.removeLocked(hash, d) // single use
		return d.subject, ""
	case deviceDenied:
		p.removeLocked(hash, d)
		return "", "access_denied"
	}
	if !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval {
		d.interval += slowDownStep
		d.lastPoll = now
		return "", "slow_down"
	}
	d.lastPoll = now
	return "", "authorization_pending"
}
