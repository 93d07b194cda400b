package cli

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// oauthEndpoints are a provider's sign-in endpoints.
type oauthEndpoints struct {
	DeviceAuthorization string `json:"device_authorization_endpoint"`
	Authorization       string `json:"authorization_endpoint"`
	Token               string `json:"token_endpoint"`
}

// maxOAuthBody bounds what is read from a provider.
const maxOAuthBody = 1 << 20

// discover reads the OIDC discovery document of issuer.
func discover(ctx context.Context, hc *http.Client, issuer string) (oauthEndpoints, error) {
	var ep oauthEndpoints
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ep, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ep, fmt.Errorf("read the provider's discovery document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ep, fmt.Errorf("read the provider's discovery document %s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxOAuthBody)).Decode(&ep); err != nil {
		return ep, fmt.Errorf("read the provider's discovery document: %w", err)
	}
	return ep, nil
}

// tokenResponse is an RFC 6749 token answer.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// oauthError is an RFC 6749 error answer.
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
	Status      int    `json:"-"`
}

func (e *oauthError) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Description)
	}
	if e.Code != "" {
		return e.Code
	}
	return fmt.Sprintf("HTTP %d", e.Status)
}

// postForm sends an urlencoded form and decodes a JSON answer into out; a
// non-2xx answer is an *oauthError.
func postForm(ctx context.Context, hc *http.Client, endpoint string, form url.Values, bearer string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxOAuthBody))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &oauthError{Status: resp.StatusCode}
		_ = json.Unmarshal(data, e)
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("unexpected answer from %s: %w", endpoint, err)
	}
	return nil
}

// deviceCode is an RFC 8628 device authorization answer.
type deviceCode struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval"`
}

// startDevice requests a device code.
func startDevice(ctx context.Context, hc *http.Client, endpoint, clientID string, scopes []string) (deviceCode, error) {
	var dc deviceCode
	form := url.Values{"client_id": {clientID}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if err := postForm(ctx, hc, endpoint, form, "", &dc); err != nil {
		return dc, fmt.Errorf("start the device sign-in: %w", err)
	}
	if dc.DeviceCode == "" || dc.UserCode == "" {
		return dc, errors.New("start the device sign-in: the provider answered no device or user code")
	}
	return dc, nil
}

// pollDevice polls the token endpoint until the device authorization is
// approved, denied or expired (RFC 8628 section 3.4/3.5). With immediate,
// the first poll is sent at once (the code was approved already).
func pollDevice(ctx context.Context, hc *http.Client, endpoint, clientID string, dc deviceCode, immediate bool) (tokenResponse, error) {
	interval := time.Duration(dc.Interval) * time.Second
	if dc.Interval == 0 {
		interval = 5 * time.Second
	}
	interval = max(interval, time.Second)
	expires := time.Duration(dc.ExpiresIn) * time.Second
	if expires <= 0 {
		expires = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, expires)
	defer cancel()
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {dc.DeviceCode}, "client_id": {clientID}}
	wait := interval
	if immediate {
		wait = 0
	}
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return tokenResponse{}, errors.New("the sign-in code expired before it was approved; run the command again")
			}
			return tokenResponse{}, ctx.Err()
		case <-time.After(wait):
		}
		wait = interval
		var tr tokenResponse
		err := postForm(ctx, hc, endpoint, form, "", &tr)
		var oe *oauthError
		switch {
		case err == nil:
			if tr.AccessToken == "" {
				return tr, errors.New("the provider answered no access token")
			}
			return tr, nil
		case errors.As(err, &oe) && oe.Code == "authorization_pending":
		case errors.As(err, &oe) && oe.Code == "slow_down":
			interval += 5 * time.Second
			wait = interval
		case errors.As(err, &oe) && oe.Code == "access_denied":
			return tr, errors.New("the sign-in was denied")
		case errors.As(err, &oe) && oe.Code == "expired_token":
			return tr, errors.New("the sign-in code expired before it was approved; run the command again")
		default:
			return tr, fmt.Errorf("sign-in: %w", err)
		}
	}
}

// randomURLString returns n random bytes, base64url encoded.
func randomURLString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// pkceChallenge is the S256 code challenge of verifier (RFC 7636).
func pkceChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authCodeFlow signs in with the authorization-code flow and PKCE (S256):
// a one-shot loopback listener receives the redirect (RFC 8252); show
// prints the URL to open in a browser.
func authCodeFlow(ctx context.Context, hc *http.Client, ep oauthEndpoints, clientID string, scopes []string, show func(string)) (tokenResponse, error) {
	var tr tokenResponse
	if ep.Authorization == "" || ep.Token == "" {
		return tr, errors.New("the provider publishes no authorization or token endpoint")
	}
	verifier, err := randomURLString(32)
	if err != nil {
		return tr, err
	}
	state, err := randomURLString(16)
	if err != nil {
		return tr, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tr, fmt.Errorf("listen for the sign-in redirect: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	type result struct {
		code string
		err  error
	}
	done := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := result{code: q.Get("code")}
		switch {
		case q.Get("state") != state:
			res = result{err: errors.New("the sign-in redirect carried the wrong state")}
		case q.Get("error") != "":
			res = result{err: fmt.Errorf("the provider refused the sign-in: %s", q.Get("error"))}
		case res.code == "":
			res = result{err: errors.New("the sign-in redirect carried no code")}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, "Sign-in failed; see the terminal.")
		} else {
			fmt.Fprintln(w, "Signed in. You can close this window and return to the terminal.")
		}
		select {
		case done <- res:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {state},
		"code_challenge": {pkceChallenge(verifier)}, "code_challenge_method": {"S256"},
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	sep := "?"
	if strings.Contains(ep.Authorization, "?") {
		sep = "&"
	}
	show(ep.Authorization + sep + q.Encode())
	var res result
	select {
	case <-ctx.Done():
		return tr, fmt.Errorf("waiting for the sign-in redirect: %w", ctx.Err())
	case res = <-done:
	}
	if res.err != nil {
		return tr, res.err
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {res.code}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}}
	if err := postForm(ctx, hc, ep.Token, form, "", &tr); err != nil {
		return tr, fmt.Errorf("exchange the sign-in code: %w", err)
	}
	if tr.AccessToken == "" {
		return tr, errors.New("the provider answered no access token")
	}
	return tr, nil
}

// refreshToken exchanges a refresh token (RFC 6749 section 6).
func refreshToken(ctx context.Context, hc *http.Client, endpoint, clientID, refresh string) (tokenResponse, error) {
	var tr tokenResponse
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {clientID}}
	if err := postForm(ctx, hc, endpoint, form, "", &tr); err != nil {
		return tr, err
	}
	if tr.AccessToken == "" {
		return tr, errors.New("the provider answered no access token")
	}
	return tr, nil
}
