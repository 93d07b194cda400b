package identity

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentbridge/bridge/platform/api"
)

// Identity is the body of GET /api/v1/identity.
type Identity struct {
	PrincipalID string `json:"principal_id" format:"uuid"`
	Kind        string `json:"kind" enum:"human,application,worker"`
	Name        string `json:"name"`
	// Grants are the principal's current grants.
	Grants []Grant `json:"grants"`
	// Workspaces are the tenants, projects and environments the grants
	// reach, in id order. Platform-level grants reach none.
	Workspaces []Workspace `json:"workspaces"`
}

// Workspace is a tenant the caller can use.
type Workspace struct {
	ID       string             `json:"id" format:"uuid"`
	Name     string             `json:"name"`
	Projects []WorkspaceProject `json:"projects"`
}

// WorkspaceProject is a project of a workspace.
type WorkspaceProject struct {
	ID           string                 `json:"id" format:"uuid"`
	Name         string                 `json:"name"`
	Environments []WorkspaceEnvironment `json:"environments"`
}

// WorkspaceEnvironment is an environment of a workspace project.
type WorkspaceEnvironment struct {
	ID   string `json:"id" format:"uuid"`
	Name string `json:"name"`
}

func (s *Service) getClientConfiguration(c *api.Call) error { return c.OK(s.clientCfg) }

func (s *Service) getIdentity(c *api.Call) error {
	e, err := s.callerEntry(c.R, c.Caller)
	if err != nil {
		return err
	}
	if p := e.identity.Load(); p != nil {
		return c.Raw(200, *p)
	}
	id, err := s.identity(c.Context(), e)
	if err != nil {
		return err
	}
	data, err := json.Marshal(id)
	if err != nil {
		return err
	}
	e.identity.Store(&data)
	return c.Raw(200, data)
}

// identity renders the identity of a cache entry.
func (s *Service) identity(ctx context.Context, e *accessEntry) (Identity, error) {
	id := Identity{PrincipalID: e.principal.ID, Kind: e.principal.Kind, Name: e.principal.Name, Grants: e.views, Workspaces: []Workspace{}}
	if id.Grants == nil {
		id.Grants = []Grant{}
	}
	// What each grant reaches: a whole tenant, a whole project, or one
	// environment (resource grants reach their project or environment).
	wholeTenant, wholeProject, project, env := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	var tenants []string
	for i, g := range e.grants {
		if g.Scope.IsRoot() || len(e.views[i].EffectiveCapabilities) == 0 {
			continue
		}
		if !slices.Contains(tenants, g.Scope.Tenant) {
			tenants = append(tenants, g.Scope.Tenant)
		}
		switch {
		case g.Scope.Project == "":
			wholeTenant[g.Scope.Tenant] = true
		case g.Scope.Environment == "" && g.Scope.Resource == "":
			wholeProject[g.Scope.Project] = true
		case g.Scope.Environment == "":
			project[g.Scope.Project] = true // a resource of the project
		default:
			env[g.Scope.Environment] = true
		}
	}
	slices.Sort(tenants)
	for _, tid := range tenants {
		t, projects, envs, err := tenantTree(ctx, s.db.Reader(), tid)
		if errors.Is(err, errNoRow) {
			continue
		}
		if err != nil {
			return id, err
		}
		ws := Workspace{ID: t.ID, Name: t.Name, Projects: []WorkspaceProject{}}
		for _, p := range projects {
			wp := WorkspaceProject{ID: p.ID, Name: p.Name, Environments: []WorkspaceEnvironment{}}
			all := wholeTenant[t.ID] || wholeProject[p.ID]
			for _, e := range envs {
				if e.ProjectID == p.ID && (all || env[e.ID]) {
					wp.Environments = append(wp.Environments, WorkspaceEnvironment{ID: e.ID, Name: e.Name})
				}
			}
			if all || project[p.ID] || len(wp.Environments) > 0 {
				ws.Projects = append(ws.Projects, wp)
			}
		}
		id.Workspaces = append(id.Workspaces, ws)
	}
	return id, nil
}
