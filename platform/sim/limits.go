package sim

import "time"

// Limits are the simulation and session limits of docs/platform-api.md
// ("Debug sessions"). Tests shrink them; DefaultLimits are the spec's.
type Limits struct {
	// Per next or continue: node reductions, kernel events fed, kernel
	// commands (effects other than history records) and boundaries (mock
	// answers and timers the simulator resolves).
	Reductions int
	Events     int
	Commands   int
	Boundaries int
	// PendingSignals bounds the signals received before a step waits for
	// them.
	PendingSignals int
	// VirtualTime bounds how far the virtual clock may move from the
	// session's start.
	VirtualTime time.Duration
	// SessionBytes bounds the serialized session.
	SessionBytes int
	// Lifetime of a session from its creation.
	Lifetime time.Duration
	// LivePerCreator and LivePerProject bound unexpired sessions that have
	// not ended; RetainedPerProject bounds stored ones.
	LivePerCreator     int
	LivePerProject     int
	RetainedPerProject int
	// StudioSessions and StudioWork are the editor host's open sessions
	// and work limit per request (0: the documented 4 and 30 seconds).
	StudioSessions int
	StudioWork     time.Duration
	// Retention is how long an expired session stays readable (410) before
	// it is deleted.
	Retention time.Duration
}

// DefaultLimits are the documented limits.
func DefaultLimits() Limits {
	return Limits{
		Reductions: 10_000, Events: 10_000, Commands: 10_000, Boundaries: 10_000,
		PendingSignals: 1_000, VirtualTime: 366 * 24 * time.Hour, SessionBytes: 64 << 20,
		Lifetime: time.Hour, LivePerCreator: 4, LivePerProject: 16, RetainedPerProject: 1_000,
		Retention: 24 * time.Hour,
	}
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err) // constant input
	}
	return t
}
