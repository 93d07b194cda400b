package identity

import (
	"context"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Reasons of refusals that happen after a token verified.
const (
	ReasonNotLinked         = "sign_in_not_linked"
	ReasonPrincipalDisabled = auth.DecisionPrincipalDisabled
	ReasonOwnerToken        = "owner_token"
)

// Authenticate implements api.Authenticator: the bearer token is verified
// offline (auth.Verifier, the same JWKS path for the built-in and external
// providers), its (issuer, subject) resolved to a linked principal, and the
// principal's current grants attached. With acceptOwner, the daemon owner
// token authenticates the built-in system principal instead.
func (s *Service) Authenticate(r *http.Request, acceptOwner bool) (*api.Caller, error) {
	ctx := r.Context()
	// Two Authorization headers are refused before either is looked at:
	// the owner check would read only the first (docs/platform-api.md,
	// "Authentication").
	if _, err := httpx.SingleHeader(r.Header, "Authorization"); err != nil {
		return nil, api.Unauthenticated(string(auth.ReasonMalformed))
	}
	if acceptOwner && s.isOwner != nil && s.isOwner(r) {
		e, err := s.entry(r, subjectKey{OwnerIssuer, OwnerSubject})
		if err != nil {
			return nil, err
		}
		if !e.found || e.principal.Disabled {
			return nil, api.Forbidden("the system principal is unavailable")
		}
		return &api.Caller{Principal: e.principal.auth(), Grants: e.grants, Owner: true}, nil
	}
	tok, err := auth.BearerToken(r)
	if err != nil {
		return nil, api.Unauthenticated(string(auth.ReasonOf(err)))
	}
	if s.verifier == nil {
		return nil, api.Unauthenticated(string(auth.ReasonIssuer))
	}
	claims, err := s.verifier.Verify(ctx, tok)
	if err != nil {
		return nil, api.Unauthenticated(string(auth.ReasonOf(err)))
	}
	e, err := s.entry(r, subjectKey{s.linkIssuer(claims.Issuer), claims.Subject})
	if err != nil {
		return nil, err
	}
	if !e.found {
		return nil, api.Unauthenticated(ReasonNotLinked)
	}
	if e.principal.Disabled {
		return &api.Caller{Principal: e.principal.auth()}, &api.Error{Code: api.CodeForbidden, Message: "the principal is disabled",
			Diagnostics: []api.Diagnostic{{Code: ReasonPrincipalDisabled, Message: "the principal is disabled"}}}
	}
	return &api.Caller{Principal: e.principal.auth(), Grants: e.grants}, nil
}

// linkIssuer maps the built-in provider's URL to LocalIssuer.
func (s *Service) linkIssuer(iss string) string {
	if s.localIssuer != "" && iss == s.localIssuer {
		return LocalIssuer
	}
	return iss
}

func (s *Service) entry(r *http.Request, k subjectKey) (*accessEntry, error) {
	return s.cache.lookup(r.Context(), k, func(ctx context.Context) (*accessEntry, error) {
		return loadEntry(ctx, s.db.Reader(), k)
	})
}

// callerEntry returns the cache entry of an authenticated caller.
func (s *Service) callerEntry(r *http.Request, c *api.Caller) (*accessEntry, error) {
	return s.entry(r, subjectKey{c.Principal.Issuer, c.Principal.Subject})
}
