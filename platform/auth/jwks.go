package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Limits from docs/platform-api.md, "Limits" / "Token verification".
const (
	// MaxTokenBytes is the largest bearer token accepted (32 KiB).
	MaxTokenBytes = 32 << 10
	// MaxJWKSBytes is the largest key set response accepted (256 KiB).
	MaxJWKSBytes = 256 << 10
	// MaxJWKSKeys is the largest number of keys a key set may list.
	MaxJWKSKeys = 64
	// KeyFetchTimeout bounds one key set fetch end to end.
	KeyFetchTimeout = 5 * time.Second
	// KeyFreshness is how long a fetched key set is used without refreshing.
	KeyFreshness = 300 * time.Second
	// RefreshCooldown is the minimum spacing between unknown-kid refreshes,
	// and between retries after a failed fetch.
	RefreshCooldown = 5 * time.Second
	// DefaultMaxStale bounds how long a key set whose refreshes keep failing
	// is still used (measured from its last successful fetch).
	DefaultMaxStale = time.Hour
	// minRSABits rejects published RSA keys too short to be trusted.
	minRSABits = 2048
)

// newKeyHTTPClient builds the only client used to fetch keys: no ambient
// proxy (Proxy nil ignores HTTP(S)_PROXY), no redirects, hard timeouts.
func newKeyHTTPClient(rootCAs *x509.CertPool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: rootCAs},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          8,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		// JWKS URLs are fetched exactly as configured: a redirect is a
		// misconfiguration or an attack, never followed.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return ReasonJWKSRedirect
		},
	}
}

// validateJWKSURL accepts https anywhere and plain http only for loopback
// hosts (the embedded identity provider on the local services listener).
func validateJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid JWKS URL: %w", err)
	}
	if u.User != nil {
		return errors.New("JWKS URL must not carry credentials")
	}
	if u.Host == "" {
		return errors.New("JWKS URL needs a host")
	}
	if u.Fragment != "" {
		return errors.New("JWKS URL must not have a fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
		return errors.New("JWKS URL must use https unless the host is loopback")
	default:
		return fmt.Errorf("JWKS URL scheme %q not allowed", u.Scheme)
	}
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// keySet is an immutable snapshot of one issuer's usable verification keys.
type keySet struct {
	keys      []jose.JSONWebKey
	fetchedAt time.Time
}

// byKID returns the keys published under kid (a set may repeat a kid for
// different key types).
func (s *keySet) byKID(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range s.keys {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

func (s *keySet) hasKID(kid string) bool {
	for _, k := range s.keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}

// fetchCall is one in-flight fetch that any number of callers may wait on.
type fetchCall struct {
	done chan struct{}
	set  *keySet
	err  error
}

// keyCache holds the keys of one issuer and coordinates their refreshes.
//
// Policy (documented in doc.go):
//   - fresh (younger than KeyFreshness): used as is;
//   - stale but younger than maxStale: still used, and one background refresh
//     is started (stale-while-revalidate), so no request waits for a
//     periodic refresh; a failed refresh keeps the old keys;
//   - absent or older than maxStale: the caller waits for a fetch;
//   - unknown kid: one coordinated fetch that all concurrent callers share,
//     at most once per RefreshCooldown;
//   - after a failed fetch no new fetch starts for RefreshCooldown.
type keyCache struct {
	url       string
	client    *http.Client
	now       func() time.Time
	timeout   time.Duration
	freshness time.Duration
	cooldown  time.Duration
	maxStale  time.Duration

	current atomic.Pointer[keySet]
	fetches atomic.Int64 // fetches started, for tests and metrics

	mu             sync.Mutex
	inflight       *fetchCall
	lastKIDRefresh time.Time // start of the last unknown-kid refresh
	lastFailure    time.Time // end of the last failed fetch
	lastErr        error
}

// get returns the keys to verify with, fetching or refreshing as the policy
// above requires.
func (c *keyCache) get(ctx context.Context) (*keySet, error) {
	now := c.now()
	if ks := c.current.Load(); ks != nil {
		age := now.Sub(ks.fetchedAt)
		if age < c.freshness {
			return ks, nil
		}
		if age < c.maxStale {
			c.mu.Lock()
			if c.inflight == nil && !c.inCooldownLocked(now) {
				c.startLocked(ctx)
			}
			c.mu.Unlock()
			return ks, nil
		}
	}
	c.mu.Lock()
	call := c.inflight
	if call == nil {
		// Keys may have arrived while we waited for the lock.
		if ks := c.current.Load(); ks != nil && now.Sub(ks.fetchedAt) < c.maxStale {
			c.mu.Unlock()
			return ks, nil
		}
		if c.inCooldownLocked(now) {
			err := c.lastErr
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: last fetch failed: %w", ReasonJWKSCooldown, err)
		}
		call = c.startLocked(ctx)
	}
	c.mu.Unlock()
	return c.wait(ctx, call)
}

// refreshForKID runs (or joins) the coordinated refresh for an unknown key
// id. It returns the resulting key set, which may still lack kid.
func (c *keyCache) refreshForKID(ctx context.Context, kid string) (*keySet, error) {
	now := c.now()
	c.mu.Lock()
	if ks := c.current.Load(); ks != nil && ks.hasKID(kid) {
		// Another caller's refresh already brought the key in.
		c.mu.Unlock()
		return ks, nil
	}
	call := c.inflight
	if call == nil {
		if !c.lastKIDRefresh.IsZero() && now.Sub(c.lastKIDRefresh) < c.cooldown {
			c.mu.Unlock()
			return nil, ReasonJWKSCooldown
		}
		if c.inCooldownLocked(now) {
			c.mu.Unlock()
			return nil, ReasonJWKSCooldown
		}
		c.lastKIDRefresh = now
		call = c.startLocked(ctx)
	}
	c.mu.Unlock()
	return c.wait(ctx, call)
}

// refresh forces a fetch (or joins the running one) regardless of freshness.
func (c *keyCache) refresh(ctx context.Context) (*keySet, error) {
	c.mu.Lock()
	call := c.inflight
	if call == nil {
		call = c.startLocked(ctx)
	}
	c.mu.Unlock()
	return c.wait(ctx, call)
}

func (c *keyCache) inCooldownLocked(now time.Time) bool {
	return !c.lastFailure.IsZero() && now.Sub(c.lastFailure) < c.cooldown
}

// startLocked launches a fetch. The fetch is detached from the caller's
// cancellation so that one impatient caller cannot fail the fetch for all
// the others; KeyFetchTimeout bounds it instead.
func (c *keyCache) startLocked(ctx context.Context) *fetchCall {
	call := &fetchCall{done: make(chan struct{})}
	c.inflight = call
	c.fetches.Add(1)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	go func() {
		defer cancel()
		set, err := c.fetch(fctx)
		c.mu.Lock()
		if err == nil {
			c.current.Store(set)
			c.lastFailure = time.Time{}
			c.lastErr = nil
		} else {
			c.lastFailure = c.now()
			c.lastErr = err
		}
		c.inflight = nil
		c.mu.Unlock()
		call.set, call.err = set, err
		close(call.done)
	}()
	return call
}

func (c *keyCache) wait(ctx context.Context, call *fetchCall) (*keySet, error) {
	select {
	case <-call.done:
		return call.set, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ReasonJWKSFetch, ctx.Err())
	}
}

// fetch downloads and parses the key set from the configured URL only.
func (c *keyCache) fetch(ctx context.Context) (*keySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ReasonJWKSFetch, err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		if errors.Is(err, ReasonJWKSRedirect) {
			return nil, fmt.Errorf("%w: from %s", ReasonJWKSRedirect, c.url)
		}
		return nil, fmt.Errorf("%w: %w", ReasonJWKSFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %d", ReasonJWKSStatus, c.url, resp.StatusCode)
	}
	if resp.ContentLength > MaxJWKSBytes {
		return nil, fmt.Errorf("%w: %d bytes announced", ReasonJWKSTooLarge, resp.ContentLength)
	}
	// Read one byte past the limit to tell "exactly the limit" from "more".
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %w", ReasonJWKSFetch, err)
	}
	if len(body) > MaxJWKSBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ReasonJWKSTooLarge, MaxJWKSBytes)
	}
	keys, err := parseJWKS(body)
	if err != nil {
		return nil, err
	}
	return &keySet{keys: keys, fetchedAt: c.now()}, nil
}

// jwkMeta is the part of a JWK inspected before handing it to go-jose.
type jwkMeta struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	// Private or symmetric members: a published set carrying them is leaking
	// secrets, so such a key is never trusted.
	D  json.RawMessage `json:"d"`
	P  json.RawMessage `json:"p"`
	Q  json.RawMessage `json:"q"`
	DP json.RawMessage `json:"dp"`
	DQ json.RawMessage `json:"dq"`
	QI json.RawMessage `json:"qi"`
	K  json.RawMessage `json:"k"`
}

// parseJWKS parses a key set and keeps only public RSA and EC signature keys.
// Keys of other types or uses are ignored (RFC 7517 section 5); a set with
// more than MaxJWKSKeys entries is rejected whole, before any key is parsed.
func parseJWKS(body []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ReasonJWKSInvalid, err)
	}
	if doc.Keys == nil {
		return nil, fmt.Errorf("%w: no \"keys\" member", ReasonJWKSInvalid)
	}
	if len(doc.Keys) > MaxJWKSKeys {
		return nil, fmt.Errorf("%w: %d keys, at most %d", ReasonJWKSTooManyKeys, len(doc.Keys), MaxJWKSKeys)
	}
	keys := make([]jose.JSONWebKey, 0, len(doc.Keys))
	for _, raw := range doc.Keys {
		var meta jwkMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			continue
		}
		if meta.Kty != "RSA" && meta.Kty != "EC" {
			continue
		}
		if meta.Use != "" && meta.Use != "sig" {
			continue
		}
		if meta.D != nil || meta.P != nil || meta.Q != nil || meta.DP != nil ||
			meta.DQ != nil || meta.QI != nil || meta.K != nil {
			continue
		}
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue
		}
		if !k.Valid() || !k.IsPublic() {
			continue
		}
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			if pub.N.BitLen() < minRSABits {
				continue
			}
		case *ecdsa.PublicKey:
		default:
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, ReasonJWKSNoKeys
	}
	return keys, nil
}
