package identity

import (
	"database/sql"
	"errors"

	"github.com/agentbridge/bridge/platform/api"
)

func (s *Service) getTenant(c *api.Call) error {
	t, err := getTenant(c.Context(), s.db.Reader(), c.Params.ByName("tenant"))
	if err != nil {
		return notFound(err, "tenant")
	}
	return c.Respond(&api.Result{Body: t, Revision: t.Revision})
}

func (s *Service) createProject(c *api.Call) error {
	var req CreateProjectRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	name, err := checkName(req.Name)
	if err != nil {
		return api.Invalid("/name", "name %v", err)
	}
	tenant := c.Params.ByName("tenant")
	by := c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if _, err := getTenant(c.Context(), tx, tenant); err != nil {
			return nil, notFound(err, "tenant")
		}
		p := Project{ID: newID(), TenantID: tenant, Name: name, Revision: 1, CreatedAt: s.nowMS()}
		if err := insertProject(c.Context(), tx, p, by); err != nil {
			return nil, err
		}
		return &api.Result{Body: p, Revision: p.Revision, Location: api.Prefix + "/tenants/" + tenant + "/projects/" + p.ID}, nil
	}, s.Invalidate)
}

func (s *Service) listProjects(c *api.Call) error {
	tenant := c.Params.ByName("tenant")
	q, err := c.PageQuery("projects", nil)
	if err != nil {
		return err
	}
	if _, err := getTenant(c.Context(), s.db.Reader(), tenant); err != nil {
		return notFound(err, "tenant")
	}
	rows, err := listProjects(c.Context(), s.db.Reader(), tenant, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(p Project) string { return p.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

func (s *Service) getProject(c *api.Call) error {
	p, err := getProject(c.Context(), s.db.Reader(), c.Params.ByName("tenant"), c.Params.ByName("project"))
	if err != nil {
		return notFound(err, "project")
	}
	return c.Respond(&api.Result{Body: p, Revision: p.Revision})
}

func (s *Service) createEnvironment(c *api.Call) error {
	var req CreateEnvironmentRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	name, err := checkName(req.Name)
	if err != nil {
		return api.Invalid("/name", "name %v", err)
	}
	tenant, project := c.Params.ByName("tenant"), c.Params.ByName("project")
	by := c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if _, err := getProject(c.Context(), tx, tenant, project); err != nil {
			return nil, notFound(err, "project")
		}
		e := Environment{ID: newID(), TenantID: tenant, ProjectID: project, Name: name, Revision: 1, CreatedAt: s.nowMS()}
		if err := insertEnvironment(c.Context(), tx, e, by); err != nil {
			return nil, err
		}
		return &api.Result{Body: e, Revision: e.Revision,
			Location: api.Prefix + "/tenants/" + tenant + "/projects/" + project + "/environments/" + e.ID}, nil
	}, s.Invalidate)
}

func (s *Service) listEnvironments(c *api.Call) error {
	tenant, project := c.Params.ByName("tenant"), c.Params.ByName("project")
	q, err := c.PageQuery("environments", nil)
	if err != nil {
		return err
	}
	if _, err := getProject(c.Context(), s.db.Reader(), tenant, project); err != nil {
		return notFound(err, "project")
	}
	rows, err := listEnvironments(c.Context(), s.db.Reader(), tenant, project, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(e Environment) string { return e.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

func (s *Service) getEnvironment(c *api.Call) error {
	e, err := getEnvironment(c.Context(), s.db.Reader(), c.Params.ByName("tenant"), c.Params.ByName("project"), c.Params.ByName("environment"))
	if err != nil {
		return notFound(err, "environment")
	}
	return c.Respond(&api.Result{Body: e, Revision: e.Revision})
}

// notFound maps a missing row to 404 PF-NOT-FOUND for what.
func notFound(err error, what string) error {
	if errors.Is(err, errNoRow) {
		return api.NotFound(what)
	}
	return err
}
