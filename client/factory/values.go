package factory

import (
	"fmt"
	"time"
)

// Modes of a run (docs/factory-api.md).
const (
	ModeBuild       = "build"
	ModeMaintenance = "maintenance"
	ModeTest        = "test"
)

// Run states.
const (
	StateQueued              = "queued"
	StateRunning             = "running"
	StateSucceeded           = "succeeded"
	StateFailed              = "failed"
	StateCancelled           = "cancelled"
	StateNeedsReconciliation = "needs_reconciliation"
	StatePaused              = "paused"
)

// States lists every run state.
var States = []string{StateQueued, StateRunning, StatePaused, StateSucceeded, StateFailed, StateCancelled, StateNeedsReconciliation}

// TaskPaused is an agent task waiting for its automatic retry after a
// provider rate limit.
const TaskPaused = "paused"

// MarshalJSON writes the duration as text ("10m0s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("a duration must be a string such as \"10m\"")
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return fmt.Errorf("invalid duration %s", b)
	}
	*d = Duration(v)
	return nil
}

// Passed reports whether a verification command succeeded.
func (c Check) Passed() bool { return c.ExitCode == 0 && !c.TimedOut }
