package api

import (
	"net/http"
	"time"

	"github.com/agentbridge/bridge/platform/auth"
)

// Caller is the authenticated principal of a request with the grants it
// held when the request was authenticated (loaded fresh or from a cache
// invalidated by every access change, so a revocation applies on the next
// request).
type Caller struct {
	Principal auth.Principal
	// Grants are the principal's unrevoked grants.
	Grants []auth.Grant
	// Owner is true when the daemon owner token authenticated the request
	// (routes with AccessOwnerOrToken only); Principal is then the built-in
	// system principal.
	Owner bool
}

// Authenticator resolves the caller of a request. It returns an *Error: 401
// PF-UNAUTHENTICATED when the token is missing, malformed, expired, issued
// for another API or its sign-in is not linked, 403 PF-FORBIDDEN for a
// disabled principal (returning the resolved caller too, so the refusal is
// recorded with the principal's id). acceptOwner allows the daemon owner
// token.
type Authenticator interface {
	Authenticate(r *http.Request, acceptOwner bool) (*Caller, error)
}

// Decision actions recorded in the access audit.
const (
	ActionAuthenticate = "authenticate" // resolving the caller of a request
	ActionAuthorize    = "authorize"    // a capability check at a scope
	ActionDelegate     = "delegate"     // creating a grant
	ActionRevoke       = "revoke"       // revoking a grant
	ActionAdminister   = "administer"   // changing a principal
)

// Decision is one access decision, recorded with the request id.
type Decision struct {
	At          time.Time
	RequestID   string
	Method      string
	Route       string // the route template, e.g. "/api/v1/tenants/{tenant}/projects"
	PrincipalID string // "" when no principal was resolved
	Action      string
	Capability  auth.Capability // "" when none applies
	Scope       auth.Scope
	Allowed     bool
	Reason      string
	GrantID     string
}

// Auditor records decisions. Record must not block for long and must not
// lose decisions on a clean shutdown.
type Auditor interface {
	Record(Decision)
}
