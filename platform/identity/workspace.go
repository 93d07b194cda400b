package identity

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds the display names of tenants, projects, environments
// and principals (characters).
const MaxNameLen = 200

// Tenant is an organisation or team: the top of the scope hierarchy.
type Tenant struct {
	ID        string    `json:"id" format:"uuid"`
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
}

// Project groups definitions inside a tenant.
type Project struct {
	ID        string    `json:"id" format:"uuid"`
	TenantID  string    `json:"tenant_id" format:"uuid"`
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
}

// Environment is where versions are activated and runs execute.
type Environment struct {
	ID        string    `json:"id" format:"uuid"`
	TenantID  string    `json:"tenant_id" format:"uuid"`
	ProjectID string    `json:"project_id" format:"uuid"`
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateTenantRequest is the body of POST /admin/tenants.
type CreateTenantRequest struct {
	Name string `json:"name" api:"required" doc:"display name, 1 to 200 characters"`
	// AdminPrincipalID, when set, gives that principal the tenant_admin role
	// on the new tenant in the same transaction (tenant bootstrap; never the
	// caller itself).
	AdminPrincipalID string `json:"admin_principal_id,omitempty" format:"uuid" doc:"principal to make the tenant's first administrator (not the caller)"`
}

// CreateProjectRequest is the body of POST /api/v1/tenants/{tenant}/projects.
type CreateProjectRequest struct {
	Name string `json:"name" api:"required" doc:"display name, 1 to 200 characters"`
}

// CreateEnvironmentRequest is the body of POST .../projects/{project}/environments.
type CreateEnvironmentRequest struct {
	Name string `json:"name" api:"required" doc:"display name, 1 to 200 characters"`
}

// checkName validates a display name: 1 to MaxNameLen characters after
// trimming, valid UTF-8, no control characters. It returns the trimmed name.
func checkName(name string) (string, error) {
	n := strings.TrimSpace(name)
	switch {
	case !utf8.ValidString(name):
		return "", fmt.Errorf("must be valid UTF-8")
	case n == "":
		return "", fmt.Errorf("must not be blank")
	case utf8.RuneCountInString(n) > MaxNameLen:
		return "", fmt.Errorf("must have at most %d characters", MaxNameLen)
	}
	for _, r := range n {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("must not contain control characters")
		}
	}
	return n, nil
}
