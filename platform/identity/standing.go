package identity

import (
	"context"
	"errors"

	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// Standing decides whether a principal currently holds capability c at
// scope sc, from its stored principal and unrevoked grants: the check of
// work a principal started earlier and that runs later without a request
// (a schedule's execution principal, see docs/platform-api.md,
// "Schedules"). An unknown principal holds nothing.
func Standing(ctx context.Context, q store.Querier, principal string, c auth.Capability, sc auth.Scope) (auth.Decision, error) {
	p, err := getPrincipal(ctx, q, principal)
	if errors.Is(err, errNoRow) {
		return auth.Decision{Reason: auth.DecisionPrincipalInvalid}, nil
	}
	if err != nil {
		return auth.Decision{}, err
	}
	stored, err := currentGrants(ctx, q, p.ID)
	if err != nil {
		return auth.Decision{}, err
	}
	grants := make([]auth.Grant, len(stored))
	for i, g := range stored {
		grants[i] = g.Grant
	}
	return auth.Authorize(grants, p.auth(), c, sc), nil
}
