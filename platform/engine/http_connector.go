package engine

import (
	"context"
	"net/http"

	"github.com/agentbridge/bridge/platform/kernel"
)

// adapterHTTP is the built-in http adapter.
const adapterHTTP = "http"

// performHTTP makes the http adapter's request. TODO(helper): implement.
func (s *Service) performHTTP(ctx context.Context, t *kernel.TaskSpec) outcome {
	return outcome{Err: &kernel.TaskError{Code: "EXECUTOR_UNAVAILABLE", Message: "http adapter not built yet"}}
}

// defaultHTTPClient TODO(helper).
func defaultHTTPClient() *http.Client { return &http.Client{} }
