package ingest

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
)

// The defaults are the spec's "Webhook ingestion defaults" table.
func TestDefaultsMatchSpec(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	c, err := LoadConfig(mustParse(t, "", nil))
	is.NoErr(err)
	s := c.Security
	is.True(s.ValidatePayloadSize)
	is.Equal(s.MaxPayloadSize, int64(1048576))
	is.True(s.ValidateProviderName)
	is.Equal(s.ProviderNamePattern, `^[a-z0-9-]+$`)
	is.True(!s.EnableIPWhitelist)
	is.True(s.EnableRequestValidation)
	is.Equal(s.AllowedMethods, []string{"POST"})
	is.True(s.RequireContentType)
	is.Equal(s.AllowedContentTypes, []string{"application/json", "application/x-www-form-urlencoded"})
	is.Equal(c.DLQ, DLQConfig{Enabled: true, Topic: "webhooks.dlq"})
	r := c.Retry.Defaults
	is.Equal(r.MaxAttempts, 3)
	is.Equal(r.InitialDelay.D(), time.Second)
	is.Equal(r.MaxDelay.D(), 30*time.Second)
	is.Equal(r.Multiplier, 2.0)
	is.True(r.EnableJitter)
	is.Equal(r.JitterFactor, 0.5)
	is.True(r.RetryOnTimeout && r.RetryOnConnectionError && r.RetryOnServerError && !r.RetryOnClientError)
	is.Equal(c.Batching, Batching{Enabled: false, MaxBatchSize: 100, MaxWaitTime: config.Duration(time.Second), BufferSize: 1000})
	is.Equal(c.Compression, Compression{Enabled: false, MinSize: 1024, Algorithm: "GZIP", Level: 6})
	is.True(c.MetadataEnrichment.Enabled)
	is.Equal(c.Topic, TopicConfig{UseProviderAsTopic: true, VerifiedSuffix: ".verified"})
}

// Every scalar key has its derived environment variable.
func TestEnvironmentOverrides(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	env := map[string]string{
		"PLATFORM_WEBHOOKS_SECURITY_VALIDATE_PAYLOAD_SIZE":       "false",
		"PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE":            "2048",
		"PLATFORM_WEBHOOKS_SECURITY_VALIDATE_PROVIDER_NAME":      "false",
		"PLATFORM_WEBHOOKS_SECURITY_PROVIDER_NAME_PATTERN":       "^[a-z]+$",
		"PLATFORM_WEBHOOKS_SECURITY_ENABLE_IP_WHITELIST":         "true",
		"PLATFORM_WEBHOOKS_SECURITY_ENABLE_REQUEST_VALIDATION":   "false",
		"PLATFORM_WEBHOOKS_SECURITY_ALLOWED_METHODS":             "POST,PUT",
		"PLATFORM_WEBHOOKS_SECURITY_REQUIRE_CONTENT_TYPE":        "false",
		"PLATFORM_WEBHOOKS_SECURITY_ALLOWED_CONTENT_TYPES":       "application/json",
		"PLATFORM_WEBHOOKS_DLQ_ENABLED":                          "false",
		"PLATFORM_WEBHOOKS_DLQ_TOPIC":                            "dead",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_MAX_ATTEMPTS":          "5",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_INITIAL_DELAY":         "PT2S",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_MAX_DELAY":             "1m",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_MULTIPLIER":            "3",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_ENABLE_JITTER":         "false",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_JITTER_FACTOR":         "0.1",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_RETRY_ON_CLIENT_ERROR": "true",
		"PLATFORM_WEBHOOKS_BATCHING_ENABLED":                     "true",
		"PLATFORM_WEBHOOKS_BATCHING_MAX_BATCH_SIZE":              "10",
		"PLATFORM_WEBHOOKS_BATCHING_MAX_WAIT_TIME":               "PT0.5S",
		"PLATFORM_WEBHOOKS_BATCHING_BUFFER_SIZE":                 "20",
		"PLATFORM_WEBHOOKS_COMPRESSION_ENABLED":                  "true",
		"PLATFORM_WEBHOOKS_COMPRESSION_MIN_SIZE":                 "10",
		"PLATFORM_WEBHOOKS_COMPRESSION_ALGORITHM":                "ZSTD",
		"PLATFORM_WEBHOOKS_COMPRESSION_LEVEL":                    "19",
		"PLATFORM_WEBHOOKS_METADATA_ENRICHMENT_ENABLED":          "false",
		"PLATFORM_WEBHOOKS_TOPIC_PREFIX":                         "wh.",
	}
	c, err := LoadConfig(mustParse(t, "", env))
	is.NoErr(err)
	is.Equal(c.Security.MaxPayloadSize, int64(2048))
	is.True(!c.Security.ValidatePayloadSize && !c.Security.ValidateProviderName && c.Security.EnableIPWhitelist)
	is.Equal(c.Security.AllowedMethods, []string{"POST", "PUT"})
	is.Equal(c.Security.AllowedContentTypes, []string{"application/json"})
	is.Equal(c.DLQ, DLQConfig{Enabled: false, Topic: "dead"})
	is.Equal(c.Retry.Defaults.MaxAttempts, 5)
	is.Equal(c.Retry.Defaults.InitialDelay.D(), 2*time.Second)
	is.Equal(c.Retry.Defaults.MaxDelay.D(), time.Minute)
	is.True(c.Retry.Defaults.RetryOnClientError && !c.Retry.Defaults.EnableJitter)
	is.Equal(c.Batching.MaxWaitTime.D(), 500*time.Millisecond)
	is.Equal(c.Compression, Compression{Enabled: true, MinSize: 10, Algorithm: "ZSTD", Level: 19})
	is.True(!c.MetadataEnrichment.Enabled)
	is.Equal(c.Topic.Prefix, "wh.")
}

// A per-provider retry override names only what differs.
func TestPerProviderOverridesInherit(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	yaml := `platform:
  webhooks:
    retry:
      defaults:
        max-attempts: 4
      providers:
        stripe:
          max-attempts: 6
          enable-jitter: false
    rate-limit:
      limit-for-period: 50
      providers:
        github:
          limit-refresh-period: PT10S
`
	c, err := LoadConfig(mustParse(t, yaml, map[string]string{"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_MULTIPLIER": "3"}))
	is.NoErr(err)
	st := c.Retry.policyFor("stripe")
	is.Equal(st.MaxAttempts, 6)
	is.True(!st.EnableJitter)
	is.Equal(st.Multiplier, 3.0) // inherited from the (env-overridden) defaults
	is.Equal(st.InitialDelay.D(), time.Second)
	is.Equal(c.Retry.policyFor("github").MaxAttempts, 4)
	is.Equal(c.RateLimit.Providers["github"], RateLimitLimit{LimitForPeriod: 50, LimitRefreshPeriod: config.Duration(10 * time.Second)})
}

// Per-provider settings take environment variables like every other key
// (ingest/README.md): the provider's name sits between the map's name and the setting.
func TestPerProviderEnvironment(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	yaml := `platform:
  webhooks:
    retry:
      providers:
        github: {max-attempts: 4}
`
	c, err := LoadConfig(mustParse(t, yaml, map[string]string{
		"PLATFORM_WEBHOOKS_RETRY_PROVIDERS_STRIPE_MAX_ATTEMPTS":           "6",
		"PLATFORM_WEBHOOKS_RETRY_PROVIDERS_STRIPE_RETRY_ON_TIMEOUT":       "false",
		"PLATFORM_WEBHOOKS_RETRY_PROVIDERS_GITHUB_MULTIPLIER":             "3",
		"PLATFORM_WEBHOOKS_RATE_LIMIT_PROVIDERS_ACME_CO_LIMIT_FOR_PERIOD": "7",
		"PLATFORM_WEBHOOKS_IP_WHITELIST_GITHUB":                           "192.30.252.0/22,140.82.112.0/20",
		"PLATFORM_WEBHOOKS_PROCESSORS_ACME_TYPE":                          "hmac",
		"PLATFORM_WEBHOOKS_PROCESSORS_ACME_SECRET":                        "s3cret",
		"PLATFORM_WEBHOOKS_PROCESSORS_ACME_SIGNATURE_HEADER":              "X-Acme-Signature",
	}))
	is.NoErr(err)
	st := c.Retry.policyFor("stripe")
	is.Equal(st.MaxAttempts, 6)
	is.True(!st.RetryOnTimeout)
	is.Equal(st.InitialDelay.D(), time.Second) // the rest from the defaults
	gh := c.Retry.policyFor("github")
	is.Equal(gh.MaxAttempts, 4) // from the file
	is.Equal(gh.Multiplier, 3.0)
	is.Equal(c.RateLimit.Providers["acme-co"], RateLimitLimit{LimitForPeriod: 7, LimitRefreshPeriod: config.Duration(time.Second)})
	is.Equal(c.IPWhitelist["github"], []string{"192.30.252.0/22", "140.82.112.0/20"})
	is.Equal(c.Processors["acme"].SignatureHeader, "X-Acme-Signature")
	is.Equal(c.Processors["acme"].Secret.Reveal(), "s3cret")

	// Values are checked like the file's, and an unknown setting is an error.
	for name, value := range map[string]string{
		"PLATFORM_WEBHOOKS_RETRY_PROVIDERS_STRIPE_MAX_ATTEMPTS": "0",
		"PLATFORM_WEBHOOKS_RETRY_PROVIDERS_STRIPE_MAX_TRIES":    "3",
		"PLATFORM_WEBHOOKS_IP_WHITELIST_GITHUB":                 "not-an-address",
	} {
		_, err := LoadConfig(mustParse(t, "", map[string]string{name: value}))
		if err == nil {
			t.Errorf("%s=%s: no error", name, value)
		}
	}
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{
		"PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE=0":          "max-payload-size",
		"PLATFORM_WEBHOOKS_SECURITY_PROVIDER_NAME_PATTERN=[":     "provider-name-pattern",
		"PLATFORM_WEBHOOKS_SECURITY_ALLOWED_METHODS=FETCH":       "allowed-methods",
		"PLATFORM_WEBHOOKS_SECURITY_TRUSTED_PROXIES=10.0.0.0/33": "trusted-proxies",
		"PLATFORM_WEBHOOKS_DLQ_TOPIC=a b":                        "dlq.topic",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_MAX_ATTEMPTS=0":        "max-attempts",
		"PLATFORM_WEBHOOKS_RETRY_DEFAULTS_JITTER_FACTOR=1.5":     "jitter-factor",
		"PLATFORM_WEBHOOKS_BATCHING_MAX_BATCH_SIZE=0":            "max-batch-size",
		"PLATFORM_WEBHOOKS_COMPRESSION_ALGORITHM=brotli":         "algorithm",
		"PLATFORM_WEBHOOKS_COMPRESSION_LEVEL=10":                 "GZIP levels are 1-9",
		"PLATFORM_WEBHOOKS_TOPIC_USE_PROVIDER_AS_TOPIC=false":    "topic",
		"PLATFORM_WEBHOOKS_TOPIC_CUSTOM=webhooks.dlq":            "dead-letter topic",
		"PLATFORM_WEBHOOKS_RATE_LIMIT_LIMIT_FOR_PERIOD=0":        "limit-for-period",
		"PLATFORM_WEBHOOKS_IDEMPOTENCY_WINDOW=1s":                "idempotency.window",
		"PLATFORM_WEBHOOKS_PROCESSOR_CONCURRENCY=0":              "processor.concurrency",
		"PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE=abc":        "whole number",
	} {
		k, v, _ := strings.Cut(env, "=")
		_, err := LoadConfig(mustParse(t, "", map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", env, err, want)
		}
	}
	// Levels on both sides of the bounds.
	for alg, levels := range map[string][2]int{"GZIP": {1, 9}, "LZ4": {1, 9}, "ZSTD": {1, 22}} {
		for _, lv := range []int{levels[0] - 1, levels[0], levels[1], levels[1] + 1} {
			err := Compression{Algorithm: alg, Level: lv}.validate()
			if ok := lv >= levels[0] && lv <= levels[1]; ok != (err == nil) {
				t.Errorf("%s level %d: %v", alg, lv, err)
			}
		}
	}
	// Positions from YAML survive.
	_, err := LoadConfig(mustParse(t, "platform:\n  webhooks:\n    security:\n      max-payload-size: big\n", nil))
	if err == nil || !strings.Contains(err.Error(), "test.yaml:4") {
		t.Errorf("yaml error without position: %v", err)
	}
	_, err = LoadConfig(mustParse(t, "platform:\n  webhooks:\n    ip-whitelist:\n      github: [\"300.1.1.1\"]\n", nil))
	if err == nil || !strings.Contains(err.Error(), "ip-whitelist.github") {
		t.Errorf("bad address accepted: %v", err)
	}
}

func TestProcessorSecretFromEnvironment(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	c, err := LoadConfig(mustParse(t, "", map[string]string{
		"PLATFORM_WEBHOOKS_PROCESSORS_GITHUB_SECRET":            "gh-secret",
		"PLATFORM_WEBHOOKS_PROCESSORS_STANDARD_WEBHOOKS_SECRET": "whsec_c2VjcmV0",
	}))
	is.NoErr(err)
	is.Equal(c.Processors["github"].Secret.Reveal(), "gh-secret")
	is.Equal(c.Processors["standard-webhooks"].verifierType("standard-webhooks"), TypeStandard)
	_, ok := c.Processors["stripe"]
	is.True(!ok)
}

// Secrets never print.
func TestSecretRedacted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p := ProcessorConfig{Secret: "hunter2", Secrets: []Secret{"hunter3"}}
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%v %+v %#v %s", p, p, p, p.Secret)} {
		is.True(!strings.Contains(s, "hunter"))
	}
	b, _ := p.Secret.MarshalJSON()
	is.Equal(string(b), `"[redacted]"`)
	is.Equal(p.Secret.Reveal(), "hunter2")
	is.Equal(reflect.TypeOf(p.Secret).Kind(), reflect.String)
	_ = http.MethodPost
}
