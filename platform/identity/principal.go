package identity

import (
	"time"

	"github.com/agentbridge/bridge/platform/auth"
)

// Issuers of principals that no external provider signs for.
const (
	// LocalIssuer links principals to the built-in identity provider. Its
	// tokens carry the provider's URL as iss, which depends on the services
	// port; principals store this stable name instead, so a port change
	// keeps every local sign-in linked.
	LocalIssuer = "urn:agent-bridge:local-idp"
	// OwnerIssuer and OwnerSubject identify the system principal that the
	// daemon owner token authenticates on the /admin routes.
	OwnerIssuer  = "urn:agent-bridge:owner"
	OwnerSubject = "owner"
	// LocalOperatorSubject is the subject the built-in identity provider
	// issues to the local operator (whoever holds the owner token).
	LocalOperatorSubject = "local-operator"
)

// Principal is a person, application or worker linked to a sign-in.
type Principal struct {
	ID        string    `json:"id" format:"uuid"`
	Kind      string    `json:"kind" enum:"human,application,worker"`
	Issuer    string    `json:"issuer"`
	Subject   string    `json:"subject"`
	Name      string    `json:"name"`
	Disabled  bool      `json:"disabled"`
	Revision  int64     `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (p Principal) auth() auth.Principal {
	return auth.Principal{ID: p.ID, Kind: auth.PrincipalKind(p.Kind), Issuer: p.Issuer, Subject: p.Subject, Disabled: p.Disabled}
}

// CreatePrincipalRequest is the body of POST /admin/principals: it links a
// sign-in (issuer and subject of its tokens) to a new principal. It grants
// nothing.
type CreatePrincipalRequest struct {
	Kind    string `json:"kind" api:"required" enum:"human,application,worker"`
	Issuer  string `json:"issuer" api:"required" doc:"iss of the principal's tokens: a configured provider's issuer, or the built-in provider's"`
	Subject string `json:"subject" api:"required" doc:"sub of the principal's tokens, 1 to 255 characters"`
	Name    string `json:"name,omitempty" doc:"display name, at most 200 characters"`
}

// maxSubjectLen bounds subjects (as the built-in provider does).
const maxSubjectLen = 255
