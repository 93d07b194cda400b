package client

import (
	"time"
)

// Identity is the body of GET /api/v1/identity.
type Identity struct {
	PrincipalID string `json:"principal_id"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	// Grants are the principal's current grants.
	Grants []Grant `json:"grants"`
	// Workspaces are the tenants, projects and environments the grants
	// reach, in id order. Platform-level grants reach none.
	Workspaces []Workspace `json:"workspaces"`
}

// Grant is the view of a grant.
type Grant struct {
	ID          string `json:"id"`
	PrincipalID string `json:"principal_id"`
	Scope       Scope  `json:"scope"`
	Role        string `json:"role,omitempty"`
	// Capabilities are the ones granted explicitly, besides the role's.
	Capabilities []string `json:"capabilities"`
	// EffectiveCapabilities is what the grant actually confers.
	EffectiveCapabilities []string   `json:"effective_capabilities"`
	GrantedBy             string     `json:"granted_by"`
	CreatedAt             time.Time  `json:"created_at"`
	Revoked               bool       `json:"revoked"`
	RevokedAt             *time.Time `json:"revoked_at"`
}

// Scope is the JSON form of an authorization scope: empty members are
// wider; all empty is the platform (root) scope.
type Scope struct {
	Tenant      string `json:"tenant,omitempty"`
	Project     string `json:"project,omitempty"`
	Environment string `json:"environment,omitempty"`
	Resource    string `json:"resource,omitempty"`
}

// Tenant is an organisation or team: the top of the scope hierarchy.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
}

// Project groups definitions inside a tenant.
type Project struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenant_id"`
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
}

// Environment is where versions are activated and runs execute.
type Environment struct {
	ID        string    `json:"id"`
	TenantID  string    `json:"tenant_id"`
	ProjectID string    `json:"project_id"`
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
}

// Principal is a person, application or worker linked to a sign-in.
type Principal struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Issuer    string    `json:"issuer"`
	Subject   string    `json:"subject"`
	Name      string    `json:"name"`
	Disabled  bool      `json:"disabled"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CreateTenantRequest is the body of POST /admin/tenants.
type CreateTenantRequest struct {
	// display name, 1 to 200 characters
	Name string `json:"name"`
	// AdminPrincipalID, when set, gives that principal the tenant_admin role
	// on the new tenant in the same transaction (tenant bootstrap; never the
	// caller itself).
	AdminPrincipalID string `json:"admin_principal_id,omitempty"`
}

// CreateProjectRequest is the body of POST /api/v1/tenants/{tenant}/projects.
type CreateProjectRequest struct {
	// display name, 1 to 200 characters
	Name string `json:"name"`
}

// CreateEnvironmentRequest is the body of POST .../projects/{project}/environments.
type CreateEnvironmentRequest struct {
	// display name, 1 to 200 characters
	Name string `json:"name"`
}

// GrantRequest is the body of POST /admin/grants.
type GrantRequest struct {
	PrincipalID string `json:"principal_id"`
	// {} is the platform scope
	Scope Scope  `json:"scope"`
	Role  string `json:"role,omitempty"`
	// capabilities added to the role's
	Capabilities []string `json:"capabilities,omitempty"`
}

// CreatePrincipalRequest is the body of POST /admin/principals: it links a
// sign-in (issuer and subject of its tokens) to a new principal. It grants
// nothing.
type CreatePrincipalRequest struct {
	Kind string `json:"kind"`
	// iss of the principal's tokens: a configured provider's issuer, or the built-in provider's
	Issuer string `json:"issuer"`
	// sub of the principal's tokens, 1 to 255 characters
	Subject string `json:"subject"`
	// display name, at most 200 characters
	Name string `json:"name,omitempty"`
}

// Workspace is a tenant the caller can use.
type Workspace struct {
	ID       string             `json:"id"`
	Name     string             `json:"name"`
	Projects []WorkspaceProject `json:"projects"`
}

// WorkspaceProject is a project of a workspace.
type WorkspaceProject struct {
	ID           string                 `json:"id"`
	Name         string                 `json:"name"`
	Environments []WorkspaceEnvironment `json:"environments"`
}

// WorkspaceEnvironment is an environment of a workspace project.
type WorkspaceEnvironment struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ClientConfiguration is the public body of GET /api/v1/client-configuration:
// the server's display name and its sign-in entries, without secrets.
type ClientConfiguration struct {
	DisplayName string        `json:"display_name"`
	SignIn      []SignInEntry `json:"sign_in"`
}

// SignInEntry tells a client how people sign in with one provider: a
// public client with device authorization, or the authorization-code flow
// with PKCE (S256).
type SignInEntry struct {
	ProviderID  string   `json:"provider_id"`
	DisplayName string   `json:"display_name"`
	ClientID    string   `json:"client_id"`
	Scopes      []string `json:"scopes"`
	// Issuer is the provider's issuer; clients read its OIDC discovery
	// document for endpoints not listed here.
	Issuer                      string `json:"issuer"`
	Flow                        string `json:"flow"`
	DeviceAuthorizationEndpoint string `json:"device_authorization_endpoint,omitempty"`
	AuthorizationEndpoint       string `json:"authorization_endpoint,omitempty"`
	TokenEndpoint               string `json:"token_endpoint,omitempty"`
}
