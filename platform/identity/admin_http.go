package identity

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// requirePlatformAdmin checks grant.admin at the platform scope.
func requirePlatformAdmin(c *api.Call) error {
	d := auth.AuthorizePlatformAdmin(c.Caller.Grants, c.Caller.Principal)
	c.Record(api.Decision{Action: api.ActionAuthorize, Capability: auth.CapGrantAdmin, Allowed: d.Allowed, Reason: d.Reason, GrantID: d.GrantID})
	if !d.Allowed {
		return api.Forbidden("this operation needs platform administration (grant.admin)")
	}
	return nil
}

// requireGrantAuthority checks that the caller administers access
// somewhere: grant.admin at the platform scope or grant.manage at some
// scope. Finer checks (auth.CheckDelegation, auth.CheckRevocation) follow.
func requireGrantAuthority(c *api.Call) error {
	p, grants := c.Caller.Principal, c.Caller.Grants
	if d := auth.AuthorizePlatformAdmin(grants, p); d.Allowed {
		c.Record(api.Decision{Action: api.ActionAuthorize, Capability: auth.CapGrantAdmin, Allowed: true, Reason: d.Reason, GrantID: d.GrantID})
		return nil
	}
	for _, g := range grants {
		if d := auth.Authorize([]auth.Grant{g}, p, auth.CapGrantManage, g.Scope); d.Allowed {
			c.Record(api.Decision{Action: api.ActionAuthorize, Capability: auth.CapGrantManage, Scope: g.Scope, Allowed: true, Reason: d.Reason, GrantID: d.GrantID})
			return nil
		}
	}
	c.Record(api.Decision{Action: api.ActionAuthorize, Capability: auth.CapGrantManage, Reason: auth.DecisionNoMatchingGrant})
	return api.Forbidden("this operation needs grant.admin or grant.manage")
}

func (s *Service) createTenant(c *api.Call) error {
	if err := requirePlatformAdmin(c); err != nil {
		return err
	}
	var req CreateTenantRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	name, err := checkName(req.Name)
	if err != nil {
		return api.Invalid("/name", "name %v", err)
	}
	t := Tenant{ID: newID(), Name: name, Revision: 1, CreatedAt: s.nowMS()}
	var admin *storedGrant
	if req.AdminPrincipalID != "" {
		if !auth.IsCanonicalUUID(req.AdminPrincipalID) {
			return api.Invalid("/admin_principal_id", "must be a canonical lowercase UUID")
		}
		grantee, err := getPrincipal(c.Context(), s.db.Reader(), req.AdminPrincipalID)
		if errors.Is(err, errNoRow) {
			return api.Invalid("/admin_principal_id", "no such principal")
		}
		if err != nil {
			return err
		}
		g := auth.Grant{ID: newID(), PrincipalID: grantee.ID, Scope: auth.Scope{Tenant: t.ID}, Role: auth.RoleTenantAdmin,
			GrantedBy: c.Caller.Principal.ID, CreatedAt: t.CreatedAt}
		if err := s.delegate(c, grantee, g, "/admin_principal_id"); err != nil {
			return err
		}
		admin = &storedGrant{Grant: g}
	}
	by := c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := insertTenant(c.Context(), tx, t, by); err != nil {
			return nil, err
		}
		if admin != nil {
			if err := insertGrant(c.Context(), tx, *admin); err != nil {
				return nil, err
			}
		}
		return &api.Result{Body: t, Revision: t.Revision, Location: api.Prefix + "/tenants/" + t.ID}, nil
	}, s.Invalidate)
}

// delegate runs auth.CheckDelegation for the caller, records the decision
// and maps refusals: 403 for missing authority, 422 (at path) for a grant
// that could never be valid.
func (s *Service) delegate(c *api.Call, grantee Principal, g auth.Grant, path string) error {
	err := auth.CheckDelegation(c.Caller.Grants, c.Caller.Principal, grantee.auth(), g)
	d := api.Decision{Action: api.ActionDelegate, Capability: auth.CapGrantManage, Scope: g.Scope, Allowed: err == nil, Reason: "allowed"}
	if g.Scope.IsRoot() || g.Role == auth.RoleTenantAdmin && g.Scope.Project == "" {
		d.Capability = auth.CapGrantAdmin
	}
	if err != nil {
		d.Reason = grantReason(err)
	}
	c.Record(d)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, auth.ErrGrantInvalid), errors.Is(err, auth.ErrPlatformBusiness), errors.Is(err, auth.ErrWorkerCapability):
		return api.Invalid(path, "%s", strings.TrimPrefix(err.Error(), "auth: grant: "))
	default:
		return api.Forbidden("%s", strings.TrimPrefix(err.Error(), "auth: grant: "))
	}
}

// grantReason is a short, fixed reason for the audit.
func grantReason(err error) string {
	for _, e := range []auth.GrantError{auth.ErrGrantInvalid, auth.ErrGrantorDisabled, auth.ErrNoGrantAuthority,
		auth.ErrCapabilityNotHeld, auth.ErrPlatformBusiness, auth.ErrWorkerCapability, auth.ErrSelfBootstrap} {
		if errors.Is(err, e) {
			return strings.ReplaceAll(string(e), " ", "_")
		}
	}
	return "refused"
}

func (s *Service) createGrant(c *api.Call) error {
	if err := requireGrantAuthority(c); err != nil {
		return err
	}
	var req GrantRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	g, err := s.checkGrantRequest(c, req)
	if err != nil {
		return err
	}
	grantee, err := getPrincipal(c.Context(), s.db.Reader(), req.PrincipalID)
	if errors.Is(err, errNoRow) {
		return api.Invalid("/principal_id", "no such principal")
	}
	if err != nil {
		return err
	}
	path := "/scope"
	if g.Role != "" {
		path = "/role"
	} else if len(g.Capabilities) > 0 {
		path = "/capabilities"
	}
	if err := s.delegate(c, grantee, g, path); err != nil {
		return err
	}
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := insertGrant(c.Context(), tx, storedGrant{Grant: g}); err != nil {
			return nil, err
		}
		return &api.Result{Body: g.ID}, nil
	}, s.Invalidate)
}

// checkGrantRequest validates the body of a grant and that its scope
// exists, and builds the grant.
func (s *Service) checkGrantRequest(c *api.Call, req GrantRequest) (auth.Grant, error) {
	var g auth.Grant
	if !auth.IsCanonicalUUID(req.PrincipalID) {
		return g, api.Invalid("/principal_id", "must be a canonical lowercase UUID")
	}
	sc := req.Scope
	for _, f := range []struct{ path, v string }{
		{"/scope/tenant", sc.Tenant}, {"/scope/project", sc.Project}, {"/scope/environment", sc.Environment}, {"/scope/resource", sc.Resource},
	} {
		if f.v != "" && !auth.IsCanonicalUUID(f.v) {
			return g, api.Invalid(f.path, "must be a canonical lowercase UUID")
		}
	}
	if sc.Project != "" && sc.Tenant == "" {
		return g, api.Invalid("/scope/tenant", "a project scope needs its tenant")
	}
	if (sc.Environment != "" || sc.Resource != "") && sc.Project == "" {
		return g, api.Invalid("/scope/project", "environment and resource scopes need their project")
	}
	if req.Role != "" {
		if _, ok := auth.RoleCapabilities(auth.Role(req.Role)); !ok {
			return g, api.Invalid("/role", "unknown role %q", req.Role)
		}
	}
	caps := make([]auth.Capability, 0, len(req.Capabilities))
	for i, name := range req.Capabilities {
		cp := auth.Capability(name)
		if !cp.Valid() {
			return g, api.Invalid(fmt.Sprintf("/capabilities/%d", i), "unknown capability %q", name)
		}
		caps = append(caps, cp)
	}
	if req.Role == "" && len(caps) == 0 {
		return g, api.Invalid("/role", "a grant needs a role or at least one capability")
	}
	ctx, q := c.Context(), s.db.Reader()
	if sc.Tenant != "" {
		if _, err := getTenant(ctx, q, sc.Tenant); err != nil {
			return g, missing(err, "/scope/tenant", "tenant")
		}
	}
	if sc.Project != "" {
		if _, err := getProject(ctx, q, sc.Tenant, sc.Project); err != nil {
			return g, missing(err, "/scope/project", "project in that tenant")
		}
	}
	if sc.Environment != "" {
		if _, err := getEnvironment(ctx, q, sc.Tenant, sc.Project, sc.Environment); err != nil {
			return g, missing(err, "/scope/environment", "environment in that project")
		}
	}
	return auth.Grant{ID: newID(), PrincipalID: req.PrincipalID, Scope: sc.auth(), Role: auth.Role(req.Role),
		Capabilities: normalizeCaps(caps), GrantedBy: c.Caller.Principal.ID, CreatedAt: s.nowMS()}, nil
}

func missing(err error, path, what string) error {
	if errors.Is(err, errNoRow) {
		return api.Invalid(path, "no such %s", what)
	}
	return err
}

func (s *Service) revokeGrant(c *api.Call) error {
	id, err := c.UUIDParam("grant", "grant")
	if err != nil {
		return err
	}
	g, err := getGrant(c.Context(), s.db.Reader(), id)
	if err != nil {
		return notFound(err, "grant")
	}
	grantee, err := getPrincipal(c.Context(), s.db.Reader(), g.PrincipalID)
	if err != nil {
		return err
	}
	err = auth.CheckRevocation(c.Caller.Grants, c.Caller.Principal, g.Grant)
	d := api.Decision{Action: api.ActionRevoke, Capability: auth.CapGrantManage, Scope: g.Scope, Allowed: err == nil, Reason: "allowed", GrantID: g.ID}
	if err != nil {
		d.Reason = grantReason(err)
	}
	c.Record(d)
	if err != nil {
		return api.Forbidden("%s", strings.TrimPrefix(err.Error(), "auth: grant: "))
	}
	by, now := c.Caller.Principal.ID, s.nowMS()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := revokeGrant(c.Context(), tx, id, by, now); err != nil {
			return nil, err
		}
		g, err := getGrant(c.Context(), tx, id)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: g.view(auth.PrincipalKind(grantee.Kind))}, nil
	}, s.Invalidate)
}

func (s *Service) listGrants(c *api.Call) error {
	tenant := c.Params.ByName("tenant")
	var f grantFilter
	var err error
	if f.Principal, err = c.Query("principal_id"); err != nil {
		return err
	}
	if f.Principal != "" && !auth.IsCanonicalUUID(f.Principal) {
		return api.InvalidParameter(api.CodeFilter, "principal_id", "principal_id must be a canonical lowercase UUID")
	}
	rev, err := c.Query("include_revoked")
	if err != nil {
		return err
	}
	switch rev {
	case "", "false":
	case "true":
		f.IncludeRevoked = true
	default:
		return api.InvalidParameter(api.CodeFilter, "include_revoked", "include_revoked must be true or false")
	}
	q, err := c.PageQuery("grants", map[string]string{"principal_id": f.Principal, "include_revoked": fmt.Sprint(f.IncludeRevoked)})
	if err != nil {
		return err
	}
	ctx, db := c.Context(), s.db.Reader()
	if _, err := getTenant(ctx, db, tenant); err != nil {
		return notFound(err, "tenant")
	}
	rows, err := listTenantGrants(ctx, db, tenant, f, q.After, q.Fetch())
	if err != nil {
		return err
	}
	kinds := map[string]string{}
	views := make([]Grant, len(rows))
	for i, g := range rows {
		kind, ok := kinds[g.PrincipalID]
		if !ok {
			p, err := getPrincipal(ctx, db, g.PrincipalID)
			if err != nil {
				return err
			}
			kind, kinds[g.PrincipalID] = p.Kind, p.Kind
		}
		views[i] = g.view(auth.PrincipalKind(kind))
	}
	page, err := api.MakePage(q, views, func(g Grant) string { return g.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

func (s *Service) createPrincipal(c *api.Call) error {
	if err := requireGrantAuthority(c); err != nil {
		return err
	}
	var req CreatePrincipalRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if !auth.PrincipalKind(req.Kind).Valid() {
		return api.Invalid("/kind", "must be human, application or worker")
	}
	issuer, ok := s.linkableIssuer(req.Issuer)
	if !ok {
		return api.Invalid("/issuer", "not the issuer of a configured identity provider")
	}
	if err := checkSubject(req.Subject); err != nil {
		return api.Invalid("/subject", "subject %v", err)
	}
	name := ""
	if req.Name != "" {
		n, err := checkName(req.Name)
		if err != nil {
			return api.Invalid("/name", "name %v", err)
		}
		name = n
	}
	by, now := c.Caller.Principal.ID, s.nowMS()
	c.Record(api.Decision{Action: api.ActionAdminister, Allowed: true, Reason: "link_sign_in"})
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if old, err := principalBySubject(c.Context(), tx, issuer, req.Subject); err == nil {
			return nil, api.Conflict(api.CodeConflict, "that sign-in is already linked to principal %s", old.ID)
		} else if !errors.Is(err, errNoRow) {
			return nil, err
		}
		p := Principal{ID: newID(), Kind: req.Kind, Issuer: issuer, Subject: req.Subject, Name: name, Revision: 1, CreatedAt: now, UpdatedAt: now}
		if err := insertPrincipal(c.Context(), tx, p, by); err != nil {
			return nil, err
		}
		return &api.Result{Body: p, Revision: p.Revision, Location: "/admin/principals/" + p.ID}, nil
	}, s.Invalidate)
}

func checkSubject(sub string) error {
	switch {
	case sub == "":
		return fmt.Errorf("must not be empty")
	case len(sub) > maxSubjectLen:
		return fmt.Errorf("must have at most %d bytes", maxSubjectLen)
	}
	for _, r := range sub {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("must be printable UTF-8")
		}
	}
	return nil
}

func (s *Service) listPrincipals(c *api.Call) error {
	if err := requireGrantAuthority(c); err != nil {
		return err
	}
	var f principalFilter
	var err error
	if f.Kind, err = c.Query("kind"); err != nil {
		return err
	}
	if f.Kind != "" && !auth.PrincipalKind(f.Kind).Valid() {
		return api.InvalidParameter(api.CodeFilter, "kind", "kind must be human, application or worker")
	}
	if f.Issuer, err = c.Query("issuer"); err != nil {
		return err
	}
	if f.Issuer != "" {
		if iss, ok := s.linkableIssuer(f.Issuer); ok {
			f.Issuer = iss
		}
	}
	if f.Subject, err = c.Query("subject"); err != nil {
		return err
	}
	q, err := c.PageQuery("principals", map[string]string{"kind": f.Kind, "issuer": f.Issuer, "subject": f.Subject})
	if err != nil {
		return err
	}
	rows, err := listPrincipals(c.Context(), s.db.Reader(), f, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(p Principal) string { return p.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

func (s *Service) getPrincipal(c *api.Call) error {
	id, err := c.UUIDParam("principal", "principal")
	if err != nil {
		return err
	}
	if id != c.Caller.Principal.ID {
		if err := requireGrantAuthority(c); err != nil {
			return err
		}
	}
	p, err := getPrincipal(c.Context(), s.db.Reader(), id)
	if err != nil {
		return notFound(err, "principal")
	}
	return c.Respond(&api.Result{Body: p, Revision: p.Revision})
}

func (s *Service) setDisabled(disabled bool) api.HandlerFunc {
	return func(c *api.Call) error {
		id, err := c.UUIDParam("principal", "principal")
		if err != nil {
			return err
		}
		if err := requirePlatformAdmin(c); err != nil {
			return err
		}
		want, now := c.IfMatch(), s.nowMS()
		return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
			p, err := getPrincipal(c.Context(), tx, id)
			if err != nil {
				return nil, notFound(err, "principal")
			}
			if err := api.CheckRevision(want, p.Revision); err != nil {
				return nil, err
			}
			if p.Issuer == OwnerIssuer {
				return nil, &api.Error{Code: api.CodeValidation, Message: "the system principal cannot be disabled or enabled"}
			}
			if p.Disabled != disabled {
				if err := setPrincipalDisabled(c.Context(), tx, id, disabled, now); err != nil {
					return nil, err
				}
				if p, err = getPrincipal(c.Context(), tx, id); err != nil {
					return nil, err
				}
			}
			return &api.Result{Body: p, Revision: p.Revision}, nil
		}, s.Invalidate)
	}
}
