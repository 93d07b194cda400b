package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentbridge/bridge/client"

	"github.com/spf13/cobra"
)

// loginCmd is `bridge login --provider <id>`: sign in with a configured
// identity provider and cache the token for `bridge platform` commands.
func (a *app) loginCmd() *cobra.Command {
	var provider string
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in to the platform with a configured identity provider",
		Long: `Signs in to the workflow platform with one of the identity providers the daemon
publishes (GET /api/v1/client-configuration), and caches the access token in the
OS keychain (or a 0600 file in the data directory where there is none) for
'bridge platform --provider <id> ...' commands.

Providers whose sign-in entry uses the device flow show a code to enter at the
provider's verification page; providers configured for the authorization-code
flow print a URL to open in a browser and receive the answer on a one-shot
loopback address, with PKCE (S256). Provider 'local' is the daemon's built-in
provider (the same as 'bridge platform login').

A sign-in alone grants nothing: an administrator links it to a principal
('bridge platform principal create') and grants it access ('bridge platform
grant').`,
		Example: `  bridge login --provider corp
  bridge login --provider corp --json
  bridge platform --provider corp identity`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			s, err := a.platformSession(ctx, provider)
			if err != nil {
				return err
			}
			if provider == client.LocalProviderID {
				if _, err := s.loginLocal(ctx); err != nil {
					return err
				}
			} else if err := a.loginExternal(ctx, s); err != nil {
				return err
			}
			return a.reportSignIn(ctx, s, asJSON)
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "id of the identity provider (see GET /api/v1/client-configuration); required")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for the sign-in to be completed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the resulting identity as JSON")
	_ = cmd.MarkFlagRequired("provider")
	return cmd
}

// loginExternal runs the provider's sign-in flow and caches the token.
func (a *app) loginExternal(ctx context.Context, s *platformSession) error {
	cc, err := s.clientConfiguration(ctx)
	if err != nil {
		return err
	}
	e, err := findSignIn(cc, s.provider)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	ep := oauthEndpoints{DeviceAuthorization: e.DeviceAuthorizationEndpoint, Authorization: e.AuthorizationEndpoint, Token: e.TokenEndpoint}
	needs := ep.Token == "" || (e.Flow == client.FlowAuthorizationCode && ep.Authorization == "") ||
		(e.Flow != client.FlowAuthorizationCode && ep.DeviceAuthorization == "")
	if needs {
		d, err := discover(ctx, hc, e.Issuer)
		if err != nil {
			return err
		}
		ep.DeviceAuthorization = or(ep.DeviceAuthorization, d.DeviceAuthorization)
		ep.Authorization = or(ep.Authorization, d.Authorization)
		ep.Token = or(ep.Token, d.Token)
	}
	var tr tokenResponse
	if e.Flow == client.FlowAuthorizationCode {
		tr, err = authCodeFlow(ctx, hc, ep, e.ClientID, e.Scopes, func(u string) {
			fmt.Fprintf(a.errw, "Open this address in a browser to sign in with %s:\n\n  %s\n\nWaiting for the sign-in to complete...\n", e.DisplayName, u)
		})
	} else {
		if ep.DeviceAuthorization == "" || ep.Token == "" {
			return fmt.Errorf("provider %q publishes no device authorization or token endpoint", s.provider)
		}
		var dc deviceCode
		if dc, err = startDevice(ctx, hc, ep.DeviceAuthorization, e.ClientID, e.Scopes); err != nil {
			return err
		}
		where := dc.VerificationURI
		if dc.VerificationURIComplete != "" {
			where = dc.VerificationURIComplete
		}
		fmt.Fprintf(a.errw, "To sign in with %s, open %s\nand enter the code %s\n\nWaiting for the sign-in to complete...\n", e.DisplayName, where, dc.UserCode)
		tr, err = pollDevice(ctx, hc, ep.Token, e.ClientID, dc, false)
	}
	if err != nil {
		return err
	}
	t := &cachedToken{Provider: s.provider, Issuer: e.Issuer, ClientID: e.ClientID, AccessToken: tr.AccessToken,
		RefreshToken: tr.RefreshToken, TokenEndpoint: ep.Token, ExpiresAt: expiry(time.Now(), tr.ExpiresIn)}
	if err := s.cache.Put(t); err != nil {
		return err
	}
	s.token = t.AccessToken
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// reportSignIn shows who the new token signs in as; an unlinked sign-in is
// reported with what an administrator needs to link it.
func (a *app) reportSignIn(ctx context.Context, s *platformSession, asJSON bool) error {
	id, err := client.Platform{D: s.services(s.token)}.Identity(ctx)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		iss, sub := unverifiedSubject(s.token)
		fmt.Fprintf(a.errw, "Signed in to %s as subject %q, but that sign-in is not linked to a platform principal.\n"+
			"An administrator can link it and grant it access:\n  bridge platform principal create --kind human --issuer %s --subject %s\n", s.provider, sub, iss, sub)
		if asJSON {
			return a.printJSON(map[string]any{"provider": s.provider, "issuer": iss, "subject": sub, "linked": false})
		}
		return nil
	}
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(id)
	}
	fmt.Fprintf(a.out, "Signed in with %s; the token is cached for 'bridge platform' commands.\n", s.provider)
	printIdentity(a, id)
	return nil
}

// unverifiedSubject reads iss and sub from a JWT payload for display only.
func unverifiedSubject(tok string) (iss, sub string) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", ""
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", ""
	}
	var c struct {
		Iss string `json:"iss"`
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(data, &c)
	return c.Iss, c.Sub
}

// platformLoginCmd is `bridge platform login`.
func (a *app) platformLoginCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in as the local operator with the built-in identity provider",
		Long: `Signs the local operator in to the platform: runs the device authorization flow
of the daemon's built-in identity provider, approves the code with the owner
token (which proves you are the machine's owner), and caches the access token
in the OS keychain (or a 0600 file in the data directory). Prints your principal
and workspace. Other 'bridge platform' commands sign in this way by themselves
when no valid token is cached.`,
		Example: `  bridge platform login
  bridge platform login --json | jq -r .principal_id
  curl -H "Authorization: Bearer $(bridge platform token)" "$(bridge status --json | jq -r .services_url)/api/v1/identity"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.platformSession(cmd.Context(), client.LocalProviderID)
			if err != nil {
				return err
			}
			if _, err := s.loginLocal(cmd.Context()); err != nil {
				return err
			}
			return a.reportSignIn(cmd.Context(), s, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the identity as JSON")
	return cmd
}

func (a *app) platformLogoutCmd(provider *string) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the cached platform token of a provider",
		Long: `Removes the cached access token of the provider (--provider, default local) from
the keychain and the token file. The token itself stays valid until it expires;
to cut access at once, disable the principal or revoke its grants.`,
		Example: `  bridge platform logout
  bridge platform --provider corp logout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dir()
			if err != nil {
				return err
			}
			p := or(*provider, client.LocalProviderID)
			found, err := newTokenCache(dir).Delete(p)
			if err != nil {
				return err
			}
			if found {
				fmt.Fprintf(a.out, "Forgot the cached token of %s.\n", p)
			} else {
				fmt.Fprintf(a.out, "No token of %s was cached.\n", p)
			}
			return nil
		},
	}
}

func (a *app) platformTokenCmd(provider *string) *cobra.Command {
	return &cobra.Command{
		Use:   "token",
		Short: "Print a platform access token for curl and scripts",
		Long: `Prints the cached access token of the provider (--provider, default local),
signing the local operator in first when none is valid. Treat it as a password.`,
		Example: `  curl -H "Authorization: Bearer $(bridge platform token)" http://127.0.0.1:8080/api/v1/identity
  bridge platform --provider corp token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.platformSession(cmd.Context(), *provider)
			if err != nil {
				return err
			}
			s.announce = nil
			tok, err := s.ensureToken(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintln(a.out, tok)
			return nil
		},
	}
}
