package identity

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Route tags of the OpenAPI document.
const (
	tagIdentity     = "Identity"
	tagProvisioning = "Provisioning"
	tagAccess       = "Access administration"
)

// Register adds the identity routes to a. Capabilities of the provisioning
// routes (docs/platform-api.md leaves them to the implementation): creating a project
// needs grant.manage on its tenant, creating an environment grant.manage
// on its project (tenant administration); reading needs status.read.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	for _, rt := range []api.Route{
		{Method: http.MethodGet, Path: "/client-configuration", Access: api.AccessPublic, Handler: s.getClientConfiguration,
			OperationID: "getClientConfiguration", Tag: tagIdentity, Summary: "Public sign-in settings",
			Description: "The server's display name and its sign-in entries (provider, public client, scopes, flow), without secrets.",
			Response:    ClientConfiguration{}},
		{Method: http.MethodGet, Path: "/identity", Handler: s.getIdentity,
			OperationID: "getIdentity", Tag: tagIdentity, Summary: "The caller's identity, grants and workspaces",
			Description: "Needs only a valid token linked to an enabled principal.", Response: Identity{}},

		{Method: http.MethodPost, Path: "/admin/tenants", Layout: api.Root, Access: api.AccessOwnerOrToken, Idempotency: api.PolicyOptional,
			Handler: s.createTenant, OperationID: "createTenant", Tag: tagProvisioning, Summary: "Create a tenant",
			Description: "Needs platform administration (grant.admin). With admin_principal_id, that principal (never the caller) becomes the tenant's administrator in the same transaction.",
			Request:     CreateTenantRequest{}, Response: Tenant{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: "/tenants/{tenant}", Capability: auth.CapStatusRead, Handler: s.getTenant,
			OperationID: "getTenant", Tag: tagProvisioning, Summary: "Read a tenant", Response: Tenant{}, ETag: true},
		{Method: http.MethodPost, Path: "/tenants/{tenant}/projects", Capability: auth.CapGrantManage, Idempotency: api.PolicyOptional,
			Handler: s.createProject, OperationID: "createProject", Tag: tagProvisioning, Summary: "Create a project",
			Request: CreateProjectRequest{}, Response: Project{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: "/tenants/{tenant}/projects", Capability: auth.CapStatusRead, Page: true, Handler: s.listProjects,
			OperationID: "listProjects", Tag: tagProvisioning, Summary: "List the tenant's projects", Response: api.Page[Project]{}},
		{Method: http.MethodGet, Path: "/tenants/{tenant}/projects/{project}", Capability: auth.CapStatusRead, Handler: s.getProject,
			OperationID: "getProject", Tag: tagProvisioning, Summary: "Read a project", Response: Project{}, ETag: true},
		{Method: http.MethodPost, Path: "/tenants/{tenant}/projects/{project}/environments", Capability: auth.CapGrantManage, Idempotency: api.PolicyOptional,
			Handler: s.createEnvironment, OperationID: "createEnvironment", Tag: tagProvisioning, Summary: "Create an environment",
			Request: CreateEnvironmentRequest{}, Response: Environment{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: "/tenants/{tenant}/projects/{project}/environments", Capability: auth.CapStatusRead, Page: true,
			Handler: s.listEnvironments, OperationID: "listEnvironments", Tag: tagProvisioning, Summary: "List the project's environments",
			Response: api.Page[Environment]{}},
		{Method: http.MethodGet, Path: "/tenants/{tenant}/projects/{project}/environments/{environment}", Capability: auth.CapStatusRead,
			Handler: s.getEnvironment, OperationID: "getEnvironment", Tag: tagProvisioning, Summary: "Read an environment",
			Response: Environment{}, ETag: true},

		{Method: http.MethodPost, Path: "/admin/grants", Layout: api.Root, Access: api.AccessOwnerOrToken, Idempotency: api.PolicyOptional,
			Handler: s.createGrant, OperationID: "createGrant", Tag: tagAccess, Summary: "Grant a role or capabilities at a scope",
			Description: "Needs grant.admin (platform-level grants, tenant bootstrap) or grant.manage at a scope containing the grant, and the caller must hold every delegated capability there: grants cannot escalate. Answers the new grant's id.",
			Request:     GrantRequest{}, Response: ""},
		{Method: http.MethodDelete, Path: "/admin/grants/{grant}", Layout: api.Root, Access: api.AccessOwnerOrToken,
			Handler: s.revokeGrant, OperationID: "revokeGrant", Tag: tagAccess, Summary: "Revoke a grant",
			Description: "Needs the authority that could have created it. Applies on the grantee's next request. Revoking a revoked grant answers it unchanged.",
			Response:    Grant{}},
		{Method: http.MethodGet, Path: "/tenants/{tenant}/grants", Capability: auth.CapGrantManage, Page: true, Handler: s.listGrants,
			OperationID: "listGrants", Tag: tagAccess, Summary: "List the grants inside a tenant",
			Query: []api.Param{
				{Name: "principal_id", Description: "only this principal's grants"},
				{Name: "include_revoked", Type: "boolean", Description: "also list revoked grants (default false)"},
			},
			Response: api.Page[Grant]{}},
		{Method: http.MethodPost, Path: "/admin/principals", Layout: api.Root, Access: api.AccessOwnerOrToken, Idempotency: api.PolicyOptional,
			Handler: s.createPrincipal, OperationID: "createPrincipal", Tag: tagAccess, Summary: "Link a sign-in to a new principal",
			Description: "Needs grant.admin or grant.manage. The principal holds nothing until granted.",
			Request:     CreatePrincipalRequest{}, Response: Principal{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: "/admin/principals", Layout: api.Root, Access: api.AccessOwnerOrToken, Page: true, Handler: s.listPrincipals,
			OperationID: "listPrincipals", Tag: tagAccess, Summary: "List principals",
			Description: "Needs grant.admin or grant.manage.",
			Query: []api.Param{
				{Name: "kind", Description: "human, application or worker"},
				{Name: "issuer", Description: "issuer of the sign-in"},
				{Name: "subject", Description: "subject of the sign-in"},
			},
			Response: api.Page[Principal]{}},
		{Method: http.MethodGet, Path: "/admin/principals/{principal}", Layout: api.Root, Access: api.AccessOwnerOrToken, Handler: s.getPrincipal,
			OperationID: "getPrincipal", Tag: tagAccess, Summary: "Read a principal",
			Description: "The principal itself, or a holder of grant.admin or grant.manage.", Response: Principal{}, ETag: true},
		{Method: http.MethodPost, Path: "/admin/principals/{principal}/disable", Layout: api.Root, Access: api.AccessOwnerOrToken, IfMatch: api.PolicyOptional,
			Handler: s.setDisabled(true), OperationID: "disablePrincipal", Tag: tagAccess, Summary: "Disable a principal",
			Description: "Needs grant.admin. Applies on the principal's next request whatever its token's expiry.", Response: Principal{}, ETag: true},
		{Method: http.MethodPost, Path: "/admin/principals/{principal}/enable", Layout: api.Root, Access: api.AccessOwnerOrToken, IfMatch: api.PolicyOptional,
			Handler: s.setDisabled(false), OperationID: "enablePrincipal", Tag: tagAccess, Summary: "Enable a principal",
			Description: "Needs grant.admin.", Response: Principal{}, ETag: true},
	} {
		a.Handle(r, rt)
	}
}
