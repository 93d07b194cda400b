package source

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/store"
)

// tagConnections is the OpenAPI tag of the routes.
const tagConnections = "Connections"

// envBase is E relative to api.Prefix.
const envBase = "/tenants/{tenant}/projects/{project}/environments/{environment}"

// connectionBase is E/connections relative to api.Prefix.
const connectionBase = envBase + "/connections"

func (s *Service) connectionRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodPost, Path: connectionBase, Capability: auth.CapConnectionManage, Idempotency: api.PolicyOptional,
			Handler: s.createConnection, OperationID: "createConnection", Tag: tagConnections, Summary: "Create a connection (its first revision)",
			Description: "Needs connection.manage. The secrets are sealed at rest and never shown again, not even in this answer. " +
				"An optional Idempotency-Key makes a retried request answer the committed revision; without one each request creates a new connection.",
			Request: ConnectionRequest{}, Response: Connection{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodPost, Path: connectionBase + "/{connection}/revisions", Capability: auth.CapConnectionManage, Idempotency: api.PolicyOptional,
			Handler: s.reviseConnection, OperationID: "reviseConnection", Tag: tagConnections, Summary: "Create a new revision of a connection",
			Description: "Revisions never change: a change is a new revision with a new id (revision + 1) and the whole settings and secrets again. " +
				"Sources keep the revision they were bound to. The provider cannot change. Needs connection.manage; optional Idempotency-Key.",
			Request: ConnectionRequest{}, Response: Connection{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: connectionBase, Capability: auth.CapConnectionManage, Page: true, Handler: s.listConnections,
			OperationID: "listConnections", Tag: tagConnections, Summary: "List the environment's connections (newest revision of each)",
			Description: "Needs connection.manage (the scope-wide capability of the collection).", Response: api.Page[Connection]{}},
		{Method: http.MethodGet, Path: connectionBase + "/{connection}", Handler: s.getConnection,
			OperationID: "getConnection", Tag: tagConnections, Summary: "Read a connection revision (never its secrets)",
			Description: "The identifier is a revision id (that revision) or a connection id (its newest revision). Needs connection.manage or connection.bind.",
			Response:    Connection{}, ETag: true},
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

// sealSecrets seals a revision's secrets (associated data: its id).
func (s *Service) sealSecrets(id string, secrets map[string]string) (string, error) {
	b, err := json.Marshal(secrets)
	if err != nil {
		return "", err
	}
	sealed, err := s.box.SealString(string(b), "platform/connection/"+id)
	if err != nil {
		return "", fmt.Errorf("source: seal connection secrets: %w", err)
	}
	return sealed, nil
}

// openSecrets opens a revision's secrets.
func (s *Service) openSecrets(r connectionRow) (map[string]string, error) {
	plain, err := s.box.OpenString(r.sealed, "platform/connection/"+r.ID)
	if err != nil {
		return nil, fmt.Errorf("source: open the secrets of connection revision %s: %w", r.ID, err)
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(plain), &out); err != nil {
		return nil, fmt.Errorf("source: the secrets of connection revision %s: %w", r.ID, err)
	}
	return out, nil
}

// newRevision stores a revision of connection (revision n) from req.
func (s *Service) newRevision(c *api.Call, tx *sql.Tx, req ConnectionRequest, connection string, n int64) (*api.Result, error) {
	sc := c.PathScope()
	id := s.newID()
	sealed, err := s.sealSecrets(id, req.Secrets)
	if err != nil {
		return nil, err
	}
	r := connectionRow{Connection: Connection{ID: id, ConnectionID: connection, Revision: n, Name: req.Name, Provider: req.Provider,
		Config: req.Config, SecretKeys: secretNames(req.Secrets), PrincipalID: c.Caller.Principal.ID, CreatedAt: s.timestamp()},
		Tenant: sc.Tenant, Project: sc.Project, Environment: sc.Environment, sealed: sealed}
	if err := insertConnection(c.Context(), tx, r); err != nil {
		return nil, err
	}
	return &api.Result{Body: r.Connection, Revision: r.Revision, Location: api.Prefix + fillEnv(sc, "/connections/"+id)}, nil
}

// decodeConnection reads and checks a ConnectionRequest.
func (s *Service) decodeConnection(c *api.Call) (ConnectionRequest, error) {
	var req ConnectionRequest
	if err := c.Decode(&req); err != nil {
		return req, err
	}
	_, err := checkConnection(s.packages, &req)
	return req, err
}

// createConnection serves POST E/connections.
func (s *Service) createConnection(c *api.Call) error {
	req, err := s.decodeConnection(c)
	if err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(c, tx); err != nil {
			return nil, err
		}
		return s.newRevision(c, tx, req, s.newID(), 1)
	}, nil)
}

// reviseConnection serves POST E/connections/{connection}/revisions.
func (s *Service) reviseConnection(c *api.Call) error {
	id, err := c.UUIDParam("connection", "connection")
	if err != nil {
		return err
	}
	req, err := s.decodeConnection(c)
	if err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(c, tx); err != nil {
			return nil, err
		}
		cur, err := latestConnection(c.Context(), tx, id)
		if errors.Is(err, errNotFound) || (err == nil && cur.Environment != c.PathScope().Environment) {
			return nil, api.NotFound("connection")
		}
		if err != nil {
			return nil, err
		}
		if cur.Provider != req.Provider {
			return nil, api.Invalid("/provider", "the connection's provider is %s; a revision cannot change it", cur.Provider)
		}
		return s.newRevision(c, tx, req, cur.ConnectionID, cur.Revision+1)
	}, nil)
}

// listConnections serves GET E/connections.
func (s *Service) listConnections(c *api.Call) error {
	q, err := c.PageQuery("connections", nil)
	if err != nil {
		return err
	}
	r := s.db.Reader()
	if err := requireEnvironment(c, r); err != nil {
		return err
	}
	rows, err := listConnections(c.Context(), r, c.PathScope().Environment, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(x Connection) string { return x.ConnectionID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// getConnection serves GET E/connections/{connection}.
func (s *Service) getConnection(c *api.Call) error {
	sc := c.PathScope()
	if err := c.Authorize(auth.CapConnectionManage, sc); err != nil {
		if err := c.Authorize(auth.CapConnectionBind, sc); err != nil {
			return err
		}
	}
	id, err := c.UUIDParam("connection", "connection")
	if err != nil {
		return err
	}
	rd := s.db.Reader()
	if err := requireEnvironment(c, rd); err != nil {
		return err
	}
	r, err := getConnection(c.Context(), rd, id)
	if errors.Is(err, errNotFound) {
		r, err = latestConnection(c.Context(), rd, id)
	}
	if errors.Is(err, errNotFound) || (err == nil && r.Environment != sc.Environment) {
		return api.NotFound("connection")
	}
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: r.Connection, Revision: r.Revision})
}

// fillEnv is E (without api.Prefix) of sc followed by rest.
func fillEnv(sc auth.Scope, rest string) string {
	return "/tenants/" + sc.Tenant + "/projects/" + sc.Project + "/environments/" + sc.Environment + rest
}

// Register adds the routes of connections, provider packages, sources,
// receipts and the ingress route.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	var routes []api.Route
	routes = append(routes, s.connectionRoutes()...)
	routes = append(routes, s.sourceRoutes()...)
	routes = append(routes, s.receiptRoutes()...)
	routes = append(routes, s.ingressRoutes()...)
	for _, rt := range routes {
		a.Handle(r, rt)
	}
}
