package auth

import (
	"errors"
	"fmt"
	"time"
)

// Scope names a node of the hierarchy tenant > project > environment, or a
// resource inside a project or environment. Empty fields are wider: the
// zero Scope is the platform (root) scope. Identifiers are canonical
// lowercase UUID strings.
type Scope struct {
	Tenant      string
	Project     string
	Environment string
	Resource    string
}

// IsRoot reports whether s is the platform scope.
func (s Scope) IsRoot() bool { return s == Scope{} }

// wellFormed checks the hierarchy shape only (cheap, used on every
// authorization): a project needs its tenant, an environment its project,
// a resource at least its project.
func (s Scope) wellFormed() bool {
	if s.Project != "" && s.Tenant == "" {
		return false
	}
	if s.Environment != "" && s.Project == "" {
		return false
	}
	if s.Resource != "" && s.Project == "" {
		return false
	}
	return true
}

// Validate checks the shape and that every identifier is a canonical UUID.
func (s Scope) Validate() error {
	if !s.wellFormed() {
		return errors.New("auth: scope: project needs a tenant, environment and resource need a project")
	}
	for _, f := range [...]struct{ name, v string }{
		{"tenant", s.Tenant}, {"project", s.Project}, {"environment", s.Environment}, {"resource", s.Resource},
	} {
		if f.v == "" {
			continue
		}
		if !isCanonicalUUID(f.v) {
			return fmt.Errorf("auth: scope: %s is not a canonical UUID", f.name)
		}
	}
	return nil
}

// IsCanonicalUUID reports whether s is a UUID in the canonical lowercase
// 8-4-4-4-12 form that scopes use (path parameters are checked with it).
func IsCanonicalUUID(s string) bool { return isCanonicalUUID(s) }

// isCanonicalUUID accepts only the lowercase 8-4-4-4-12 form, so equal
// identifiers are always equal strings. It does not allocate: Validate runs
// on every authorization.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// Contains reports whether inner lies within outer: every level outer names
// must be named identically by inner. Malformed scopes contain nothing and
// are contained in nothing.
func Contains(outer, inner Scope) bool {
	if !outer.wellFormed() || !inner.wellFormed() {
		return false
	}
	return (outer.Tenant == "" || outer.Tenant == inner.Tenant) &&
		(outer.Project == "" || outer.Project == inner.Project) &&
		(outer.Environment == "" || outer.Environment == inner.Environment) &&
		(outer.Resource == "" || outer.Resource == inner.Resource)
}

// PrincipalKind is the kind of a platform principal.
type PrincipalKind string

// Principal kinds (docs/platform-api.md, Identity).
const (
	KindHuman       PrincipalKind = "human"
	KindApplication PrincipalKind = "application"
	KindWorker      PrincipalKind = "worker"
)

// Valid reports whether k is a known kind.
func (k PrincipalKind) Valid() bool {
	return k == KindHuman || k == KindApplication || k == KindWorker
}

// Principal is a person, application or worker, linked to a sign-in by
// (Issuer, Subject) of its verified token.
type Principal struct {
	ID       string
	Kind     PrincipalKind
	Issuer   string
	Subject  string
	Disabled bool
}

// LinkedTo reports whether verified claims belong to p's sign-in: the same
// issuer and subject. The caller still checks Disabled (Authorize does).
func (p Principal) LinkedTo(c *Claims) bool {
	return c != nil && p.Issuer != "" && p.Subject != "" && p.Issuer == c.Issuer && p.Subject == c.Subject
}

// Grant gives a principal a role and/or explicit capabilities at a scope.
type Grant struct {
	ID           string
	PrincipalID  string
	Scope        Scope
	Role         Role         // optional
	Capabilities []Capability // optional, added to the role's
	GrantedBy    string
	CreatedAt    time.Time
	Revoked      bool
}

// CapabilitySet returns the grant's capabilities (role bundle plus explicit
// ones). Unknown roles or capabilities are an error.
func (g Grant) CapabilitySet() (CapabilitySet, error) {
	var s CapabilitySet
	if g.Role != "" {
		rs, ok := RoleCapabilities(g.Role)
		if !ok {
			return 0, fmt.Errorf("auth: unknown role %q", g.Role)
		}
		s = rs
	}
	extra, err := NewCapabilitySet(g.Capabilities...)
	if err != nil {
		return 0, err
	}
	return s | extra, nil
}

// effectiveCaps is what a stored grant can actually confer on p. It fails
// closed: unknown roles or capabilities confer nothing, a root-scope grant
// confers only platform capabilities, a scoped grant never confers them, and
// a worker principal never gets more than workerCaps, even if such a grant
// was stored by mistake.
func effectiveCaps(g *Grant, kind PrincipalKind) CapabilitySet {
	s, err := g.CapabilitySet()
	if err != nil {
		return 0
	}
	if g.Scope.IsRoot() {
		s &= platformCaps
	} else {
		s &= businessCaps
	}
	if kind == KindWorker {
		s &= workerCaps
	}
	return s
}

// Decision reasons.
const (
	DecisionAllowed           = "allowed"
	DecisionPrincipalDisabled = "principal_disabled"
	DecisionPrincipalInvalid  = "principal_invalid"
	DecisionUnknownCapability = "unknown_capability"
	DecisionInvalidScope      = "invalid_scope"
	DecisionNoMatchingGrant   = "no_matching_grant"
)

// Decision is the outcome of Authorize.
type Decision struct {
	Allowed bool
	Reason  string
	// GrantID is the first grant (in input order) that allowed the request.
	GrantID string
}

// Authorize decides whether principal may use capability c at target. It is
// allowed only by an unrevoked grant of that principal whose scope contains
// target and whose effective capabilities include c. A disabled principal
// is always denied. grants may contain other principals' grants; they are
// ignored.
func Authorize(grants []Grant, principal Principal, c Capability, target Scope) Decision {
	if principal.Disabled {
		return Decision{Reason: DecisionPrincipalDisabled}
	}
	if principal.ID == "" || !principal.Kind.Valid() {
		return Decision{Reason: DecisionPrincipalInvalid}
	}
	if !c.Valid() {
		return Decision{Reason: DecisionUnknownCapability}
	}
	if target.Validate() != nil {
		return Decision{Reason: DecisionInvalidScope}
	}
	for i := range grants {
		g := &grants[i]
		if g.Revoked || g.PrincipalID != principal.ID || !Contains(g.Scope, target) {
			continue
		}
		if effectiveCaps(g, principal.Kind).Has(c) {
			return Decision{Allowed: true, Reason: DecisionAllowed, GrantID: g.ID}
		}
	}
	return Decision{Reason: DecisionNoMatchingGrant}
}

// AuthorizePlatformAdmin decides platform administration (tenant
// provisioning, POST /admin/tenants): grant.admin at the root scope.
func AuthorizePlatformAdmin(grants []Grant, principal Principal) Decision {
	return Authorize(grants, principal, CapGrantAdmin, Scope{})
}

// GrantError is returned by ValidateGrant, CheckDelegation and
// CheckRevocation; match with errors.Is.
type GrantError string

func (e GrantError) Error() string { return "auth: grant: " + string(e) }

// Grant errors.
const (
	ErrGrantInvalid      GrantError = "invalid grant"
	ErrGrantorDisabled   GrantError = "grantor is disabled"
	ErrNoGrantAuthority  GrantError = "grantor does not administer grants at that scope"
	ErrCapabilityNotHeld GrantError = "grantor does not hold a delegated capability at that scope"
	ErrPlatformBusiness  GrantError = "platform-level grants carry no business capability, and grant.admin exists only at the platform scope"
	ErrWorkerCapability  GrantError = "worker principals can only hold worker capabilities"
	ErrSelfBootstrap     GrantError = "a platform administrator cannot bootstrap itself into a tenant"
)

// ValidateGrant checks a grant on its own, independent of who creates it:
// well-formed scope, known role and capabilities, at least one capability,
// platform capabilities exactly at the root scope, and worker principals
// limited to worker capabilities.
func ValidateGrant(g Grant, grantee Principal) error {
	if g.PrincipalID == "" || g.PrincipalID != grantee.ID {
		return fmt.Errorf("%w: grantee does not match the grant's principal", ErrGrantInvalid)
	}
	if !grantee.Kind.Valid() {
		return fmt.Errorf("%w: unknown principal kind", ErrGrantInvalid)
	}
	if err := g.Scope.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrGrantInvalid, err)
	}
	set, err := g.CapabilitySet()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGrantInvalid, err)
	}
	if set == 0 {
		return fmt.Errorf("%w: no capability", ErrGrantInvalid)
	}
	if g.Scope.IsRoot() {
		if !platformCaps.ContainsAll(set) {
			return ErrPlatformBusiness
		}
	} else if set&platformCaps != 0 {
		return ErrPlatformBusiness
	}
	if grantee.Kind == KindWorker && !workerCaps.ContainsAll(set) {
		return fmt.Errorf("%w: refused %s", ErrWorkerCapability, (set &^ workerCaps).String())
	}
	return nil
}

// CheckDelegation decides whether grantor (holding grantorGrants) may create
// g for grantee. Grants cannot escalate:
//   - a platform-level (root) grant needs grant.admin;
//   - any other grant needs grant.manage at a scope containing g.Scope, and
//     the grantor must itself hold every capability of g at g.Scope;
//   - worker provisioning: worker capabilities (task.claim) are held by no
//     human role, so grant.manage at the scope suffices to give them to a
//     worker principal, which can never receive anything else;
//   - tenant bootstrap, so a new tenant can get its first administrator: a
//     grant.admin holder may give another principal exactly the
//     tenant_admin role on a whole tenant. It cannot give itself one, so
//     platform administration never turns into business access.
func CheckDelegation(grantorGrants []Grant, grantor Principal, grantee Principal, g Grant) error {
	if err := ValidateGrant(g, grantee); err != nil {
		return err
	}
	if grantor.Disabled {
		return ErrGrantorDisabled
	}
	if g.Scope.IsRoot() {
		if !AuthorizePlatformAdmin(grantorGrants, grantor).Allowed {
			return fmt.Errorf("%w: platform-level grants need grant.admin", ErrNoGrantAuthority)
		}
		return nil
	}
	if isTenantBootstrap(g) && AuthorizePlatformAdmin(grantorGrants, grantor).Allowed {
		if grantee.ID == grantor.ID {
			return ErrSelfBootstrap
		}
		return nil
	}
	if !Authorize(grantorGrants, grantor, CapGrantManage, g.Scope).Allowed {
		return fmt.Errorf("%w: grant.manage needed", ErrNoGrantAuthority)
	}
	set, _ := g.CapabilitySet() // validated above
	if grantee.Kind == KindWorker {
		// Worker provisioning: worker capabilities are deliberately held by
		// no human role (a person claiming tasks would receive worker
		// credential leases), so grant.manage alone suffices to give them
		// to a worker principal. ValidateGrant already limited set to them.
		set &^= workerCaps
	}
	for _, c := range set.List() {
		if !Authorize(grantorGrants, grantor, c, g.Scope).Allowed {
			return fmt.Errorf("%w: %s", ErrCapabilityNotHeld, c)
		}
	}
	return nil
}

// CheckRevocation decides whether grantor may revoke g: it needs the
// authority that could have created it (grant.admin for platform-level and
// tenant bootstrap grants, grant.manage at a scope containing g.Scope for
// the others) but, unlike delegation, not the capabilities themselves, so
// an administrator can always remove access inside its scope.
func CheckRevocation(grantorGrants []Grant, grantor Principal, g Grant) error {
	if grantor.Disabled {
		return ErrGrantorDisabled
	}
	if g.Scope.IsRoot() || isTenantBootstrap(g) {
		if AuthorizePlatformAdmin(grantorGrants, grantor).Allowed {
			return nil
		}
		if g.Scope.IsRoot() {
			return fmt.Errorf("%w: platform-level grants need grant.admin", ErrNoGrantAuthority)
		}
	}
	if !Authorize(grantorGrants, grantor, CapGrantManage, g.Scope).Allowed {
		return fmt.Errorf("%w: grant.manage needed", ErrNoGrantAuthority)
	}
	return nil
}

// isTenantBootstrap reports a grant of exactly the tenant_admin role on a
// whole tenant.
func isTenantBootstrap(g Grant) bool {
	return g.Role == RoleTenantAdmin && len(g.Capabilities) == 0 &&
		g.Scope.Tenant != "" && g.Scope.Project == "" && g.Scope.Environment == "" && g.Scope.Resource == ""
}
