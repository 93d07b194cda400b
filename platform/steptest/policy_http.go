package steptest

import (
	"database/sql"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// tagTests is the OpenAPI tag of the routes.
const tagTests = "Step tests and test activations"

func (s *Service) policyRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodGet, Path: envBase + "/test-policy", Capability: auth.CapStepTest, Handler: s.getPolicy,
			OperationID: "getTestPolicy", Tag: tagTests, Summary: "Read the environment's test policy",
			Description: "An environment without a stored policy answers test_calls disabled at revision 0 (no ETag).",
			Response:    Policy{}, ETag: true},
		{Method: http.MethodPut, Path: envBase + "/test-policy", Capability: auth.CapStepTest, IfMatch: api.PolicyOptional,
			Handler: s.putPolicy, OperationID: "putTestPolicy", Tag: tagTests, Summary: "Save the environment's test policy",
			Description: "If-Match must name the current revision once a policy is stored; the first save (revision 0) sends none. " +
				"A stale or missing revision answers 409 PF-REVISION with the current ETag.",
			Request: PolicyRequest{}, Response: Policy{}, ETag: true},
	}
}

// requireEnvironment answers 404 unless the path's environment exists.
func requireEnvironment(c *api.Call, q store.Querier) error {
	sc := c.PathScope()
	ok, err := environmentExists(c.Context(), q, sc.Tenant, sc.Project, sc.Environment)
	if err != nil {
		return err
	}
	if !ok {
		return api.NotFound("environment")
	}
	return nil
}

// getPolicy serves GET E/test-policy.
func (s *Service) getPolicy(c *api.Call) error {
	r := s.db.Reader()
	if err := requireEnvironment(c, r); err != nil {
		return err
	}
	p, err := getPolicy(c.Context(), r, c.PathScope().Environment)
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: p, Revision: p.Revision})
}

// putPolicy serves PUT E/test-policy.
func (s *Service) putPolicy(c *api.Call) error {
	var req PolicyRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	switch req.TestCalls {
	case CallsDisabled, CallsReadOnly, CallsAll:
	default:
		return api.Invalid("/test_calls", "test_calls is disabled, read_only or all")
	}
	ctx, env, want := c.Context(), c.PathScope().Environment, c.IfMatch()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(c, tx); err != nil {
			return nil, err
		}
		p, err := getPolicy(ctx, tx, env)
		if err != nil {
			return nil, err
		}
		if want != p.Revision {
			e := refused(CodeRevision, "the test policy is at revision %d; send If-Match with it (none while it is 0)", p.Revision)
			if p.Revision > 0 {
				e.Headers = map[string]string{"ETag": api.FormatETag(p.Revision)}
			}
			return nil, e
		}
		at, by := s.timestamp(), c.Caller.Principal.ID
		p = Policy{TestCalls: req.TestCalls, Revision: p.Revision + 1, UpdatedAt: &at, UpdatedBy: &by}
		if err := putPolicy(ctx, tx, env, p); err != nil {
			return nil, err
		}
		return &api.Result{Body: p, Revision: p.Revision}, nil
	}, nil)
}
