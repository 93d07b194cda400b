package ingest

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/store/broker"
)

// ConfigPrefix is the config.yaml section of the ingestion service.
const ConfigPrefix = "platform.webhooks"

// Config is the platform.webhooks section. Every key is overridable by the
// environment variable derived from its dotted path (see config.Decode), e.g.
// PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE, the per-provider maps
// included (env:"keyed", see config/envmap.go):
// PLATFORM_WEBHOOKS_RETRY_PROVIDERS_STRIPE_MAX_ATTEMPTS,
// PLATFORM_WEBHOOKS_IP_WHITELIST_GITHUB (a comma-separated list),
// PLATFORM_WEBHOOKS_PROCESSORS_<NAME>_SECRET.
type Config struct {
	Security Security `yaml:"security"`
	// IPWhitelist maps a provider to the exact addresses and CIDR ranges that
	// may post for it when security.enable-ip-whitelist is true.
	IPWhitelist        map[string][]string `yaml:"ip-whitelist" env:"keyed"`
	DLQ                DLQConfig           `yaml:"dlq"`
	Retry              RetryConfig         `yaml:"retry"`
	Batching           Batching            `yaml:"batching"`
	Compression        Compression         `yaml:"compression"`
	MetadataEnrichment Enrichment          `yaml:"metadata-enrichment"`
	Topic              TopicConfig         `yaml:"topic"`
	RateLimit          RateLimitConfig     `yaml:"rate-limit"`
	Idempotency        Idempotency         `yaml:"idempotency"`
	Processor          ProcessorSettings   `yaml:"processor"`
	// Processors configures signature verification per provider; only
	// providers listed here are consumed by the built-in processor.
	Processors map[string]ProcessorConfig `yaml:"processors" env:"keyed"`
}

// Security holds the request checks of the spec's defaults table.
type Security struct {
	ValidatePayloadSize     bool     `yaml:"validate-payload-size"`
	MaxPayloadSize          int64    `yaml:"max-payload-size"`
	ValidateProviderName    bool     `yaml:"validate-provider-name"`
	ProviderNamePattern     string   `yaml:"provider-name-pattern"`
	EnableIPWhitelist       bool     `yaml:"enable-ip-whitelist"`
	EnableRequestValidation bool     `yaml:"enable-request-validation"`
	AllowedMethods          []string `yaml:"allowed-methods"`
	RequireContentType      bool     `yaml:"require-content-type"`
	AllowedContentTypes     []string `yaml:"allowed-content-types"`
	// TrustedProxies are addresses or CIDR ranges (e.g. a local tunnel agent)
	// whose X-Forwarded-For is believed when finding the source address.
	TrustedProxies []string `yaml:"trusted-proxies"`
	// MaxInFlightBytes bounds the memory all webhook bodies being received
	// or handled hold at once; past it a webhook is answered 503
	// WH-OVERLOADED with Retry-After (see body.go).
	MaxInFlightBytes int64 `yaml:"max-in-flight-bytes"`
	// CredentialHeaders names more request headers (or patterns such as
	// "X-Acme-*") that carry credentials and are never forwarded (headers.go).
	CredentialHeaders []string `yaml:"credential-headers"`
}

// DLQConfig is the dead-letter destination.
type DLQConfig struct {
	Enabled bool   `yaml:"enabled"`
	Topic   string `yaml:"topic"`
}

// RetryConfig holds publication retry defaults and per-provider overrides.
type RetryConfig struct {
	Defaults  RetryPolicy            `yaml:"defaults"`
	Providers map[string]RetryPolicy `yaml:"providers" env:"keyed"`
}

// RetryPolicy governs how a failed publication is retried.
type RetryPolicy struct {
	MaxAttempts            int             `yaml:"max-attempts"`
	InitialDelay           config.Duration `yaml:"initial-delay"`
	MaxDelay               config.Duration `yaml:"max-delay"`
	Multiplier             float64         `yaml:"multiplier"`
	EnableJitter           bool            `yaml:"enable-jitter"`
	JitterFactor           float64         `yaml:"jitter-factor"`
	RetryOnTimeout         bool            `yaml:"retry-on-timeout"`
	RetryOnConnectionError bool            `yaml:"retry-on-connection-error"`
	RetryOnServerError     bool            `yaml:"retry-on-server-error"`
	RetryOnClientError     bool            `yaml:"retry-on-client-error"`
	// AttemptTimeout bounds one publish attempt (not in the spec's table; a
	// timeout is what retry-on-timeout retries).
	AttemptTimeout config.Duration `yaml:"attempt-timeout"`
}

// Batching groups publications; each request is still acknowledged only
// after its batch is durably published.
type Batching struct {
	Enabled      bool            `yaml:"enabled"`
	MaxBatchSize int             `yaml:"max-batch-size"`
	MaxWaitTime  config.Duration `yaml:"max-wait-time"`
	BufferSize   int             `yaml:"buffer-size"`
}

// Compression of published payloads.
type Compression struct {
	Enabled   bool   `yaml:"enabled"`
	MinSize   int    `yaml:"min-size"`
	Algorithm string `yaml:"algorithm"`
	Level     int    `yaml:"level"`
}

// Enrichment adds user agent, source address and request information.
type Enrichment struct {
	Enabled bool `yaml:"enabled"`
}

// TopicConfig names the destination: {prefix}{provider}{suffix}, or
// {prefix}{suffix} without use-provider-as-topic, or custom for everything.
type TopicConfig struct {
	Prefix             string `yaml:"prefix"`
	Suffix             string `yaml:"suffix"`
	UseProviderAsTopic bool   `yaml:"use-provider-as-topic"`
	Custom             string `yaml:"custom"`
	// VerifiedSuffix names the verified topic: the provider topic plus this
	// suffix ("github.verified") carries the events the processor verified
	// and deduplicated. Empty: no verified topic.
	VerifiedSuffix string `yaml:"verified-suffix"`
}

// RateLimitConfig is a token bucket per provider: limit-for-period tokens
// refilled over limit-refresh-period, with a burst of limit-for-period.
type RateLimitConfig struct {
	Enabled            bool                      `yaml:"enabled"`
	LimitForPeriod     int                       `yaml:"limit-for-period"`
	LimitRefreshPeriod config.Duration           `yaml:"limit-refresh-period"`
	Providers          map[string]RateLimitLimit `yaml:"providers" env:"keyed"`
}

// RateLimitLimit is a per-provider override.
type RateLimitLimit struct {
	LimitForPeriod     int             `yaml:"limit-for-period"`
	LimitRefreshPeriod config.Duration `yaml:"limit-refresh-period"`
}

// Idempotency is the processor's duplicate-delivery window.
type Idempotency struct {
	Window config.Duration `yaml:"window"`
}

// ProcessorSettings tune the built-in consumers.
type ProcessorSettings struct {
	Enabled     bool   `yaml:"enabled"`
	Group       string `yaml:"group"`
	Concurrency int    `yaml:"concurrency"`
	// RecordRetention is how long processed-event records are kept.
	RecordRetention config.Duration `yaml:"record-retention"`
}

// Secret is a configured signing secret. It formats as "[redacted]" so a
// logged config cannot leak it; Reveal returns the value.
type Secret string

func (s Secret) String() string               { return "[redacted]" }
func (s Secret) GoString() string             { return "[redacted]" }
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// Reveal returns the secret itself, for building a verifier.
func (s Secret) Reveal() string { return string(s) }

// ProcessorConfig configures one provider's verifier.
type ProcessorConfig struct {
	// Type is github, stripe, slack, shopify, standard-webhooks, hmac or none
	// (no verification: every event is recorded "unverified"). Default: the
	// provider name when it is a built-in type.
	Type string `yaml:"type"`
	// Secret and Secrets (extra secrets accepted while one is rotated);
	// SecretEnv names an environment variable holding the secret instead.
	Secret    Secret   `yaml:"secret"`
	Secrets   []Secret `yaml:"secrets"`
	SecretEnv string   `yaml:"secret-env"`
	// Tolerance is the timestamp window of stripe, slack and standard-webhooks.
	Tolerance config.Duration `yaml:"tolerance"`
	// The generic hmac type's signature header, algorithm (sha1, sha256,
	// sha512), encoding (hex, base64), value prefix and delivery id header.
	SignatureHeader  string `yaml:"signature-header"`
	Algorithm        string `yaml:"algorithm"`
	Encoding         string `yaml:"encoding"`
	SignaturePrefix  string `yaml:"signature-prefix"`
	DeliveryIDHeader string `yaml:"delivery-id-header"`
}

// Verifier types.
const (
	TypeGitHub   = "github"
	TypeStripe   = "stripe"
	TypeSlack    = "slack"
	TypeShopify  = "shopify"
	TypeStandard = "standard-webhooks"
	TypeHMAC     = "hmac"
	TypeNone     = "none"
)

var builtinTypes = []string{TypeGitHub, TypeStripe, TypeSlack, TypeShopify, TypeStandard}

// DefaultConfig returns the defaults of the spec's "Webhook ingestion
// defaults" table plus this implementation's own keys.
func DefaultConfig() Config {
	return Config{
		Security: Security{
			ValidatePayloadSize:     true,
			MaxPayloadSize:          1 << 20,
			ValidateProviderName:    true,
			ProviderNamePattern:     `^[a-z0-9-]+$`,
			EnableIPWhitelist:       false,
			EnableRequestValidation: true,
			AllowedMethods:          []string{http.MethodPost},
			RequireContentType:      true,
			AllowedContentTypes:     []string{"application/json", "application/x-www-form-urlencoded"},
			MaxInFlightBytes:        64 << 20,
		},
		DLQ: DLQConfig{Enabled: true, Topic: "webhooks.dlq"},
		Retry: RetryConfig{Defaults: RetryPolicy{
			MaxAttempts:            3,
			InitialDelay:           config.Duration(time.Second),
			MaxDelay:               config.Duration(30 * time.Second),
			Multiplier:             2.0,
			EnableJitter:           true,
			JitterFactor:           0.5,
			RetryOnTimeout:         true,
			RetryOnConnectionError: true,
			RetryOnServerError:     true,
			RetryOnClientError:     false,
			AttemptTimeout:         config.Duration(10 * time.Second),
		}},
		Batching:           Batching{Enabled: false, MaxBatchSize: 100, MaxWaitTime: config.Duration(time.Second), BufferSize: 1000},
		Compression:        Compression{Enabled: false, MinSize: 1024, Algorithm: "GZIP", Level: 6},
		MetadataEnrichment: Enrichment{Enabled: true},
		Topic:              TopicConfig{UseProviderAsTopic: true, VerifiedSuffix: ".verified"},
		RateLimit:          RateLimitConfig{Enabled: true, LimitForPeriod: 20000, LimitRefreshPeriod: config.Duration(time.Second)},
		Idempotency:        Idempotency{Window: config.Duration(7 * 24 * time.Hour)},
		Processor: ProcessorSettings{
			Enabled: true, Group: "webhooks-processor", Concurrency: 4,
			RecordRetention: config.Duration(30 * 24 * time.Hour),
		},
	}
}

// hardMaxPayload caps a body when validate-payload-size is off: the limit is
// then not enforced as a policy, but memory still needs a bound.
const hardMaxPayload = 64 << 20

// maxProviderLen keeps provider names (and so topics) within broker limits.
const maxProviderLen = 200

// rawConfig is Config without its Validate method.
type rawConfig Config

// LoadConfig decodes platform.webhooks from f. The per-provider maps of
// retry and rate-limit start from the (decoded) defaults, so an override
// names only what differs: a second pass seeds each named provider.
func LoadConfig(f *config.File) (Config, error) {
	if f == nil {
		f = config.Empty()
	}
	// The first pass only learns the provider names: rawConfig has no
	// Validate, since unseeded overrides are incomplete.
	first := rawConfig(DefaultConfig())
	if err := f.Decode(ConfigPrefix, &first); err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	if len(first.Retry.Providers) > 0 {
		cfg.Retry.Providers = make(map[string]RetryPolicy, len(first.Retry.Providers))
		for name := range first.Retry.Providers {
			cfg.Retry.Providers[name] = first.Retry.Defaults
		}
	}
	if len(first.RateLimit.Providers) > 0 {
		cfg.RateLimit.Providers = make(map[string]RateLimitLimit, len(first.RateLimit.Providers))
		for name := range first.RateLimit.Providers {
			cfg.RateLimit.Providers[name] = RateLimitLimit{LimitForPeriod: first.RateLimit.LimitForPeriod, LimitRefreshPeriod: first.RateLimit.LimitRefreshPeriod}
		}
	}
	if err := f.Decode(ConfigPrefix, &cfg); err != nil {
		return Config{}, err
	}
	if err := cfg.applyProcessorEnv(f); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// applyProcessorEnv reads PLATFORM_WEBHOOKS_PROCESSORS_<NAME>_SECRET for every
// configured processor and every built-in type, so a secret need not be
// written into config.yaml; secret-env is resolved here too.
func (c *Config) applyProcessorEnv(f *config.File) error {
	lookup := f.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	names := slices.Clone(builtinTypes)
	for name := range c.Processors {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		env := config.EnvName(ConfigPrefix + ".processors." + name + ".secret")
		p, configured := c.Processors[name]
		if v, ok := lookup(env); ok && strings.TrimSpace(v) != "" {
			p.Secret = Secret(strings.TrimSpace(v))
			configured = true
		}
		if !configured {
			continue
		}
		if p.SecretEnv != "" {
			v, ok := lookup(p.SecretEnv)
			if !ok || v == "" {
				return &config.Error{File: f.Path(), Msg: fmt.Sprintf("%s.processors.%s.secret-env: environment variable %s is not set", ConfigPrefix, name, p.SecretEnv)}
			}
			p.Secret = Secret(v)
		}
		if c.Processors == nil {
			c.Processors = map[string]ProcessorConfig{}
		}
		c.Processors[name] = p
	}
	for name, p := range c.Processors {
		if err := p.check(name); err != nil {
			return &config.Error{File: f.Path(), Msg: fmt.Sprintf("%s.processors.%s: %v", ConfigPrefix, name, err)}
		}
	}
	return nil
}

// verifierType is the processor's type, defaulting to the provider name.
func (p ProcessorConfig) verifierType(provider string) string {
	if p.Type != "" {
		return strings.ToLower(p.Type)
	}
	return provider
}

// secrets lists the configured secrets, primary first.
func (p ProcessorConfig) secrets() []string {
	var out []string
	if p.Secret != "" {
		out = append(out, p.Secret.Reveal())
	}
	for _, s := range p.Secrets {
		out = append(out, s.Reveal())
	}
	return out
}

func (p ProcessorConfig) check(provider string) error {
	switch t := p.verifierType(provider); t {
	case TypeNone:
		return nil
	case TypeGitHub, TypeStripe, TypeSlack, TypeShopify, TypeStandard, TypeHMAC:
		if len(p.secrets()) == 0 {
			return fmt.Errorf("type %s needs a secret (secret, secret-env or %s)", t, config.EnvName(ConfigPrefix+".processors."+provider+".secret"))
		}
		if t == TypeHMAC && p.SignatureHeader == "" {
			return errors.New("type hmac needs signature-header")
		}
		return nil
	default:
		return fmt.Errorf("type %q is not one of github, stripe, slack, shopify, standard-webhooks, hmac, none", t)
	}
}

// Validate checks ranges after YAML and environment are applied.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	s := c.Security
	if s.MaxPayloadSize < 1 || s.MaxPayloadSize > hardMaxPayload {
		add("security.max-payload-size must be 1..%d bytes", hardMaxPayload)
	}
	switch {
	case s.MaxInFlightBytes < 1<<20 || s.MaxInFlightBytes > 1<<40:
		add("security.max-in-flight-bytes must be 1 MiB..1 TiB")
	case s.ValidatePayloadSize && s.MaxInFlightBytes <= s.MaxPayloadSize:
		add("security.max-in-flight-bytes must be more than security.max-payload-size, or no body at the limit could be received")
	}
	if _, err := regexp.Compile(s.ProviderNamePattern); err != nil {
		add("security.provider-name-pattern is not a regular expression: %v", err)
	}
	if len(s.AllowedMethods) == 0 {
		add("security.allowed-methods must name at least one method")
	}
	for _, m := range s.AllowedMethods {
		if !slices.Contains(knownMethods, strings.ToUpper(m)) {
			add("security.allowed-methods: %q is not one of %s", m, strings.Join(knownMethods, ", "))
		}
	}
	if s.RequireContentType && len(s.AllowedContentTypes) == 0 {
		add("security.allowed-content-types must not be empty when require-content-type is true")
	}
	for _, name := range s.CredentialHeaders {
		if _, err := path.Match(strings.ToLower(strings.TrimSpace(name)), ""); err != nil || strings.TrimSpace(name) == "" {
			add("security.credential-headers: %q is not a header name or pattern", name)
		}
	}
	if _, err := parsePrefixes(s.TrustedProxies); err != nil {
		add("security.trusted-proxies: %v", err)
	}
	for p, list := range c.IPWhitelist {
		if _, err := parsePrefixes(list); err != nil {
			add("ip-whitelist.%s: %v", p, err)
		}
	}
	if c.DLQ.Enabled {
		if err := broker.ValidateTopic(c.DLQ.Topic); err != nil {
			add("dlq.topic: %v", err)
		}
	}
	checkRetry := func(name string, r RetryPolicy) {
		switch {
		case r.MaxAttempts < 1 || r.MaxAttempts > 100:
			add("%s.max-attempts must be 1..100", name)
		case r.InitialDelay.D() <= 0 || r.MaxDelay.D() < r.InitialDelay.D():
			add("%s: initial-delay must be positive and max-delay at least initial-delay", name)
		case r.Multiplier < 1 || r.Multiplier > 100:
			add("%s.multiplier must be 1..100", name)
		case r.JitterFactor < 0 || r.JitterFactor > 1:
			add("%s.jitter-factor must be 0..1", name)
		case r.AttemptTimeout.D() <= 0:
			add("%s.attempt-timeout must be positive", name)
		}
	}
	checkRetry("retry.defaults", c.Retry.Defaults)
	for p, r := range c.Retry.Providers {
		checkRetry("retry.providers."+p, r)
	}
	b := c.Batching
	if b.MaxBatchSize < 1 || b.MaxBatchSize > 10000 {
		add("batching.max-batch-size must be 1..10000")
	}
	if b.MaxWaitTime.D() <= 0 || b.MaxWaitTime.D() > time.Minute {
		add("batching.max-wait-time must be positive and at most 1 minute")
	}
	if b.BufferSize < 1 || b.BufferSize > 1_000_000 {
		add("batching.buffer-size must be 1..1000000")
	}
	if err := c.Compression.validate(); err != nil {
		add("compression: %v", err)
	}
	if err := c.checkTopic(); err != nil {
		add("topic: %v", err)
	}
	checkRate := func(name string, n int, d config.Duration) {
		if n < 1 || d.D() <= 0 {
			add("%s: limit-for-period must be at least 1 and limit-refresh-period positive", name)
		}
	}
	checkRate("rate-limit", c.RateLimit.LimitForPeriod, c.RateLimit.LimitRefreshPeriod)
	for p, l := range c.RateLimit.Providers {
		checkRate("rate-limit.providers."+p, l.LimitForPeriod, l.LimitRefreshPeriod)
	}
	if c.Idempotency.Window.D() < time.Minute {
		add("idempotency.window must be at least 1 minute")
	}
	if c.Processor.Concurrency < 1 || c.Processor.Concurrency > 64 {
		add("processor.concurrency must be 1..64")
	}
	if err := broker.ValidateGroup(c.Processor.Group); err != nil {
		add("processor.group: %v", err)
	}
	if c.Processor.RecordRetention.D() < time.Hour {
		add("processor.record-retention must be at least 1 hour")
	}
	return errors.Join(errs...)
}

var knownMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// parsePrefixes reads exact addresses ("203.0.113.7", "::1") and CIDR ranges.
func parsePrefixes(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR range", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR range", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
