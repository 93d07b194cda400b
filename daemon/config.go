package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/store/broker"
)

// Config is the daemon's own part of config.yaml: where it listens, how it
// logs and how many events it keeps. Subsystems read their own sections.
type Config struct {
	Listen Listen `yaml:"listen"`
	Log    Log    `yaml:"log"`
	Events Events `yaml:"events"`
}

// Listen configures the two loopback listeners.
type Listen struct {
	BridgeHost   string `yaml:"bridge-host" env:"BRIDGE_HOST"`
	BridgePort   int    `yaml:"bridge-port" env:"BRIDGE_PORT"`
	ServicesHost string `yaml:"services-host" env:"SERVER_HOST"`
	ServicesPort int    `yaml:"services-port" env:"SERVER_PORT"`
	// AllowNonLoopback must be set to bind anything but a loopback address.
	AllowNonLoopback bool `yaml:"allow-non-loopback" env:"BRIDGE_ALLOW_NON_LOOPBACK"`
	// AllowedHosts and AllowedOrigins admit a tunnel's hostname and browser
	// origin in addition to the loopback names; bearer auth stays required.
	AllowedHosts   []string `yaml:"allowed-hosts" env:"BRIDGE_ALLOWED_HOSTS"`
	AllowedOrigins []string `yaml:"allowed-origins" env:"BRIDGE_ALLOWED_ORIGINS"`
	// BodyReadTimeout is how long a request body may take to arrive, on
	// both listeners (see withBodyDeadline).
	BodyReadTimeout config.Duration `yaml:"body-read-timeout" env:"BRIDGE_BODY_READ_TIMEOUT"`
}

// Log configures log/slog output.
type Log struct {
	Level  string `yaml:"level" env:"BRIDGE_LOG_LEVEL"`
	Format string `yaml:"format" env:"BRIDGE_LOG_FORMAT"`
}

// Events sizes what events.bolt keeps: the bridge's event ring and the
// broker's topics, and when the file is compacted (docs/retention.md).
type Events struct {
	Capacity int `yaml:"capacity" env:"BRIDGE_EVENTS_CAPACITY"`
	// BrokerMaxAge, BrokerMaxMessages and BrokerMaxMiB bound each broker
	// topic; acknowledged messages beyond any of them are deleted.
	BrokerMaxAge      config.Duration `yaml:"broker-max-age" env:"BRIDGE_EVENTS_BROKER_MAX_AGE"`
	BrokerMaxMessages int64           `yaml:"broker-max-messages" env:"BRIDGE_EVENTS_BROKER_MAX_MESSAGES"`
	BrokerMaxMiB      int64           `yaml:"broker-max-mib" env:"BRIDGE_EVENTS_BROKER_MAX_MIB"`
	// CompactMinFreeMiB: serve compacts events.bolt at start when this many
	// MiB (and a quarter of the file) are free; 0 never compacts.
	CompactMinFreeMiB int64 `yaml:"compact-min-free-mib" env:"BRIDGE_EVENTS_COMPACT_MIN_FREE_MIB"`
}

// Default ports of the two listeners.
const (
	DefaultBridgePort   = 8766
	DefaultServicesPort = 8080
)

// DefaultConfig is the configuration used when config.yaml says nothing.
func DefaultConfig() Config {
	return Config{
		Listen: Listen{
			BridgeHost: "127.0.0.1", BridgePort: DefaultBridgePort,
			ServicesHost: "127.0.0.1", ServicesPort: DefaultServicesPort,
			BodyReadTimeout: config.Duration(30 * time.Second),
		},
		Log: Log{Level: "info", Format: "text"},
		Events: Events{
			Capacity:     100_000,
			BrokerMaxAge: config.Duration(broker.DefaultRetentionMaxAge), BrokerMaxMessages: broker.DefaultRetentionMaxMessages,
			BrokerMaxMiB: broker.DefaultRetentionMaxBytes >> 20, CompactMinFreeMiB: 64,
		},
	}
}

// Validate checks ranges and the loopback rule.
func (c *Config) Validate() error {
	for _, p := range []struct {
		name string
		port int
	}{{"listen.bridge-port", c.Listen.BridgePort}, {"listen.services-port", c.Listen.ServicesPort}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("%s %d is outside 0..65535", p.name, p.port)
		}
	}
	if !c.Listen.AllowNonLoopback {
		for _, h := range []string{c.Listen.BridgeHost, c.Listen.ServicesHost} {
			if !httpx.IsLoopbackHost(h) {
				return fmt.Errorf("refusing to listen on non-loopback address %q; set listen.allow-non-loopback: true to allow it", h)
			}
		}
	}
	if d := c.Listen.BodyReadTimeout.D(); d < 100*time.Millisecond || d > time.Hour {
		return fmt.Errorf("listen.body-read-timeout %s is outside 100ms..1h", d)
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level %q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("log.format %q is not text or json", c.Log.Format)
	}
	if c.Events.Capacity < 100 || c.Events.Capacity > 100_000_000 {
		return fmt.Errorf("events.capacity %d is outside 100..100000000", c.Events.Capacity)
	}
	return c.Events.validateRetention()
}

// validateRetention checks the broker's bounds and the compaction threshold.
func (e Events) validateRetention() error {
	switch {
	case e.BrokerMaxAge.D() < time.Minute || e.BrokerMaxAge.D() > 8760*time.Hour:
		return fmt.Errorf("events.broker-max-age %s is outside 1m..8760h", e.BrokerMaxAge.D())
	case e.BrokerMaxMessages < 1000 || e.BrokerMaxMessages > 1_000_000_000:
		return fmt.Errorf("events.broker-max-messages %d is outside 1000..1000000000", e.BrokerMaxMessages)
	case e.BrokerMaxMiB < 1 || e.BrokerMaxMiB > 1<<20:
		return fmt.Errorf("events.broker-max-mib %d is outside 1..1048576", e.BrokerMaxMiB)
	case e.CompactMinFreeMiB < 0 || e.CompactMinFreeMiB > 1<<20:
		return fmt.Errorf("events.compact-min-free-mib %d is outside 0..1048576", e.CompactMinFreeMiB)
	}
	return nil
}

// DefaultDataDir is $BRIDGE_HOME, else the OS user config directory + /bridge.
func DefaultDataDir() (string, error) {
	if d := os.Getenv("BRIDGE_HOME"); d != "" {
		return d, nil
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: set BRIDGE_HOME or pass --data-dir (%w)", err)
	}
	return filepath.Join(base, "bridge"), nil
}

// Files of the data directory.
const (
	ConfigFile     = "config.yaml"
	OwnerTokenFile = "owner.token"
	DatabaseFile   = "bridge.db"
	EventsFile     = "events.bolt"
	// JournalFile is the broker's write-ahead journal in front of
	// events.bolt, with JournalFile+".1" (store/broker/bolt_journal.go,
	// docs/retention.md).
	JournalFile = "events.journal"
	DaemonFile  = "daemon.json"
)
