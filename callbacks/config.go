package callbacks

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/agentbridge/bridge/config"
)

// ConfigSection is where the service's settings live in config.yaml.
const ConfigSection = "platform.callbacks"

// Settings are the service-wide defaults of callbacks/README.md's "Callback service
// defaults" table, each overridable by the environment variable the spec
// names (the env tags). Keys beyond the table (ssrf, retention, ...) take the
// environment name derived from their path, e.g. PLATFORM_CALLBACKS_SSRF_ALLOW_LOOPBACK.
type Settings struct {
	Listener struct {
		// Topics are the broker topic patterns of subscriptions that leave
		// topicOrQueue empty.
		Topics  []string `yaml:"topics" env:"CALLBACK_LISTENER_TOPICS"`
		GroupID string   `yaml:"group-id" env:"CALLBACK_LISTENER_GROUP_ID"`
		// Consumers is how many broker consumers each consumer group runs.
		// Each stores its event before acknowledging it; running many lets
		// those writes share group commits, which is what makes thousands of
		// events per second possible when a commit costs an fsync.
		Consumers int `yaml:"consumers"`
	} `yaml:"listener"`
	Dispatcher struct {
		// ThreadPoolSize bounds the concurrent deliveries of one configuration.
		// Each configuration has its own lane, so a slow endpoint can only
		// exhaust its own workers.
		ThreadPoolSize   int  `yaml:"thread-pool-size" env:"CALLBACK_DISPATCHER_THREADS"`
		DefaultTimeoutMs int  `yaml:"default-timeout-ms" env:"CALLBACK_DEFAULT_TIMEOUT"`
		FollowRedirects  bool `yaml:"follow-redirects" env:"CALLBACK_FOLLOW_REDIRECTS"`
	} `yaml:"dispatcher"`
	CircuitBreaker struct {
		FailureRateThreshold        float64 `yaml:"failure-rate-threshold" env:"CALLBACK_CB_FAILURE_RATE"`
		SlowCallDurationThresholdMs int     `yaml:"slow-call-duration-threshold-ms" env:"CALLBACK_CB_SLOW_DURATION"`
		SlidingWindowSize           int     `yaml:"sliding-window-size" env:"CALLBACK_CB_WINDOW_SIZE"`
		MinimumNumberOfCalls        int     `yaml:"minimum-number-of-calls" env:"CALLBACK_CB_MIN_CALLS"`
		WaitDurationInOpenStateMs   int     `yaml:"wait-duration-in-open-state-ms" env:"CALLBACK_CB_WAIT_DURATION"`
		// DisableAfterTrips disables a configuration whose breaker opened this
		// many times in a row without closing in between (0 never disables).
		DisableAfterTrips int `yaml:"disable-after-trips"`
	} `yaml:"circuit-breaker"`
	Retry struct {
		MaxAttempts    int     `yaml:"max-attempts" env:"CALLBACK_RETRY_MAX_ATTEMPTS"`
		InitialDelayMs int     `yaml:"initial-delay-ms" env:"CALLBACK_RETRY_INITIAL_DELAY"`
		MaxDelayMs     int     `yaml:"max-delay-ms" env:"CALLBACK_RETRY_MAX_DELAY"`
		Multiplier     float64 `yaml:"multiplier" env:"CALLBACK_RETRY_MULTIPLIER"`
	} `yaml:"retry"`
	Signature struct {
		Algorithm  string `yaml:"algorithm" env:"CALLBACK_SIGNATURE_ALGORITHM"`
		HeaderName string `yaml:"header-name" env:"CALLBACK_SIGNATURE_HEADER"`
		// RotationGrace is how long a replaced secret keeps signing next to
		// the new one, so receivers can switch without losing deliveries.
		RotationGrace config.Duration `yaml:"rotation-grace"`
	} `yaml:"signature"`
	SSRF struct {
		// AllowLoopback, AllowPrivate and AllowedCIDRs open ranges that are
		// refused by default at dial time.
		AllowLoopback bool     `yaml:"allow-loopback"`
		AllowPrivate  bool     `yaml:"allow-private"`
		AllowedCIDRs  []string `yaml:"allowed-cidrs"`
	} `yaml:"ssrf"`
	// OperationsTopic receives operational events (a configuration disabled).
	OperationsTopic string `yaml:"operations-topic"`
	// Retention bounds how long consumed events and finished executions are kept.
	Retention config.Duration `yaml:"retention"`
}

// DefaultSettings returns the spec's defaults.
func DefaultSettings() Settings {
	var s Settings
	s.Listener.Topics = []string{"*"}
	s.Listener.GroupID = "callbacks-mgmt-consumer"
	s.Listener.Consumers = 32
	s.Dispatcher.ThreadPoolSize = 20
	s.Dispatcher.DefaultTimeoutMs = 30000
	s.Dispatcher.FollowRedirects = false
	s.CircuitBreaker.FailureRateThreshold = 50
	s.CircuitBreaker.SlowCallDurationThresholdMs = 10000
	s.CircuitBreaker.SlidingWindowSize = 100
	s.CircuitBreaker.MinimumNumberOfCalls = 10
	s.CircuitBreaker.WaitDurationInOpenStateMs = 60000
	s.CircuitBreaker.DisableAfterTrips = 5
	s.Retry.MaxAttempts = 3
	s.Retry.InitialDelayMs = 1000
	s.Retry.MaxDelayMs = 60000
	s.Retry.Multiplier = 2.0
	s.Signature.Algorithm = AlgHmacSHA256
	s.Signature.HeaderName = "X-Platform-Signature"
	s.Signature.RotationGrace = config.Duration(24 * time.Hour)
	s.OperationsTopic = "callbacks.operations"
	s.Retention = config.Duration(30 * 24 * time.Hour)
	return s
}

// LoadSettings decodes the platform.callbacks section of f over the defaults.
func LoadSettings(f *config.File) (Settings, error) {
	s := DefaultSettings()
	if f == nil {
		f = config.Empty()
	}
	if err := f.Decode(ConfigSection, &s); err != nil {
		return s, err
	}
	return s, nil
}

// Validate checks every value's bounds (config.File.Decode calls it).
func (s *Settings) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	if len(s.Listener.Topics) == 0 {
		s.Listener.Topics = []string{"*"}
	}
	for _, t := range s.Listener.Topics {
		check(validTopicPattern(t) == nil, "listener.topics: %q is not a topic or a prefix ending in '*'", t)
	}
	check(between(s.Listener.Consumers, 1, 256), "listener.consumers must be 1 to 256, got %d", s.Listener.Consumers)
	check(validGroup(s.Listener.GroupID) == nil, "listener.group-id: %q must be 1 to 255 characters of a-z A-Z 0-9 . _ -", s.Listener.GroupID)
	check(between(s.Dispatcher.ThreadPoolSize, 1, 1000), "dispatcher.thread-pool-size must be 1 to 1000, got %d", s.Dispatcher.ThreadPoolSize)
	check(between(s.Dispatcher.DefaultTimeoutMs, 1, 600_000), "dispatcher.default-timeout-ms must be 1 to 600000, got %d", s.Dispatcher.DefaultTimeoutMs)
	cb := &s.CircuitBreaker
	check(cb.FailureRateThreshold > 0 && cb.FailureRateThreshold <= 100, "circuit-breaker.failure-rate-threshold must be in (0, 100], got %g", cb.FailureRateThreshold)
	check(between(cb.SlowCallDurationThresholdMs, 1, 3_600_000), "circuit-breaker.slow-call-duration-threshold-ms must be 1 to 3600000, got %d", cb.SlowCallDurationThresholdMs)
	check(between(cb.SlidingWindowSize, 1, 10_000), "circuit-breaker.sliding-window-size must be 1 to 10000, got %d", cb.SlidingWindowSize)
	check(between(cb.MinimumNumberOfCalls, 1, 10_000), "circuit-breaker.minimum-number-of-calls must be 1 to 10000, got %d", cb.MinimumNumberOfCalls)
	check(between(cb.WaitDurationInOpenStateMs, 1, 86_400_000), "circuit-breaker.wait-duration-in-open-state-ms must be 1 to 86400000, got %d", cb.WaitDurationInOpenStateMs)
	check(between(cb.DisableAfterTrips, 0, 1000), "circuit-breaker.disable-after-trips must be 0 to 1000, got %d", cb.DisableAfterTrips)
	r := &s.Retry
	check(between(r.MaxAttempts, 1, 100), "retry.max-attempts must be 1 to 100, got %d", r.MaxAttempts)
	check(between(r.InitialDelayMs, 1, 86_400_000), "retry.initial-delay-ms must be 1 to 86400000, got %d", r.InitialDelayMs)
	check(between(r.MaxDelayMs, 1, 86_400_000), "retry.max-delay-ms must be 1 to 86400000, got %d", r.MaxDelayMs)
	check(r.MaxDelayMs >= r.InitialDelayMs, "retry.max-delay-ms (%d) must not be below retry.initial-delay-ms (%d)", r.MaxDelayMs, r.InitialDelayMs)
	check(r.Multiplier >= 1 && r.Multiplier <= 10, "retry.multiplier must be 1 to 10, got %g", r.Multiplier)
	_, algOK := hashFor(s.Signature.Algorithm)
	check(algOK, "signature.algorithm must be one of %s, got %q", strings.Join(algorithms, ", "), s.Signature.Algorithm)
	check(validSignatureHeader(s.Signature.HeaderName) == nil, "signature.header-name: %q is not a usable header name", s.Signature.HeaderName)
	check(s.Signature.RotationGrace.D() <= 30*24*time.Hour, "signature.rotation-grace must be at most 720h")
	for _, c := range s.SSRF.AllowedCIDRs {
		_, err := netip.ParsePrefix(c)
		check(err == nil, "ssrf.allowed-cidrs: %q is not a CIDR range such as 10.0.0.0/8", c)
	}
	check(validTopic(s.OperationsTopic) == nil, "operations-topic: %q is not a valid topic", s.OperationsTopic)
	check(s.Retention.D() >= time.Hour, "retention must be at least 1h")
	return errors.Join(errs...)
}

func between(v, lo, hi int) bool { return v >= lo && v <= hi }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
