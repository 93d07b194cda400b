package platform

import (
	"context"
	"time"

	"github.com/agentbridge/bridge/platform/engine"
)

// CallTool runs an agent step's tool call through the engine (the bridge
// serves the step's tools to its agent; docs/workflow-language.md).
func (s *Service) CallTool(ctx context.Context, c engine.ToolCall, wait time.Duration) (engine.ToolResult, error) {
	return s.engine.CallTool(ctx, c, wait)
}
