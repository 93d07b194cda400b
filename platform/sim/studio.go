package sim

import "github.com/agentbridge/bridge/platform/api"

// studio is the editor host's state (studio_http.go).
type studio struct{ svc *Service }

func newStudio(s *Service) *studio { return &studio{svc: s} }

func (s *Service) studioRoutes() []api.Route { return nil }
