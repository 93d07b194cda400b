package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/identity"
)

// platformSession talks to the platform API of the running daemon with a
// platform access token: the cached sign-in of provider, renewed as
// needed (the local operator's is renewed automatically through the
// built-in provider, approved with the owner token).
type platformSession struct {
	c        *client
	cache    *tokenCache
	provider string
	token    string
	// announce reports an automatic sign-in (to stderr).
	announce func(string)
}

func (a *app) platformSession(ctx context.Context, provider string) (*platformSession, error) {
	c, err := a.daemonClient(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := a.dir()
	if err != nil {
		return nil, err
	}
	if provider == "" {
		provider = platform.LocalProviderID
	}
	return &platformSession{c: c, cache: newTokenCache(dir), provider: provider,
		announce: func(s string) { fmt.Fprintln(a.errw, s) }}, nil
}

// ensureToken returns a usable access token of the session's provider.
func (s *platformSession) ensureToken(ctx context.Context) (string, error) {
	if s.token != "" {
		return s.token, nil
	}
	t, err := s.cache.Get(s.provider)
	if err != nil {
		return "", err
	}
	now := time.Now()
	switch {
	case t.usable(now):
	case s.provider == platform.LocalProviderID:
		if t, err = s.loginLocal(ctx); err != nil {
			return "", err
		}
		if t != nil && s.announce != nil {
			s.announce("Signed in as the local operator (token cached).")
		}
	case t != nil && t.RefreshToken != "" && t.TokenEndpoint != "":
		tr, err := refreshToken(ctx, &http.Client{Timeout: 30 * time.Second}, t.TokenEndpoint, t.ClientID, t.RefreshToken)
		if err != nil {
			return "", fmt.Errorf("the sign-in of provider %q expired and could not be renewed (%v); run: bridge login --provider %s", s.provider, err, s.provider)
		}
		t.AccessToken, t.ExpiresAt = tr.AccessToken, expiry(now, tr.ExpiresIn)
		if tr.RefreshToken != "" {
			t.RefreshToken = tr.RefreshToken
		}
		if err := s.cache.Put(t); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("no valid sign-in for provider %q; run: bridge login --provider %s", s.provider, s.provider)
	}
	s.token = t.AccessToken
	return s.token, nil
}

func expiry(now time.Time, seconds int64) time.Time {
	if seconds <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(seconds) * time.Second)
}

// clientConfiguration reads the public sign-in settings.
func (s *platformSession) clientConfiguration(ctx context.Context) (identity.ClientConfiguration, error) {
	var cc identity.ClientConfiguration
	_, err := platformDo(ctx, s.c.http, s.c.state.ServicesURL, http.MethodGet, "/api/v1/client-configuration", "", nil, nil, &cc)
	return cc, err
}

func findSignIn(cc identity.ClientConfiguration, provider string) (identity.SignInEntry, error) {
	var ids []string
	for _, e := range cc.SignIn {
		if e.ProviderID == provider {
			return e, nil
		}
		ids = append(ids, e.ProviderID)
	}
	if provider == platform.LocalProviderID {
		return identity.SignInEntry{}, errors.New("the built-in identity provider is disabled (platform.identity.embedded.enabled)")
	}
	return identity.SignInEntry{}, fmt.Errorf("no sign-in entry for provider %q (configured: %s)", provider, strings.Join(ids, ", "))
}

// loginLocal signs the local operator in with the device flow of the
// built-in provider, approving the code with the owner token, and caches
// the token.
func (s *platformSession) loginLocal(ctx context.Context) (*cachedToken, error) {
	cc, err := s.clientConfiguration(ctx)
	if err != nil {
		return nil, err
	}
	e, err := findSignIn(cc, platform.LocalProviderID)
	if err != nil {
		return nil, err
	}
	dc, err := startDevice(ctx, s.c.http, e.DeviceAuthorizationEndpoint, e.ClientID, e.Scopes)
	if err != nil {
		return nil, err
	}
	var ok map[string]any
	if err := postForm(ctx, s.c.http, strings.TrimSuffix(e.Issuer, "/")+"/oauth/device/approve", url.Values{"user_code": {dc.UserCode}}, s.c.token, &ok); err != nil {
		return nil, fmt.Errorf("approve the sign-in with the owner token: %w", err)
	}
	tr, err := pollDevice(ctx, s.c.http, e.TokenEndpoint, e.ClientID, dc, true)
	if err != nil {
		return nil, err
	}
	t := &cachedToken{Provider: platform.LocalProviderID, Issuer: e.Issuer, ClientID: e.ClientID, AccessToken: tr.AccessToken,
		ExpiresAt: expiry(time.Now(), tr.ExpiresIn)}
	if err := s.cache.Put(t); err != nil {
		return nil, err
	}
	s.token = t.AccessToken
	return t, nil
}

// call sends a platform request with the session's token. A 401 with the
// local operator's cached token (expired early, or issued before the
// services port changed) signs in again once and retries.
func (s *platformSession) call(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	tok, err := s.ensureToken(ctx)
	if err != nil {
		return nil, err
	}
	h, err := platformDo(ctx, s.c.http, s.c.state.ServicesURL, method, path, tok, hdr, body, out)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && s.provider == platform.LocalProviderID {
		if _, err := s.loginLocal(ctx); err != nil {
			return nil, err
		}
		return platformDo(ctx, s.c.http, s.c.state.ServicesURL, method, path, s.token, hdr, body, out)
	}
	return h, err
}

// callOwner sends an /admin request with the daemon owner token (the
// built-in system principal).
func (s *platformSession) callOwner(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	return platformDo(ctx, s.c.http, s.c.state.ServicesURL, method, path, s.c.token, hdr, body, out)
}

// Client retry rule (docs/platform-api.md, "Generic rules"): a request the platform did
// not admit (429 PF-OPERATION-CAPACITY or PF-REQUEST-CAPACITY, 503
// PF-COMPATIBILITY) is sent again with the exact same body and headers
// (so the same Idempotency-Key) after its Retry-After, at most
// maxAttempts times in all; a wait longer than maxRetryWait is not
// waited for (the error says when to try again).
const (
	maxAttempts  = 4
	maxRetryWait = time.Minute
)

// retryable reports whether a refusal may be retried by the rule.
func retryable(status int, code string) bool {
	switch status {
	case http.StatusTooManyRequests:
		return code == "PF-OPERATION-CAPACITY" || code == "PF-REQUEST-CAPACITY"
	case http.StatusServiceUnavailable:
		return code == "PF-COMPATIBILITY"
	}
	return false
}

// retryAfter reads a Retry-After header: whole seconds or an HTTP date
// (1 second when absent or unreadable).
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return time.Second
}

// platformDo sends one request, retried by the client retry rule; answers
// >= 300 become *apiError with the problem's code and diagnostics.
func platformDo(ctx context.Context, hc *http.Client, base, method, path, bearer string, hdr map[string]string, body, out any) (http.Header, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		h, err := platformOnce(ctx, hc, base, method, path, bearer, hdr, data, body != nil, out)
		var ae *apiError
		if attempt == maxAttempts || !errors.As(err, &ae) || !retryable(ae.Status, ae.Code) {
			return h, err
		}
		wait := retryAfter(h, time.Now())
		if wait > maxRetryWait {
			return h, fmt.Errorf("%w (not retried: the platform asks to wait %s)", err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return h, err
		case <-t.C:
		}
	}
}

// platformOnce sends one attempt of a request whose body is data.
func platformOnce(ctx context.Context, hc *http.Client, base, method, path, bearer string, hdr map[string]string, data []byte, hasBody bool, out any) (http.Header, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return resp.Header, problemError(resp.StatusCode, raw)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

// problemError turns a problem+json body into an *apiError whose message
// includes the diagnostics (where and what).
func problemError(status int, data []byte) error {
	var p struct {
		Code        string `json:"code"`
		Message     string `json:"message"`
		Diagnostics []struct {
			Message   string `json:"message"`
			Path      string `json:"path"`
			Parameter string `json:"parameter"`
		} `json:"diagnostics"`
	}
	if json.Unmarshal(data, &p) != nil || p.Code == "" {
		return decodeAPIError(status, data)
	}
	msg := p.Message
	for _, d := range p.Diagnostics {
		switch {
		case d.Path != "":
			msg += fmt.Sprintf("; %s: %s", d.Path, d.Message)
		case d.Parameter != "":
			msg += fmt.Sprintf("; %s: %s", d.Parameter, d.Message)
		case d.Message != "" && !strings.Contains(msg, d.Message):
			msg += "; " + d.Message
		}
	}
	return &apiError{Status: status, Code: p.Code, Message: msg}
}

// collectPages follows next_cursor from path until the last page.
func collectPages[T any](ctx context.Context, s *platformSession, path string, owner bool) ([]T, error) {
	var all []T
	cursor := ""
	for {
		p := path
		if cursor != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Items      []T     `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		var err error
		if owner {
			_, err = s.callOwner(ctx, http.MethodGet, p, nil, nil, &page)
		} else {
			_, err = s.call(ctx, http.MethodGet, p, nil, nil, &page)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}
