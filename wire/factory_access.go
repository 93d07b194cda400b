package wire

import (
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/agentbridge/bridge/factory"
	"github.com/agentbridge/bridge/platform"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// factoryReaders lets platform principals read factory runs
// (docs/factory-api.md, "Access"): the platform authenticates the bearer
// token exactly as for its own API, with the principal's current grants,
// and a run's project is readable when those grants hold run.read there.
// The platform is built after the factory, so it is bound once built;
// until then every principal is refused as unauthenticated.
type factoryReaders struct {
	platform atomic.Pointer[platform.Service]
}

func (f *factoryReaders) CanRead(r *http.Request) (func(factory.Project) bool, error) {
	p := f.platform.Load()
	if p == nil {
		return nil, &factory.Error{Code: factory.EUnauthorized, Message: "this API needs the owner token (the platform is not running)"}
	}
	c, err := p.Authenticator().Authenticate(r, false)
	if err != nil {
		return nil, factoryAuthError(err)
	}
	return func(pr factory.Project) bool {
		return auth.Authorize(c.Grants, c.Principal, auth.CapRunRead, auth.Scope{Tenant: pr.Tenant, Project: pr.Project}).Allowed
	}, nil
}

// factoryAuthError maps the platform's refusal to the factory's codes,
// keeping its message and reason (e.g. "expired").
func factoryAuthError(err error) error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err
	}
	reason := ""
	if len(ae.Diagnostics) > 0 && ae.Diagnostics[0].Code != "" {
		reason = " (" + ae.Diagnostics[0].Code + ")"
	}
	switch ae.Code {
	case api.CodeUnauthenticated:
		return &factory.Error{Code: factory.EUnauthorized, Message: "this API needs the owner token or a valid platform access token" + reason}
	case api.CodeForbidden:
		return &factory.Error{Code: factory.EForbidden, Message: ae.Message + reason}
	}
	return err
}
