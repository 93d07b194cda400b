package callbacks

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/bridge/config"
)

func decodeSettings(t *testing.T, yaml string, env map[string]string) (Settings, error) {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return LoadSettings(f)
}

// TestDefaultsMatchSpec checks every row of callbacks/README.md's "Callback service defaults".
func TestDefaultsMatchSpec(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	s, err := decodeSettings(t, "", nil)
	is.NoErr(err)
	is.Equal(s.Listener.Topics, []string{"*"})
	is.Equal(s.Listener.GroupID, "callbacks-mgmt-consumer")
	is.Equal(s.Dispatcher.ThreadPoolSize, 20)
	is.Equal(s.Dispatcher.DefaultTimeoutMs, 30000)
	is.Equal(s.Dispatcher.FollowRedirects, false)
	is.Equal(s.CircuitBreaker.FailureRateThreshold, 50.0)
	is.Equal(s.CircuitBreaker.SlowCallDurationThresholdMs, 10000)
	is.Equal(s.CircuitBreaker.SlidingWindowSize, 100)
	is.Equal(s.CircuitBreaker.MinimumNumberOfCalls, 10)
	is.Equal(s.CircuitBreaker.WaitDurationInOpenStateMs, 60000)
	is.Equal(s.Retry.MaxAttempts, 3)
	is.Equal(s.Retry.InitialDelayMs, 1000)
	is.Equal(s.Retry.MaxDelayMs, 60000)
	is.Equal(s.Retry.Multiplier, 2.0)
	is.Equal(s.Signature.Algorithm, "HmacSHA256")
	is.Equal(s.Signature.HeaderName, "X-Platform-Signature")
	is.Equal(s.SSRF.AllowLoopback, false)
	is.Equal(s.SSRF.AllowPrivate, false)
}

// TestEveryEnvironmentVariable sets each CALLBACK_* variable of the spec to a
// non-default value and checks that it lands in its setting, over YAML.
func TestEveryEnvironmentVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env, value string
		get        func(Settings) any
		want       any
	}{
		{"CALLBACK_LISTENER_TOPICS", "github, orders.*", func(s Settings) any { return s.Listener.Topics }, []string{"github", "orders.*"}},
		{"CALLBACK_LISTENER_GROUP_ID", "my-group", func(s Settings) any { return s.Listener.GroupID }, "my-group"},
		{"CALLBACK_DISPATCHER_THREADS", "7", func(s Settings) any { return s.Dispatcher.ThreadPoolSize }, 7},
		{"CALLBACK_DEFAULT_TIMEOUT", "1500", func(s Settings) any { return s.Dispatcher.DefaultTimeoutMs }, 1500},
		{"CALLBACK_FOLLOW_REDIRECTS", "true", func(s Settings) any { return s.Dispatcher.FollowRedirects }, true},
		{"CALLBACK_CB_FAILURE_RATE", "75.5", func(s Settings) any { return s.CircuitBreaker.FailureRateThreshold }, 75.5},
		{"CALLBACK_CB_SLOW_DURATION", "2500", func(s Settings) any { return s.CircuitBreaker.SlowCallDurationThresholdMs }, 2500},
		{"CALLBACK_CB_WINDOW_SIZE", "50", func(s Settings) any { return s.CircuitBreaker.SlidingWindowSize }, 50},
		{"CALLBACK_CB_MIN_CALLS", "5", func(s Settings) any { return s.CircuitBreaker.MinimumNumberOfCalls }, 5},
		{"CALLBACK_CB_WAIT_DURATION", "1234", func(s Settings) any { return s.CircuitBreaker.WaitDurationInOpenStateMs }, 1234},
		{"CALLBACK_RETRY_MAX_ATTEMPTS", "9", func(s Settings) any { return s.Retry.MaxAttempts }, 9},
		{"CALLBACK_RETRY_INITIAL_DELAY", "250", func(s Settings) any { return s.Retry.InitialDelayMs }, 250},
		{"CALLBACK_RETRY_MAX_DELAY", "9000", func(s Settings) any { return s.Retry.MaxDelayMs }, 9000},
		{"CALLBACK_RETRY_MULTIPLIER", "1.5", func(s Settings) any { return s.Retry.Multiplier }, 1.5},
		{"CALLBACK_SIGNATURE_ALGORITHM", "HmacSHA512", func(s Settings) any { return s.Signature.Algorithm }, "HmacSHA512"},
		{"CALLBACK_SIGNATURE_HEADER", "X-Acme-Signature", func(s Settings) any { return s.Signature.HeaderName }, "X-Acme-Signature"},
		// Keys beyond the table use the derived names.
		{"PLATFORM_CALLBACKS_SSRF_ALLOW_LOOPBACK", "true", func(s Settings) any { return s.SSRF.AllowLoopback }, true},
		{"PLATFORM_CALLBACKS_SSRF_ALLOWED_CIDRS", "10.1.0.0/16", func(s Settings) any { return s.SSRF.AllowedCIDRs }, []string{"10.1.0.0/16"}},
		{"PLATFORM_CALLBACKS_CIRCUIT_BREAKER_DISABLE_AFTER_TRIPS", "0", func(s Settings) any { return s.CircuitBreaker.DisableAfterTrips }, 0},
		{"PLATFORM_CALLBACKS_SIGNATURE_ROTATION_GRACE", "PT1H", func(s Settings) any { return s.Signature.RotationGrace }, config.Duration(time.Hour)},
		{"PLATFORM_CALLBACKS_OPERATIONS_TOPIC", "ops", func(s Settings) any { return s.OperationsTopic }, "ops"},
		{"PLATFORM_CALLBACKS_RETENTION", "48h", func(s Settings) any { return s.Retention }, config.Duration(48 * time.Hour)},
	}
	// The YAML sets other values for the spec's keys, so the test also shows
	// that the environment wins over the file.
	yaml := `
platform:
  callbacks:
    listener: {topics: [x], group-id: from-yaml}
    dispatcher: {thread-pool-size: 3, default-timeout-ms: 100, follow-redirects: false}
    circuit-breaker: {failure-rate-threshold: 10, slow-call-duration-threshold-ms: 10, sliding-window-size: 10, minimum-number-of-calls: 1, wait-duration-in-open-state-ms: 10}
    retry: {max-attempts: 2, initial-delay-ms: 10, max-delay-ms: 20000, multiplier: 3}
    signature: {algorithm: HmacSHA384, header-name: X-From-Yaml}
`
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			s, err := decodeSettings(t, yaml, map[string]string{c.env: c.value})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.get(s); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s=%s: got %v, want %v", c.env, c.value, got, c.want)
			}
		})
		seen[c.env] = true
	}
	// Every variable the spec lists is covered.
	for _, v := range strings.Fields("CALLBACK_LISTENER_TOPICS CALLBACK_LISTENER_GROUP_ID CALLBACK_DISPATCHER_THREADS CALLBACK_DEFAULT_TIMEOUT CALLBACK_FOLLOW_REDIRECTS CALLBACK_CB_FAILURE_RATE CALLBACK_CB_SLOW_DURATION CALLBACK_CB_WINDOW_SIZE CALLBACK_CB_MIN_CALLS CALLBACK_CB_WAIT_DURATION CALLBACK_RETRY_MAX_ATTEMPTS CALLBACK_RETRY_INITIAL_DELAY CALLBACK_RETRY_MAX_DELAY CALLBACK_RETRY_MULTIPLIER CALLBACK_SIGNATURE_ALGORITHM CALLBACK_SIGNATURE_HEADER") {
		if !seen[v] {
			t.Errorf("%s is not tested", v)
		}
	}
}

func TestYAMLOverridesDefaults(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	s, err := decodeSettings(t, "platform:\n  callbacks:\n    retry:\n      max-attempts: 5\n", nil)
	is.NoErr(err)
	is.Equal(s.Retry.MaxAttempts, 5)
	is.Equal(s.Retry.InitialDelayMs, 1000) // untouched
}

// TestSettingsBounds checks values on both sides of each bound.
func TestSettingsBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env, value string
		ok         bool
	}{
		{"CALLBACK_DISPATCHER_THREADS", "0", false},
		{"CALLBACK_DISPATCHER_THREADS", "1", true},
		{"CALLBACK_DISPATCHER_THREADS", "1000", true},
		{"CALLBACK_DISPATCHER_THREADS", "1001", false},
		{"CALLBACK_DEFAULT_TIMEOUT", "0", false},
		{"CALLBACK_DEFAULT_TIMEOUT", "600000", true},
		{"CALLBACK_DEFAULT_TIMEOUT", "600001", false},
		{"CALLBACK_CB_FAILURE_RATE", "0", false},
		{"CALLBACK_CB_FAILURE_RATE", "100", true},
		{"CALLBACK_CB_FAILURE_RATE", "100.1", false},
		{"CALLBACK_CB_WINDOW_SIZE", "0", false},
		{"CALLBACK_CB_WINDOW_SIZE", "10000", true},
		{"CALLBACK_CB_WINDOW_SIZE", "10001", false},
		{"CALLBACK_CB_MIN_CALLS", "0", false},
		{"CALLBACK_CB_WAIT_DURATION", "0", false},
		{"CALLBACK_CB_SLOW_DURATION", "0", false},
		{"CALLBACK_RETRY_MAX_ATTEMPTS", "0", false},
		{"CALLBACK_RETRY_MAX_ATTEMPTS", "1", true},
		{"CALLBACK_RETRY_MAX_ATTEMPTS", "100", true},
		{"CALLBACK_RETRY_MAX_ATTEMPTS", "101", false},
		{"CALLBACK_RETRY_INITIAL_DELAY", "0", false},
		{"CALLBACK_RETRY_INITIAL_DELAY", "60001", false}, // above max-delay
		{"CALLBACK_RETRY_MULTIPLIER", "0.9", false},
		{"CALLBACK_RETRY_MULTIPLIER", "1", true},
		{"CALLBACK_RETRY_MULTIPLIER", "10", true},
		{"CALLBACK_RETRY_MULTIPLIER", "10.5", false},
		{"CALLBACK_RETRY_MULTIPLIER", "fast", false},
		{"CALLBACK_SIGNATURE_ALGORITHM", "HmacMD5", false},
		{"CALLBACK_SIGNATURE_HEADER", "Content-Type", false},
		{"CALLBACK_SIGNATURE_HEADER", "Bad Header", false},
		{"CALLBACK_LISTENER_TOPICS", "a*b", false},
		{"CALLBACK_LISTENER_GROUP_ID", "bad group", false},
		{"PLATFORM_CALLBACKS_SSRF_ALLOWED_CIDRS", "10.0.0.0", false},
		{"PLATFORM_CALLBACKS_RETENTION", "30m", false},
	}
	for _, c := range cases {
		_, err := decodeSettings(t, "", map[string]string{c.env: c.value})
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: err = %v, want ok=%v", c.env, c.value, err, c.ok)
		}
	}
}
