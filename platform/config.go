package platform

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/identity"
)

// Config is the platform's part of config.yaml. The platform decodes only
// its own sub-sections of "platform" (platform.identity, platform.docs,
// platform.api, platform.audit); platform.webhooks and platform.callbacks
// belong to other subsystems.
type Config struct {
	Identity IdentityConfig
	Docs     DocsConfig
	API      APIConfig
	Audit    AuditConfig
	Files    FilesConfig
	Runs     RunsConfig
}

// IdentityConfig is platform.identity: the built-in identity provider, the
// external providers whose tokens are accepted and the sign-in entries
// published by GET /api/v1/client-configuration.
//
//	platform:
//	  identity:
//	    display-name: Acme workflows
//	    embedded:
//	      enabled: true
//	    providers:
//	      corp:
//	        display-name: Corp SSO
//	        issuer: https://sso.example.com/realms/acme
//	        jwks-url: https://sso.example.com/realms/acme/protocol/openid-connect/certs
//	        audience: platform-api
//	        clients:
//	          bridge-cli: {kind: human}
//	          ci-runner: {kind: application}
//	    sign-in:
//	      corp:
//	        provider: corp
//	        client: bridge-cli
//	        scopes: [openid, profile]
type IdentityConfig struct {
	// DisplayName is the server's published display name.
	DisplayName string                    `yaml:"display-name"`
	Embedded    EmbeddedConfig            `yaml:"embedded"`
	Providers   map[string]ProviderConfig `yaml:"providers"`
	SignIn      map[string]SignInConfig   `yaml:"sign-in"`
}

// EmbeddedConfig is platform.identity.embedded: the built-in provider on
// the services listener (issuer <services URL>/idp).
type EmbeddedConfig struct {
	Enabled  bool            `yaml:"enabled"`
	Audience string          `yaml:"audience"`
	ClientID string          `yaml:"client-id"`
	TokenTTL config.Duration `yaml:"token-ttl"`
}

// ProviderConfig is one external OIDC identity provider.
type ProviderConfig struct {
	DisplayName string `yaml:"display-name"`
	// Issuer is the exact iss of its tokens.
	Issuer string `yaml:"issuer"`
	// JWKSURL is the only URL its keys are fetched from (https, or http on
	// loopback); no redirects, no proxies.
	JWKSURL  string `yaml:"jwks-url"`
	Audience string `yaml:"audience"`
	// Algorithms allowed (default RS256).
	Algorithms []string        `yaml:"algorithms"`
	Leeway     config.Duration `yaml:"leeway"`
	// Clients are the accepted client ids (azp, else client_id) and their
	// kind: human clients are what people sign in with.
	Clients map[string]ClientConfig `yaml:"clients"`
	// Endpoints for sign-in; when empty, clients read the issuer's OIDC
	// discovery document.
	DeviceAuthorizationEndpoint string `yaml:"device-authorization-endpoint"`
	AuthorizationEndpoint       string `yaml:"authorization-endpoint"`
	TokenEndpoint               string `yaml:"token-endpoint"`
}

// ClientConfig describes one client of a provider.
type ClientConfig struct {
	Kind string `yaml:"kind"` // human, application or worker
}

// SignInConfig is one published sign-in entry; it must name a configured
// provider and one of its human clients.
type SignInConfig struct {
	Provider    string   `yaml:"provider"`
	Client      string   `yaml:"client"`
	DisplayName string   `yaml:"display-name"`
	Scopes      []string `yaml:"scopes"`
	// Flow is device (default) or authorization-code (with PKCE S256).
	Flow string `yaml:"flow"`
}

// DocsConfig is platform.docs; PLATFORM_DOCS_ENABLED=true serves /docs.
type DocsConfig struct {
	Enabled bool `yaml:"enabled"`
}

// APIConfig is platform.api.
type APIConfig struct {
	// MaxBodyBytes bounds request bodies (413 beyond).
	MaxBodyBytes int64 `yaml:"max-body-bytes"`
	// IdempotencyRetention is how long committed results stay replayable.
	IdempotencyRetention config.Duration `yaml:"idempotency-retention"`
}

// AuditConfig is platform.audit.
type AuditConfig struct {
	// Retention is how long access decisions are kept; 0 keeps them forever.
	Retention config.Duration `yaml:"retention"`
}

// LocalProviderID is the provider id of the built-in identity provider in
// the published sign-in entries.
const LocalProviderID = "local"

// DefaultConfig is the configuration used when config.yaml says nothing.
func DefaultConfig() Config {
	return Config{
		Identity: IdentityConfig{
			DisplayName: "Agent Bridge",
			Embedded: EmbeddedConfig{Enabled: true, Audience: "agent-bridge-platform", ClientID: "bridge-cli",
				TokenTTL: config.Duration(time.Hour)},
		},
		API:   APIConfig{MaxBodyBytes: 1 << 20, IdempotencyRetention: config.Duration(api.DefaultIdempotencyRetention)},
		Audit: AuditConfig{Retention: config.Duration(30 * 24 * time.Hour)},
		Files: defaultFilesConfig(),
		Runs:  defaultRunsConfig(),
	}
}

// LoadConfig decodes the platform's sub-sections of f over the defaults.
func LoadConfig(f *config.File) (Config, error) {
	c := DefaultConfig()
	for _, sec := range []struct {
		name string
		out  any
	}{{"platform.identity", &c.Identity}, {"platform.docs", &c.Docs}, {"platform.api", &c.API}, {"platform.audit", &c.Audit}, {"platform.files", &c.Files}, {"platform.runs", &c.Runs}} {
		if err := f.Decode(sec.name, sec.out); err != nil {
			return c, err
		}
	}
	return c, nil
}

var providerID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Validate checks platform.identity (called by config.File.Decode).
func (c *IdentityConfig) Validate() error {
	if strings.TrimSpace(c.DisplayName) == "" {
		return errors.New("display-name must not be empty")
	}
	e := c.Embedded
	if e.Enabled {
		if e.Audience == "" || e.ClientID == "" {
			return errors.New("embedded: audience and client-id must not be empty")
		}
		if d := e.TokenTTL.D(); d < time.Minute || d > 24*time.Hour {
			return fmt.Errorf("embedded: token-ttl %s is outside 1m..24h", d)
		}
	}
	issuers := map[string]string{}
	for id, p := range c.Providers {
		if !providerID.MatchString(id) || id == LocalProviderID {
			return fmt.Errorf("providers: %q is not a valid provider id (lowercase letters, digits, - and _; %q is reserved)", id, LocalProviderID)
		}
		if err := p.validate(); err != nil {
			return fmt.Errorf("providers.%s: %w", id, err)
		}
		if other, dup := issuers[p.Issuer]; dup {
			return fmt.Errorf("providers.%s: issuer %q is also the issuer of providers.%s", id, p.Issuer, other)
		}
		if p.Issuer == identity.LocalIssuer || p.Issuer == identity.OwnerIssuer {
			return fmt.Errorf("providers.%s: issuer %q is reserved", id, p.Issuer)
		}
		issuers[p.Issuer] = id
	}
	byProvider := map[string]string{}
	for id, s := range c.SignIn {
		if other, dup := byProvider[s.Provider]; dup {
			return fmt.Errorf("sign-in.%s: provider %q already has the sign-in entry %q (one per provider)", id, s.Provider, other)
		}
		byProvider[s.Provider] = id
		p, ok := c.Providers[s.Provider]
		if !ok {
			return fmt.Errorf("sign-in.%s: provider %q is not configured under platform.identity.providers", id, s.Provider)
		}
		cl, ok := p.Clients[s.Client]
		if !ok || cl.Kind != "human" {
			return fmt.Errorf("sign-in.%s: client %q is not a human client of provider %q", id, s.Client, s.Provider)
		}
		if _, err := signInFlow(s.Flow); err != nil {
			return fmt.Errorf("sign-in.%s: %w", id, err)
		}
		for _, sc := range s.Scopes {
			if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
				return fmt.Errorf("sign-in.%s: scope %q is not a valid OAuth scope", id, sc)
			}
		}
	}
	return nil
}

func signInFlow(f string) (string, error) {
	switch f {
	case "", "device":
		return identity.FlowDevice, nil
	case "authorization-code", "authorization_code":
		return identity.FlowAuthorizationCode, nil
	}
	return "", fmt.Errorf("flow %q must be device or authorization-code", f)
}

func (p ProviderConfig) validate() error {
	u, err := url.Parse(p.Issuer)
	if p.Issuer == "" || err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("issuer %q must be an absolute URL", p.Issuer)
	}
	if p.JWKSURL == "" {
		return errors.New("jwks-url is required")
	}
	if p.Audience == "" {
		return errors.New("audience is required")
	}
	if len(p.Clients) == 0 {
		return errors.New("clients: at least one client is required")
	}
	for id, cl := range p.Clients {
		if id == "" {
			return errors.New("clients: empty client id")
		}
		if !slices.Contains([]string{"human", "application", "worker"}, cl.Kind) {
			return fmt.Errorf("clients.%s: kind %q must be human, application or worker", id, cl.Kind)
		}
	}
	if d := p.Leeway.D(); d > 5*time.Minute {
		return fmt.Errorf("leeway %s exceeds 5m", d)
	}
	for name, ep := range map[string]string{"device-authorization-endpoint": p.DeviceAuthorizationEndpoint,
		"authorization-endpoint": p.AuthorizationEndpoint, "token-endpoint": p.TokenEndpoint} {
		if ep == "" {
			continue
		}
		if u, err := url.Parse(ep); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%s %q must be an absolute http(s) URL", name, ep)
		}
	}
	return nil
}

// Validate checks platform.api.
func (c *APIConfig) Validate() error {
	if c.MaxBodyBytes < 1<<10 || c.MaxBodyBytes > 64<<20 {
		return fmt.Errorf("max-body-bytes %d is outside 1024..67108864", c.MaxBodyBytes)
	}
	if c.IdempotencyRetention.D() < time.Hour {
		return fmt.Errorf("idempotency-retention %s is shorter than 1h", c.IdempotencyRetention.D())
	}
	return nil
}
