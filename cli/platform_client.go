package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentbridge/bridge/client"
)

// platformSession talks to the platform API of the running daemon with a
// platform access token: the cached sign-in of provider, renewed as
// needed (the local operator's is renewed automatically through the
// built-in provider, approved with the owner token).
type platformSession struct {
	c        *daemonConn
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
		provider = client.LocalProviderID
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
	case s.provider == client.LocalProviderID:
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
func (s *platformSession) clientConfiguration(ctx context.Context) (client.ClientConfiguration, error) {
	var cc client.ClientConfiguration
	_, err := s.services("").Do(ctx, http.MethodGet, "/api/v1/client-configuration", nil, nil, &cc)
	return cc, err
}

func findSignIn(cc client.ClientConfiguration, provider string) (client.SignInEntry, error) {
	var ids []string
	for _, e := range cc.SignIn {
		if e.ProviderID == provider {
			return e, nil
		}
		ids = append(ids, e.ProviderID)
	}
	if provider == client.LocalProviderID {
		return client.SignInEntry{}, errors.New("the built-in identity provider is disabled (platform.identity.embedded.enabled)")
	}
	return client.SignInEntry{}, fmt.Errorf("no sign-in entry for provider %q (configured: %s)", provider, strings.Join(ids, ", "))
}

// loginLocal signs the local operator in with the device flow of the
// built-in provider, approving the code with the owner token, and caches
// the token.
func (s *platformSession) loginLocal(ctx context.Context) (*cachedToken, error) {
	cc, err := s.clientConfiguration(ctx)
	if err != nil {
		return nil, err
	}
	e, err := findSignIn(cc, client.LocalProviderID)
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
	t := &cachedToken{Provider: client.LocalProviderID, Issuer: e.Issuer, ClientID: e.ClientID, AccessToken: tr.AccessToken,
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
	h, err := s.services(tok).Do(ctx, method, path, hdr, body, out)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && s.provider == client.LocalProviderID {
		if _, err := s.loginLocal(ctx); err != nil {
			return nil, err
		}
		return s.services(s.token).Do(ctx, method, path, hdr, body, out)
	}
	return h, err
}

// Do is call: the session is a client.Doer for the typed platform API.
func (s *platformSession) Do(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	return s.call(ctx, method, path, hdr, body, out)
}

// ownerDoer sends the session's requests with the daemon owner token.
type ownerDoer struct{ s *platformSession }

func (o ownerDoer) Do(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	return o.s.callOwner(ctx, method, path, hdr, body, out)
}

// callOwner sends an /admin request with the daemon owner token (the
// built-in system principal).
func (s *platformSession) callOwner(ctx context.Context, method, path string, hdr map[string]string, body, out any) (http.Header, error) {
	return s.services(s.c.token).Do(ctx, method, path, hdr, body, out)
}

// services is a client of the services listener that sends token (none
// when empty), with the client retry rule.
func (s *platformSession) services(token string) *client.Client {
	return s.c.api(s.c.state.ServicesURL).WithToken(token)
}

// collectPages follows next_cursor from path until the last page, with
// the session's token or, when owner, the owner token.
func collectPages[T any](ctx context.Context, s *platformSession, path string, owner bool) ([]T, error) {
	if owner {
		return client.Collect[T](ctx, ownerDoer{s}, path)
	}
	return client.Collect[T](ctx, s, path)
}
