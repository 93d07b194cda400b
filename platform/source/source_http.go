package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/source/provider"
	"github.com/agentbridge/bridge/store"
)

// tags of the routes.
const (
	tagSources  = "Provider sources"
	tagPackages = "Provider packages"
)

// sourceBase is E/provider-sources relative to api.Prefix.
const sourceBase = envBase + "/provider-sources"

func (s *Service) sourceRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodGet, Path: "/tenants/{tenant}/projects/{project}/provider-packages", Capability: auth.CapCatalogRead,
			Handler: s.listPackages, OperationID: "listProviderPackages", Tag: tagPackages, Summary: "List the built-in provider packages",
			Description: "Each declaration: provider, package, package_version, adapter_version, config and secret keys, event kinds with the JSON " +
				"schema of each normalized event, the dispatchable kinds, schema_digest, and how ingress is authenticated and challenged. Needs catalog.read.",
			Response: PackageList{}},
		{Method: http.MethodPost, Path: sourceBase, Capability: auth.CapTriggerManage, Handler: s.createSource,
			OperationID: "createProviderSource", Tag: tagSources, Summary: "Create a provider source",
			Description: "Needs trigger.manage, connection.manage and connection.bind (standing), and the target capability: run.start (kind run) " +
				"or run.signal (kind signal). The package declaration must match schema_digest; policy must copy the connection revision's config " +
				"(account_id pinned). The mapping is checked statically against every dispatchable event kind's schema and the target schema: a " +
				"mapping that cannot type-check is refused with 422 PF-VALIDATION located at /mapping. The creator becomes the source's owner.",
			Request: SourceRequest{}, Response: Source{}, Status: http.StatusCreated},
		{Method: http.MethodGet, Path: sourceBase, Capability: auth.CapRunRead, Page: true, Handler: s.listSources,
			OperationID: "listProviderSources", Tag: tagSources, Summary: "List the environment's provider sources",
			Description: "In id order, disabled ones included. Needs run.read.", Response: api.Page[Source]{}},
		{Method: http.MethodGet, Path: sourceBase + "/{identifier}", Capability: auth.CapRunRead, Handler: s.getSource,
			OperationID: "getProviderSource", Tag: tagSources, Summary: "Read a provider source", Response: Source{}},
		{Method: http.MethodPost, Path: sourceBase + "/{identifier}/disable", Capability: auth.CapTriggerManage, Handler: s.disableSource,
			OperationID: "disableProviderSource", Tag: tagSources, Summary: "Disable a provider source for good",
			Description: "Irreversible for that id: its ingress answers 404 and its binding is revoked, so its pending receipts become blocked. " +
				"Needs trigger.manage, connection.bind and the target capability. Disabling again answers 409 PF-CONFLICT.",
			Response: Source{}},
	}
}

// PackageList answers GET P/provider-packages.
type PackageList struct {
	Items []*provider.Package `json:"items"`
}

// listPackages serves GET P/provider-packages.
func (s *Service) listPackages(c *api.Call) error {
	return c.OK(PackageList{Items: s.packages.All()})
}

// readSource loads the source named by the path in the path's environment.
func (s *Service) readSource(c *api.Call, q store.Querier) (Source, error) {
	id, err := c.UUIDParam("identifier", "provider source")
	if err != nil {
		return Source{}, err
	}
	if err := requireEnvironment(c, q); err != nil {
		return Source{}, err
	}
	r, err := getSource(c.Context(), q, id)
	if errors.Is(err, errNotFound) || (err == nil && r.Scope.EnvironmentID != c.PathScope().Environment) {
		return Source{}, api.NotFound("provider source")
	}
	return r, err
}

// targets answers the schemas a source's mapped value must fit, and
// whether it must be an object (a run input).
func (s *Service) targets(ctx context.Context, sc auth.Scope, req SourceRequest) ([]json.RawMessage, bool, error) {
	if req.Kind == KindRun {
		in, err := s.runs.InputSchema(ctx, sc, req.ActivationID)
		if err != nil {
			return nil, false, err
		}
		return []json.RawMessage{in}, true, nil
	}
	schemas, err := s.runs.SignalSchemas(ctx, sc, req.RunID, req.Signal)
	switch {
	case errors.Is(err, engine.ErrRunNotFound):
		return nil, false, api.Invalid("/run_id", "the environment has no run with that id")
	case errors.Is(err, engine.ErrRunEnded):
		return nil, false, api.Conflict(api.CodeConflict, "run %s has ended; it accepts no signals", req.RunID)
	case err != nil:
		return nil, false, err
	case len(schemas) == 0:
		return nil, false, api.Invalid("/signal", "the run's workflow has no signal step waiting for %q", req.Signal)
	}
	return schemas, false, nil
}

// createSource serves POST E/provider-sources.
func (s *Service) createSource(c *api.Call) error {
	var req SourceRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	p, err := checkSource(s.packages, &req)
	if err != nil {
		return err
	}
	ast, err := compileMapping(req.Mapping)
	if err != nil {
		return err
	}
	ctx, sc := c.Context(), c.PathScope()
	for _, cp := range []auth.Capability{auth.CapConnectionManage, auth.CapConnectionBind, capability(req.Kind)} {
		if err := c.Authorize(cp, sc); err != nil {
			return err
		}
	}
	rd := s.db.Reader()
	if err := requireEnvironment(c, rd); err != nil {
		return err
	}
	conn, err := getConnection(ctx, rd, req.ConnectionRevisionID)
	if errors.Is(err, errNotFound) || (err == nil && conn.Environment != sc.Environment) {
		return api.Invalid("/connection_revision_id", "the environment has no connection revision with that id")
	}
	if err != nil {
		return err
	}
	if conn.Provider != req.Provider {
		return api.Invalid("/connection_revision_id", "the connection revision is for provider %s, not %s", conn.Provider, req.Provider)
	}
	if err := checkPolicy(req.Policy, conn.Config); err != nil {
		return err
	}
	targets, object, err := s.targets(ctx, sc, req)
	if err != nil {
		return err
	}
	what := "the workflow input"
	if req.Kind == KindSignal {
		what = "the payload of signal " + req.Signal
	}
	for _, kind := range p.Dispatchable {
		if err := checkContainment(ast, kind, p.EventSchemas[kind], targets, what, object); err != nil {
			return err
		}
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(c, tx); err != nil {
			return nil, err
		}
		id := s.newID()
		r := Source{ID: id, Name: req.Name, Provider: req.Provider, Package: req.Package, PackageVersion: req.PackageVersion,
			AdapterVersion: req.AdapterVersion, SchemaDigest: req.SchemaDigest, ConnectionRevisionID: req.ConnectionRevisionID,
			Policy: req.Policy, Kind: req.Kind, Mapping: req.Mapping,
			Scope:     Scope{TenantID: sc.Tenant, ProjectID: sc.Project, EnvironmentID: sc.Environment},
			BindingID: s.newID(), PrincipalID: c.Caller.Principal.ID, IngressURL: ingressPath(id), CreatedAt: s.timestamp()}
		if req.Kind == KindRun {
			r.ActivationID = &req.ActivationID
		} else {
			r.RunID, r.Signal = &req.RunID, &req.Signal
		}
		if err := insertSource(c.Context(), tx, r); err != nil {
			return nil, err
		}
		return &api.Result{Body: r, Location: api.Prefix + fillEnv(sc, "/provider-sources/"+id)}, nil
	}, nil)
}

// listSources serves GET E/provider-sources.
func (s *Service) listSources(c *api.Call) error {
	q, err := c.PageQuery("provider-sources", nil)
	if err != nil {
		return err
	}
	r := s.db.Reader()
	if err := requireEnvironment(c, r); err != nil {
		return err
	}
	rows, err := listSources(c.Context(), r, c.PathScope().Environment, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(x Source) string { return x.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// getSource serves GET E/provider-sources/{identifier}.
func (s *Service) getSource(c *api.Call) error {
	r, err := s.readSource(c, s.db.Reader())
	if err != nil {
		return err
	}
	return c.OK(r)
}

// disableSource serves POST E/provider-sources/{identifier}/disable.
func (s *Service) disableSource(c *api.Call) error {
	cur, err := s.readSource(c, s.db.Reader())
	if err != nil {
		return err
	}
	for _, cp := range []auth.Capability{auth.CapConnectionBind, capability(cur.Kind)} {
		if err := c.Authorize(cp, c.PathScope()); err != nil {
			return err
		}
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		ok, err := disableSource(c.Context(), tx, cur.ID, c.Caller.Principal.ID, s.timestamp())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, api.Conflict(api.CodeConflict, "the provider source is disabled for good; create a new one")
		}
		r, err := getSource(c.Context(), tx, cur.ID)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: r}, nil
	}, s.runs.Notify)
}
