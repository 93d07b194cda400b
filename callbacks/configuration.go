package callbacks

import (
	"encoding/base64"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/store"
)

// Configuration statuses. DISABLED is set only by the service (a 410 answer,
// or a circuit breaker that keeps tripping); a client re-enables a
// configuration by updating it with status ACTIVE.
const (
	StatusActive   = "ACTIVE"
	StatusInactive = "INACTIVE"
	StatusDisabled = "DISABLED"
)

// Signature schemes (see sign.go and README.md).
const (
	SchemePlatform         = "PLATFORM_HMAC"
	SchemeStandardWebhooks = "STANDARD_WEBHOOKS"
)

// Configuration is a delivery destination and the event types it receives.
// Its secrets are kept sealed in the database and never serialized.
type Configuration struct {
	ID                   string   `json:"id" schema:"format=uuid"`
	Name                 string   `json:"name"`
	URL                  string   `json:"url" schema:"format=uri"`
	HTTPMethod           string   `json:"httpMethod" schema:"enum=POST|PUT|PATCH"`
	Status               string   `json:"status" schema:"enum=ACTIVE|INACTIVE|DISABLED"`
	StatusReason         string   `json:"statusReason,omitempty" doc:"why the service disabled the configuration"`
	SubscribedEventTypes []string `json:"subscribedEventTypes"`
	SignatureEnabled     bool     `json:"signatureEnabled"`
	SignatureScheme      string   `json:"signatureScheme" schema:"enum=PLATFORM_HMAC|STANDARD_WEBHOOKS"`
	SignatureHeader      string   `json:"signatureHeader,omitempty" doc:"header of the PLATFORM_HMAC signature; empty means the service default"`
	// SecretSet says whether a secret is stored; the secret itself is never returned.
	SecretSet                bool       `json:"secretSet"`
	SecretUpdatedAt          *time.Time `json:"secretUpdatedAt"`
	PreviousSecretValidUntil *time.Time `json:"previousSecretValidUntil" doc:"the replaced secret also signs deliveries until then"`
	MaxRetries               *int       `json:"maxRetries" doc:"retries after the first attempt; null uses retry.max-attempts - 1"`
	RetryDelayMs             *int       `json:"retryDelayMs" doc:"initial backoff: the first retry waits at least this long; null uses retry.initial-delay-ms"`
	TimeoutMs                *int       `json:"timeoutMs" doc:"per-attempt timeout; null uses dispatcher.default-timeout-ms"`
	FailureThreshold         *int       `json:"failureThreshold" doc:"circuit-breaker failure rate in percent; null uses circuit-breaker.failure-rate-threshold"`
	Version                  int        `json:"version"`
	CreatedAt                time.Time  `json:"createdAt"`
	UpdatedAt                time.Time  `json:"updatedAt"`

	host         string // normalized host of URL
	secret       secret // opened signing secret (nil when none)
	prevSecret   secret
	sealed       string // secret as stored
	prevSealed   string
	prevUntilRaw int64
}

// ConfigurationInput is the body of create and update. Update (PUT) replaces
// every field, except that an omitted secret keeps the stored one; an empty
// secret removes it.
type ConfigurationInput struct {
	Name                 string   `json:"name" schema:"minLength=1,maxLength=200"`
	URL                  string   `json:"url" schema:"minLength=1,maxLength=2048,format=uri" doc:"http or https URL whose host is an authorized domain; no user info, no fragment"`
	HTTPMethod           *string  `json:"httpMethod,omitempty" schema:"enum=POST|PUT|PATCH" doc:"default POST"`
	Status               *string  `json:"status,omitempty" schema:"enum=ACTIVE|INACTIVE" doc:"default ACTIVE"`
	SubscribedEventTypes []string `json:"subscribedEventTypes" schema:"minItems=1,maxItems=100,itemMinLength=1,itemMaxLength=200" doc:"event types; a trailing '*' matches a prefix, '*' alone every type"`
	SignatureEnabled     *bool    `json:"signatureEnabled,omitempty" doc:"default false"`
	SignatureScheme      *string  `json:"signatureScheme,omitempty" schema:"enum=PLATFORM_HMAC|STANDARD_WEBHOOKS" doc:"default PLATFORM_HMAC"`
	Secret               *string  `json:"secret,omitempty" schema:"maxLength=512" doc:"PLATFORM_HMAC: 16 to 512 characters; STANDARD_WEBHOOKS: whsec_ followed by the base64 of 24 to 64 bytes. Write-only."`
	SignatureHeader      *string  `json:"signatureHeader,omitempty" schema:"maxLength=100"`
	MaxRetries           *int     `json:"maxRetries,omitempty" schema:"minimum=0,maximum=20"`
	RetryDelayMs         *int     `json:"retryDelayMs,omitempty" schema:"minimum=1,maximum=3600000"`
	TimeoutMs            *int     `json:"timeoutMs,omitempty" schema:"minimum=10,maximum=600000"`
	FailureThreshold     *int     `json:"failureThreshold,omitempty" schema:"minimum=1,maximum=100"`
}

// Bounds of configuration fields (documented in README.md and the OpenAPI document).
const (
	maxNameLen        = 200
	maxURLLen         = 2048
	maxEventTypes     = 100
	maxEventTypeLen   = 200
	minSecretLen      = 16
	maxSecretLen      = 512
	minWHSecretBytes  = 24
	maxWHSecretBytes  = 64
	maxHeaderNameLen  = 100
	maxMaxRetries     = 20
	maxRetryDelayMs   = 3_600_000
	minTimeoutMs      = 10
	maxTimeoutMs      = 600_000
	whsecPrefix       = "whsec_"
	defaultHTTPMethod = "POST"
	maxFailureThresh  = 100
	minFailureThresh  = 1
	minRetryDelayMs   = 1
)

// secret holds a signing key in memory. Its String, LogValue and JSON forms
// are redacted so that it cannot leak through logs or responses by accident.
type secret []byte

func (secret) String() string               { return "[redacted]" }
func (secret) LogValue() slog.Value         { return slog.StringValue("[redacted]") }
func (secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }
func (secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }
func (s secret) GoString() string           { return s.String() }

// configurationChange is a validated input: the new fields and, when the
// input carried one, the new secret (clearSecret when it was "").
type configurationChange struct {
	cfg         Configuration
	newSecret   *string
	clearSecret bool
}

// normalize validates in. existing is the stored configuration on update
// (nil on create); it tells whether a secret is already stored.
func (in ConfigurationInput) normalize(existing *Configuration) (configurationChange, error) {
	var v validation
	c := Configuration{
		Name:             strings.TrimSpace(in.Name),
		URL:              strings.TrimSpace(in.URL),
		HTTPMethod:       defaultHTTPMethod,
		Status:           StatusActive,
		SignatureScheme:  SchemePlatform,
		MaxRetries:       in.MaxRetries,
		RetryDelayMs:     in.RetryDelayMs,
		TimeoutMs:        in.TimeoutMs,
		FailureThreshold: in.FailureThreshold,
	}
	n := utf8.RuneCountInString(c.Name)
	v.check(n >= 1 && n <= maxNameLen, "name", "must be 1 to %d characters", maxNameLen)
	v.check(utf8.ValidString(c.Name) && !hasControl(c.Name), "name", "must be valid UTF-8 without control characters")

	if host, msg := checkURL(c.URL); msg != "" {
		v.add("url", "%s", msg)
	} else {
		c.host = host
	}
	if in.HTTPMethod != nil {
		c.HTTPMethod = strings.ToUpper(strings.TrimSpace(*in.HTTPMethod))
		v.check(slices.Contains([]string{"POST", "PUT", "PATCH"}, c.HTTPMethod), "httpMethod", "must be POST, PUT or PATCH")
	}
	if in.Status != nil {
		c.Status = strings.ToUpper(strings.TrimSpace(*in.Status))
		v.check(c.Status == StatusActive || c.Status == StatusInactive, "status", "must be ACTIVE or INACTIVE (DISABLED is set by the service)")
	}
	c.SubscribedEventTypes = normalizeTypes(&v, "subscribedEventTypes", in.SubscribedEventTypes, 1)
	if in.SignatureEnabled != nil {
		c.SignatureEnabled = *in.SignatureEnabled
	}
	if in.SignatureScheme != nil {
		c.SignatureScheme = strings.ToUpper(strings.TrimSpace(*in.SignatureScheme))
		v.check(c.SignatureScheme == SchemePlatform || c.SignatureScheme == SchemeStandardWebhooks, "signatureScheme", "must be PLATFORM_HMAC or STANDARD_WEBHOOKS")
	}
	if in.SignatureHeader != nil {
		c.SignatureHeader = strings.TrimSpace(*in.SignatureHeader)
		if c.SignatureHeader != "" {
			if err := validSignatureHeader(c.SignatureHeader); err != nil {
				v.add("signatureHeader", "%v", err)
			}
		}
	}
	checkOptional(&v, "maxRetries", c.MaxRetries, 0, maxMaxRetries)
	checkOptional(&v, "retryDelayMs", c.RetryDelayMs, minRetryDelayMs, maxRetryDelayMs)
	checkOptional(&v, "timeoutMs", c.TimeoutMs, minTimeoutMs, maxTimeoutMs)
	checkOptional(&v, "failureThreshold", c.FailureThreshold, minFailureThresh, maxFailureThresh)

	ch := configurationChange{cfg: c}
	hasSecret := existing != nil && existing.sealed != ""
	if in.Secret != nil {
		if *in.Secret == "" {
			ch.clearSecret = true
			hasSecret = false
		} else {
			if msg := checkSecret(c.SignatureScheme, *in.Secret); msg != "" {
				v.add("secret", "%s", msg)
			}
			ch.newSecret = in.Secret
			hasSecret = true
		}
	} else if hasSecret && existing.SignatureScheme != c.SignatureScheme && c.SignatureEnabled {
		// The stored secret was checked against the old scheme's format.
		if msg := checkSecret(c.SignatureScheme, string(existing.secret)); msg != "" {
			v.add("secret", "the stored secret does not suit %s (%s): send a new one", c.SignatureScheme, msg)
		}
	}
	if c.SignatureEnabled && !hasSecret {
		v.add("secret", "is required when signatureEnabled is true")
	}
	return ch, v.err()
}

func checkOptional(v *validation, field string, p *int, lo, hi int) {
	if p != nil && (*p < lo || *p > hi) {
		v.add(field, "must be %d to %d, got %d", lo, hi, *p)
	}
}

// checkURL validates a delivery URL and returns its normalized host.
func checkURL(raw string) (host, msg string) {
	if raw == "" {
		return "", "is required"
	}
	if len(raw) > maxURLLen {
		return "", "must be at most 2048 characters"
	}
	if hasControl(raw) || strings.ContainsAny(raw, " ") {
		return "", "must not contain spaces or control characters"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "is not a valid URL"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "scheme must be http or https"
	case u.Opaque != "" || u.Host == "":
		return "", "must be an absolute URL with a host"
	case u.User != nil:
		return "", "must not contain user info (credentials would be recorded with every execution)"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", "must not contain a fragment"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", "port must be 1 to 65535"
		}
	}
	host = normalizeHost(u.Hostname())
	if m := validHost(host); m != "" {
		return "", "host " + m
	}
	return host, ""
}

// checkSecret validates a signing secret for scheme.
func checkSecret(scheme, s string) string {
	if scheme == SchemeStandardWebhooks {
		raw, ok := strings.CutPrefix(s, whsecPrefix)
		if !ok {
			return "a STANDARD_WEBHOOKS secret must start with whsec_"
		}
		key, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return "a STANDARD_WEBHOOKS secret must be whsec_ followed by standard base64"
		}
		if len(key) < minWHSecretBytes || len(key) > maxWHSecretBytes {
			return "a STANDARD_WEBHOOKS secret must encode 24 to 64 bytes"
		}
		return ""
	}
	n := utf8.RuneCountInString(s)
	if n < minSecretLen || len(s) > maxSecretLen {
		return "must be 16 to 512 characters"
	}
	if !utf8.ValidString(s) || hasControl(s) {
		return "must be valid UTF-8 without control characters"
	}
	return ""
}

// signingKey returns the HMAC key a secret stands for under scheme.
func signingKey(scheme string, s secret) []byte {
	if scheme == SchemeStandardWebhooks {
		if raw, ok := strings.CutPrefix(string(s), whsecPrefix); ok {
			if key, err := base64.StdEncoding.DecodeString(raw); err == nil {
				return key
			}
		}
	}
	return s
}

// normalizeTypes validates a list of event types or patterns.
func normalizeTypes(v *validation, field string, in []string, minItems int) []string {
	if len(in) < minItems || len(in) > maxEventTypes {
		v.add(field, "must have %d to %d items", minItems, maxEventTypes)
	}
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for i, t := range in {
		t = strings.TrimSpace(t)
		if msg := checkEventType(t); msg != "" {
			v.add(field+"["+strconv.Itoa(i)+"]", "%s", msg)
			continue
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// checkEventType validates an event type or a pattern with a trailing '*'.
func checkEventType(t string) string {
	if t == "" || len(t) > maxEventTypeLen {
		return "must be 1 to 200 characters"
	}
	body := strings.TrimSuffix(t, "*")
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:/-", c) >= 0) {
			return "may contain only letters, digits and . _ : / - (and one trailing '*')"
		}
	}
	return ""
}

// matchType reports whether eventType matches pattern (exact, or a prefix
// followed by a trailing '*').
func matchType(pattern, eventType string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(eventType, prefix)
	}
	return pattern == eventType
}

func matchAny(patterns []string, eventType string) bool {
	for _, p := range patterns {
		if matchType(p, eventType) {
			return true
		}
	}
	return false
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// effective values of a configuration's overrides.

func (c *Configuration) maxAttempts(s *Settings) int {
	if c.MaxRetries != nil {
		return *c.MaxRetries + 1
	}
	return s.Retry.MaxAttempts
}

func (c *Configuration) timeout(s *Settings) time.Duration {
	if c.TimeoutMs != nil {
		return ms(*c.TimeoutMs)
	}
	return ms(s.Dispatcher.DefaultTimeoutMs)
}

func (c *Configuration) initialDelay(s *Settings) time.Duration {
	if c.RetryDelayMs != nil {
		return ms(*c.RetryDelayMs)
	}
	return ms(s.Retry.InitialDelayMs)
}

func (c *Configuration) failureRate(s *Settings) float64 {
	if c.FailureThreshold != nil {
		return float64(*c.FailureThreshold)
	}
	return s.CircuitBreaker.FailureRateThreshold
}

func (c *Configuration) header(s *Settings) string {
	if c.SignatureHeader != "" {
		return c.SignatureHeader
	}
	return s.Signature.HeaderName
}

// signingSecrets returns the keys that sign a delivery at now: the current
// secret, then the previous one while its grace period lasts.
func (c *Configuration) signingSecrets(now time.Time) []secret {
	var out []secret
	if len(c.secret) > 0 {
		out = append(out, c.secret)
	}
	if len(c.prevSecret) > 0 && store.Millis(now) < c.prevUntilRaw {
		out = append(out, c.prevSecret)
	}
	return out
}
