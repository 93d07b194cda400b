package identity

import (
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
)

// Scope is the JSON form of an authorization scope: empty members are
// wider; all empty is the platform (root) scope.
type Scope struct {
	Tenant      string `json:"tenant,omitempty" format:"uuid"`
	Project     string `json:"project,omitempty" format:"uuid"`
	Environment string `json:"environment,omitempty" format:"uuid"`
	Resource    string `json:"resource,omitempty" format:"uuid"`
}

func (s Scope) auth() auth.Scope {
	return auth.Scope{Tenant: s.Tenant, Project: s.Project, Environment: s.Environment, Resource: s.Resource}
}

func scopeOf(s auth.Scope) Scope {
	return Scope{Tenant: s.Tenant, Project: s.Project, Environment: s.Environment, Resource: s.Resource}
}

// Grant is the view of a grant.
type Grant struct {
	ID          string `json:"id" format:"uuid"`
	PrincipalID string `json:"principal_id" format:"uuid"`
	Scope       Scope  `json:"scope"`
	Role        string `json:"role,omitempty"`
	// Capabilities are the ones granted explicitly, besides the role's.
	Capabilities []string `json:"capabilities"`
	// EffectiveCapabilities is what the grant actually confers.
	EffectiveCapabilities []string   `json:"effective_capabilities"`
	GrantedBy             string     `json:"granted_by" format:"uuid"`
	CreatedAt             time.Time  `json:"created_at"`
	Revoked               bool       `json:"revoked"`
	RevokedAt             *time.Time `json:"revoked_at"`
}

// GrantRequest is the body of POST /admin/grants.
type GrantRequest struct {
	PrincipalID  string   `json:"principal_id" api:"required" format:"uuid"`
	Scope        Scope    `json:"scope" api:"required" doc:"{} is the platform scope"`
	Role         string   `json:"role,omitempty" enum:"viewer,developer,deployer,operator,tenant_admin,platform_admin,worker"`
	Capabilities []string `json:"capabilities,omitempty" doc:"capabilities added to the role's"`
}

// storedGrant is a grant row.
type storedGrant struct {
	auth.Grant
	RevokedAt *time.Time
}

func (g storedGrant) view(kind auth.PrincipalKind) Grant {
	caps := make([]string, len(g.Capabilities))
	for i, c := range g.Capabilities {
		caps[i] = string(c)
	}
	v := Grant{
		ID: g.ID, PrincipalID: g.PrincipalID, Scope: scopeOf(g.Scope), Role: string(g.Role),
		Capabilities: caps, EffectiveCapabilities: effective(g.Grant, kind),
		GrantedBy: g.GrantedBy, CreatedAt: g.CreatedAt, Revoked: g.Revoked, RevokedAt: g.RevokedAt,
	}
	return v
}

// effective lists what g confers on a principal of kind, by asking
// auth.Authorize for each capability (so the view can never disagree with
// the decisions).
func effective(g auth.Grant, kind auth.PrincipalKind) []string {
	out := []string{}
	if g.Revoked {
		return out
	}
	p := auth.Principal{ID: g.PrincipalID, Kind: kind}
	for _, c := range auth.AllCapabilities() {
		if auth.Authorize([]auth.Grant{g}, p, c, g.Scope).Allowed {
			out = append(out, string(c))
		}
	}
	return out
}

func joinCaps(caps []auth.Capability) string {
	s := make([]string, len(caps))
	for i, c := range caps {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}

func splitCaps(s string) []auth.Capability {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]auth.Capability, len(parts))
	for i, p := range parts {
		out[i] = auth.Capability(p)
	}
	return out
}

// normalizeCaps sorts capabilities in spec order and removes duplicates.
func normalizeCaps(caps []auth.Capability) []auth.Capability {
	all := auth.AllCapabilities()
	out := slices.Clone(caps)
	slices.SortFunc(out, func(a, b auth.Capability) int {
		return slices.Index(all, a) - slices.Index(all, b)
	})
	return slices.Compact(out)
}
