package bridge

import (
	"context"

	"github.com/agentbridge/bridge/bridge/provider"
)

// ProviderStatus describes one profile's agent for /status and `bridge status`.
type ProviderStatus struct {
	Profile   string `json:"profile"`
	Provider  string `json:"provider"`
	Available bool   `json:"available"`
	Demo      bool   `json:"demo"`
	// Permissions is what the agent may do unasked: Claude's permission
	// mode or Codex's sandbox; empty for command and echo.
	Permissions string `json:"permissions,omitempty"`
	Error       string `json:"error,omitempty"`
}

func (s *Service) providerStatus() []ProviderStatus {
	out := []ProviderStatus{}
	for _, name := range s.profileNames() {
		prof := s.profiles[name]
		p := prof.provider
		if a, ok := p.(*provider.Auto); ok {
			p = a.Pick() // what a job started now would use; one detection for all fields
		}
		ps := ProviderStatus{Profile: name, Provider: p.Name(), Demo: p.Demo(), Permissions: p.Permissions(), Available: true}
		if err := p.Available(); err != nil {
			ps.Available, ps.Error = false, err.Error()
		}
		out = append(out, ps)
	}
	return out
}

// Status is the answer of GET /v1/bridge/status (JSON name order).
type Status struct {
	APIVersion  string            `json:"apiVersion"`
	Client      string            `json:"client"`
	Commit      string            `json:"commit"`
	Concurrency StatusConcurrency `json:"concurrency"`
	Events      StatusEvents      `json:"events"`
	// Jobs counts the jobs the caller may see by state.
	Jobs      map[State]int    `json:"jobs"`
	Listener  string           `json:"listener"`
	Providers []ProviderStatus `json:"providers"`
	Version   string           `json:"version"`
}

// StatusConcurrency is the job slots in use.
type StatusConcurrency struct {
	Limit   int `json:"limit"`
	Running int `json:"running"`
}

// StatusEvents is the event ring's extent.
type StatusEvents struct {
	Capacity uint64 `json:"capacity"`
	Newest   uint64 `json:"newest"`
	Oldest   uint64 `json:"oldest"`
}

// Status reports the daemon, its providers and p's jobs: a client learns
// nothing about other clients' jobs; the owner sees all and the slots in use.
func (s *Service) Status(ctx context.Context, p Principal) (Status, error) {
	counts, err := s.jobCounts(ctx, p)
	if err != nil {
		return Status{}, err
	}
	running := counts[StateRunning]
	if p.Owner {
		s.sched.mu.Lock()
		running = len(s.sched.running)
		s.sched.mu.Unlock()
	}
	return Status{
		Version: s.build.Version, Commit: s.build.Commit, APIVersion: apiVersion, Listener: s.addr(), Client: p.Client,
		Providers: s.providerStatus(), Jobs: counts,
		Concurrency: StatusConcurrency{Limit: s.cfg.MaxConcurrentJobs, Running: running},
		Events:      StatusEvents{Oldest: s.ring.Oldest(), Newest: s.ring.Newest(), Capacity: uint64(s.ring.Capacity())},
	}, nil
}
