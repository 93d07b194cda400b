package engine

import "github.com/agentbridge/bridge/platform/api"

// registerControl adds signals, pause and resume. TODO.
func (s *Service) registerControl(add func(api.Route)) {}
