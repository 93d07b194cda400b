package bridge

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// ProviderStatus describes one profile's agent for /status and `bridge status`.
type ProviderStatus struct {
	Profile   string `json:"profile"`
	Provider  string `json:"provider"`
	Available bool   `json:"available"`
	Demo      bool   `json:"demo"`
	Error     string `json:"error,omitempty"`
}

func (s *Service) providerStatus() []ProviderStatus {
	out := []ProviderStatus{}
	for _, name := range s.profileNames() {
		prof := s.profiles[name]
		ps := ProviderStatus{Profile: name, Provider: prof.provider.Name(), Demo: prof.provider.Demo(), Available: true}
		if err := prof.provider.Available(); err != nil {
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
	counts, err := s.jobCounts(r.Context())
	if err != nil {
		return err
	}
	s.sched.mu.Lock()
	running := len(s.sched.running)
	s.sched.mu.Unlock()
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
