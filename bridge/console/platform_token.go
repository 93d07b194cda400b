package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// platformToken signs the console in to the workflow platform as the local
// operator, as `bridge platform login` does (docs/platform-api.md, "Built-in
// identity provider"): a device code from the built-in provider, approved
// with the owner token, exchanged for an access token. The token is kept in
// memory and renewed before it expires.
type platformToken struct {
	http     *http.Client
	services string
	owner    string
	now      func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
}

// localProvider is the built-in provider's id in the client configuration.
const localProvider = "local"

func (p *platformToken) get(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token != "" && p.now().Add(2*time.Minute).Before(p.expires) {
		return p.token, nil
	}
	tok, ttl, err := p.signIn(ctx)
	if err != nil {
		return "", err
	}
	p.token, p.expires = tok, p.now().Add(ttl)
	return tok, nil
}

// forget drops tok if it is still the cached token.
func (p *platformToken) forget(tok string) {
	p.mu.Lock()
	if p.token == tok {
		p.token = ""
	}
	p.mu.Unlock()
}

func (p *platformToken) signIn(ctx context.Context) (string, time.Duration, error) {
	var cc struct {
		SignIn []struct {
			ProviderID                  string   `json:"provider_id"`
			ClientID                    string   `json:"client_id"`
			Scopes                      []string `json:"scopes"`
			Issuer                      string   `json:"issuer"`
			DeviceAuthorizationEndpoint string   `json:"device_authorization_endpoint"`
			TokenEndpoint               string   `json:"token_endpoint"`
		} `json:"sign_in"`
	}
	if err := p.do(ctx, http.MethodGet, p.services+"/api/v1/client-configuration", nil, "", &cc); err != nil {
		return "", 0, err
	}
	for _, e := range cc.SignIn {
		if e.ProviderID != localProvider {
			continue
		}
		form := url.Values{"client_id": {e.ClientID}}
		if len(e.Scopes) > 0 {
			form.Set("scope", strings.Join(e.Scopes, " "))
		}
		var dc struct {
			DeviceCode string `json:"device_code"`
			UserCode   string `json:"user_code"`
		}
		if err := p.do(ctx, http.MethodPost, e.DeviceAuthorizationEndpoint, form, "", &dc); err != nil {
			return "", 0, err
		}
		if err := p.do(ctx, http.MethodPost, strings.TrimSuffix(e.Issuer, "/")+"/oauth/device/approve", url.Values{"user_code": {dc.UserCode}}, p.owner, nil); err != nil {
			return "", 0, err
		}
		var tr struct {
			AccessToken string `json:"access_token"`
			ExpiresIn   int64  `json:"expires_in"`
		}
		grant := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {dc.DeviceCode}, "client_id": {e.ClientID}}
		if err := p.do(ctx, http.MethodPost, e.TokenEndpoint, grant, "", &tr); err != nil {
			return "", 0, err
		}
		if tr.AccessToken == "" {
			return "", 0, errors.New("the built-in identity provider answered no access token")
		}
		return tr.AccessToken, time.Duration(max(tr.ExpiresIn, 60)) * time.Second, nil
	}
	return "", 0, errors.New("the built-in identity provider is disabled (platform.identity.embedded.enabled)")
}

func (p *platformToken) do(ctx context.Context, method, target string, form url.Values, bearer string, out any) error {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s answered %d", method, req.URL.Path, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
