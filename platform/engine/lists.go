package engine

import "github.com/agentbridge/bridge/platform/api"

// registerLists adds run_summaries.list, runs.steps and runs.logs. TODO(helper).
func (s *Service) registerLists(add func(api.Route)) {}
