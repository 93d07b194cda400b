package compat

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// tag is the OpenAPI tag of the routes.
const tag = "Compatibility"

// base is P/operations/compatibility relative to api.Prefix.
const base = "/tenants/{tenant}/projects/{project}/operations/compatibility"

// Register adds the routes.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	for _, rt := range []api.Route{
		{Method: http.MethodGet, Path: base, Capability: auth.CapStatusRead, Handler: s.get,
			OperationID: "getCompatibility", Tag: tag, Summary: "Whether this server can run the project's published definitions",
			Description: "The last scan (automatic every 5 minutes; a project never scanned is scanned now). While restricted, new runs " +
				"in the project answer 503 PF-COMPATIBILITY with Retry-After (whole seconds to next_scan_at) and readiness answers 503.",
			Response: Report{}},
		{Method: http.MethodPost, Path: base + "/check", Capability: auth.CapCompatibilityCheck, Handler: s.check,
			OperationID: "checkCompatibility", Tag: tag, Summary: "Scan the project now",
			Description: "Rescans at once; a passing scan lifts a restricted verdict.", Response: Report{}},
	} {
		a.Handle(r, rt)
	}
}

func (s *Service) project(c *api.Call) (string, error) {
	sc := c.PathScope()
	ok, err := projectExists(c.Context(), s.db.Reader(), sc.Tenant, sc.Project)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", api.NotFound("project")
	}
	return sc.Project, nil
}

func (s *Service) get(c *api.Call) error {
	p, err := s.project(c)
	if err != nil {
		return err
	}
	r, err := s.Report(c.Context(), p)
	if err != nil {
		return err
	}
	return c.OK(r)
}

func (s *Service) check(c *api.Call) error {
	if err := c.DecodeOptional(&struct{}{}); err != nil {
		return err
	}
	p, err := s.project(c)
	if err != nil {
		return err
	}
	r, err := s.Scan(c.Context(), p)
	if err != nil {
		return err
	}
	return c.OK(r)
}
