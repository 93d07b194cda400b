package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

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

func (s *Service) handleStatus(w http.ResponseWriter, r *http.Request, p Principal, _ httprouter.Params) error {
	if err := noQuery(r); err != nil {
		return err
	}
	counts, err := s.jobCounts(r.Context(), p) // only the caller's own jobs; the owner's are all
	if err != nil {
		return err
	}
	running := counts[StateRunning]
	if p.Owner {
		s.sched.mu.Lock()
		running = len(s.sched.running)
		s.sched.mu.Unlock()
	}
	return respond(w, http.StatusOK, map[string]any{
		"version":     s.build.Version,
		"commit":      s.build.Commit,
		"apiVersion":  apiVersion,
		"listener":    s.addr(),
		"client":      p.Client,
		"providers":   s.providerStatus(),
		"jobs":        counts,
		"concurrency": map[string]int{"limit": s.cfg.MaxConcurrentJobs, "running": running},
		"events":      map[string]uint64{"oldest": s.ring.Oldest(), "newest": s.ring.Newest(), "capacity": uint64(s.ring.Capacity())},
	})
}
