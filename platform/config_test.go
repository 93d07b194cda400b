package platform_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform"
)

func loadConfig(t *testing.T, yaml string, env map[string]string) (platform.Config, error) {
	t.Helper()
	f, err := config.Parse("config.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return platform.LoadConfig(f)
}

func TestConfigDefaultsAndEnv(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	c, err := loadConfig(t, "", nil)
	is.NoErr(err)
	is.True(c.Identity.Embedded.Enabled)
	is.True(!c.Docs.Enabled)
	is.Equal(c.API.MaxBodyBytes, int64(1<<20))
	is.Equal(c.Identity.Embedded.TokenTTL.D(), time.Hour)
	c, err = loadConfig(t, "", map[string]string{"PLATFORM_DOCS_ENABLED": "true", "PLATFORM_IDENTITY_DISPLAY_NAME": "Ops",
		"PLATFORM_AUDIT_RETENTION": "P7D", "PLATFORM_IDENTITY_EMBEDDED_TOKEN_TTL": "15m"})
	is.NoErr(err)
	is.True(c.Docs.Enabled)
	is.Equal(c.Identity.DisplayName, "Ops")
	is.Equal(c.Audit.Retention.D(), 7*24*time.Hour)
	is.Equal(c.Identity.Embedded.TokenTTL.D(), 15*time.Minute)
	// Sibling sections belong to other subsystems and are left alone.
	_, err = loadConfig(t, "platform:\n  webhooks:\n    anything: 1\n", nil)
	is.NoErr(err)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	provider := `
platform:
  identity:
    providers:
      corp:
        issuer: https://sso.example.test
        jwks-url: https://sso.example.test/keys
        audience: api
        clients:
          cli: {kind: human}
          bot: {kind: application}
`
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "platform:\n  identity:\n    colour: red\n", `config.yaml:3:5: unknown key "colour"`},
		{"unknown docs key", "platform:\n  docs:\n    enable: true\n", `unknown key "enable"`},
		{"bad bool", "platform:\n  docs:\n    enabled: maybe\n", "boolean"},
		{"blank display name", "platform:\n  identity:\n    display-name: ' '\n", "display-name must not be empty"},
		{"token ttl", "platform:\n  identity:\n    embedded:\n      token-ttl: 30s\n", "token-ttl"},
		{"provider id", strings.Replace(provider, "corp:", "Corp!:", 1), "not a valid provider id"},
		{"reserved id", strings.Replace(provider, "corp:", "local:", 1), "reserved"},
		{"no jwks", strings.Replace(provider, "        jwks-url: https://sso.example.test/keys\n", "", 1), "jwks-url is required"},
		{"relative issuer", strings.Replace(provider, "issuer: https://sso.example.test", "issuer: sso", 1), "absolute URL"},
		{"client kind", strings.Replace(provider, "{kind: application}", "{kind: robot}", 1), "kind \"robot\""},
		{"leeway", strings.Replace(provider, "audience: api", "audience: api\n        leeway: 10m", 1), "leeway"},
		{"sign-in unknown provider", provider + "    sign-in:\n      x:\n        provider: nope\n        client: cli\n", `provider "nope" is not configured`},
		{"sign-in unknown client", provider + "    sign-in:\n      x:\n        provider: corp\n        client: nope\n", `client "nope" is not a human client`},
		{"sign-in non-human client", provider + "    sign-in:\n      x:\n        provider: corp\n        client: bot\n", `client "bot" is not a human client`},
		{"sign-in flow", provider + "    sign-in:\n      x:\n        provider: corp\n        client: cli\n        flow: implicit\n", "flow"},
		{"sign-in scope", provider + "    sign-in:\n      x:\n        provider: corp\n        client: cli\n        scopes: ['a b']\n", "scope"},
		{"two entries for one provider", provider + "    sign-in:\n      x:\n        provider: corp\n        client: cli\n      y:\n        provider: corp\n        client: cli\n", "one per provider"},
		{"body limit low", "platform:\n  api:\n    max-body-bytes: 1023\n", "max-body-bytes"},
		{"body limit high", "platform:\n  api:\n    max-body-bytes: 67108865\n", "max-body-bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadConfig(t, c.yaml, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	// The bounds themselves are accepted.
	for _, y := range []string{"platform:\n  api:\n    max-body-bytes: 1024\n", "platform:\n  api:\n    max-body-bytes: 67108864\n",
		provider + "    sign-in:\n      x:\n        provider: corp\n        client: cli\n        flow: authorization-code\n"} {
		if _, err := loadConfig(t, y, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConfigErrorStopsTheDaemon: a bad platform section fails the start
// with the position, and nothing is left running.
func TestConfigErrorStopsTheDaemon(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f, err := config.Parse("config.yaml", []byte("platform:\n  identity:\n    sign-in:\n      x:\n        provider: ghost\n        client: c\n"))
	is.NoErr(err)
	cfg := daemon.DefaultConfig()
	cfg.Listen.BridgePort, cfg.Listen.ServicesPort = 0, 0
	_, err = daemon.Start(context.Background(), daemon.Options{DataDir: t.TempDir(), Config: cfg, File: f, Migrations: platform.Migrations(),
		Subsystems: []daemon.Factory{platform.Factory(platform.Options{SigningKey: testKeys()[0]})}, DisableKeyring: true})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `provider "ghost"`))
}

func TestEmbeddedProviderDisabled(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, withEnv("PLATFORM_IDENTITY_EMBEDDED_ENABLED", "false"))
	res := h.get("/idp/.well-known/openid-configuration", "")
	is.Equal(res.status, 404)
	var cc struct {
		SignIn []struct {
			ProviderID string `json:"provider_id"`
		} `json:"sign_in"`
	}
	h.must(200, h.get("/api/v1/client-configuration", ""), &cc)
	is.Equal(len(cc.SignIn), 1)
	is.Equal(cc.SignIn[0].ProviderID, "corp")
	// External tokens still work; the owner still administers.
	h.must(201, h.post("/admin/principals", h.owner, map[string]string{"kind": "human", "issuer": extIssuer, "subject": "zoe"}), nil)
	h.must(200, h.get("/api/v1/identity", h.ext.token(t, "zoe", nil)), nil)
}
