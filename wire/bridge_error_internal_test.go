package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentbridge/bridge/bridge"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/engine"
)

// TestBridgeErrorByType: the platform's start refusals reach the bridge as
// its codes with the refusal's detail as the message, found by type however
// they are wrapped; a missing run is the bridge's sentinel; others pass.
func TestBridgeErrorByType(t *testing.T) {
	for _, tc := range []struct {
		kind error
		code string
	}{
		{platform.ErrWorkflowNotPublished, bridge.CodeUnknownTemplate},
		{platform.ErrNoActiveActivation, bridge.CodeTemplateNotActive},
		{platform.ErrInvalidInput, bridge.CodeInvalidInputs},
	} {
		err := fmt.Errorf("start: %w", engine.RefuseStart(tc.kind, "the detail: %s", "x"))
		var be *bridge.Error
		if !errors.As(bridgeError(err), &be) || be.Code != tc.code || be.Message != "the detail: x" {
			t.Errorf("%v: got %#v", tc.kind, bridgeError(err))
		}
	}
	gone := bridgeError(fmt.Errorf("read: %w", platform.ErrRunNotFound))
	if !errors.Is(gone, bridge.ErrPlatformRunNotFound) {
		t.Errorf("a missing run: %v", gone)
	}
	other := errors.New("invalid input: disk full") // the text alone means nothing
	if got := bridgeError(other); got != other {
		t.Errorf("another error changed: %v", got)
	}
}
