package platform

import (
	"fmt"
	"time"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/platform/engine"
)

// RunsConfig is platform.runs: the automatic archiving and purging of
// ended runs (docs/retention.md).
//
//	platform:
//	  runs:
//	    archive-after: 168h   # 0 keeps ended runs live
//	    purge-after: 0        # e.g. 2160h deletes archived runs after 90 days
type RunsConfig struct {
	// ArchiveAfter archives an ended run this long after its last event.
	ArchiveAfter config.Duration `yaml:"archive-after"`
	// PurgeAfter deletes an archived run this long after its archiving.
	PurgeAfter config.Duration `yaml:"purge-after"`
}

// DefaultRunArchiveAfter: a week of ended runs stays live (history, steps
// and logs readable without a restore); archiving loses nothing, purging
// does, so it is off unless configured.
const DefaultRunArchiveAfter = 7 * 24 * time.Hour

func defaultRunsConfig() RunsConfig {
	return RunsConfig{ArchiveAfter: config.Duration(DefaultRunArchiveAfter)}
}

// Validate checks platform.runs: each duration is 0 (off) or at least an
// hour.
func (c *RunsConfig) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"archive-after", c.ArchiveAfter.D()}, {"purge-after", c.PurgeAfter.D()}} {
		if d.v < 0 || (d.v > 0 && d.v < time.Hour) {
			return fmt.Errorf("%s %s must be 0 (off) or at least 1h", d.name, d.v)
		}
	}
	return nil
}

func (c RunsConfig) retention() engine.RunRetention {
	return engine.RunRetention{ArchiveAfter: c.ArchiveAfter.D(), PurgeAfter: c.PurgeAfter.D()}
}
