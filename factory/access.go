package factory

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// Project is the platform project a run is bound to at creation: the
// tenant and project ids of the platform's scopes (docs/platform-api.md).
// Platform principals read a run only through it (docs/factory-api.md,
// "Access").
type Project struct {
	Tenant  string `json:"tenant" format:"uuid"`
	Project string `json:"project" format:"uuid"`
}

// validate checks the ids' form; whether the project exists is the
// platform's business: only a grant on it gives access.
func (p *Project) validate() error {
	if p == nil {
		return nil
	}
	if _, err := uuid.Parse(p.Tenant); err != nil {
		return fieldErr("project.tenant", "must be a platform tenant id (a UUID), got %s", quoteShort(p.Tenant))
	}
	if _, err := uuid.Parse(p.Project); err != nil {
		return fieldErr("project.project", "must be a platform project id (a UUID), got %s", quoteShort(p.Project))
	}
	return nil
}

// Readers resolves a request that does not carry the owner token to a
// platform principal. The platform verifies the bearer token exactly as for
// its own API and reads the principal's current grants on every request,
// so a revoked grant applies at once; wire/ supplies it.
type Readers interface {
	// CanRead returns whether the principal may read the runs of a project
	// now. Its error is an *Error: EUnauthorized for a missing, forged,
	// expired or unlinked token, EForbidden for a disabled principal.
	CanRead(r *http.Request) (func(Project) bool, error)
}

// accessKey keys the caller's read predicate in a request context; no
// predicate means the owner.
type accessKey struct{}

// principalReader returns the read predicate of a platform principal's
// request, nil for the owner.
func principalReader(ctx context.Context) func(Project) bool {
	f, _ := ctx.Value(accessKey{}).(func(Project) bool)
	return f
}

// authorize admits a request to rt: the owner everywhere, a platform
// principal only on read routes, and on a run's routes only when it may
// read the run's project (else 404, so existence does not leak). It returns
// the request to serve.
func (s *Service) authorize(r *http.Request, rt route, id string) (*http.Request, error) {
	if s.isOwner(r) {
		return r, nil
	}
	if s.readers == nil {
		return nil, errorf(EUnauthorized, "this API needs the owner token: Authorization: Bearer <contents of owner.token>")
	}
	canRead, err := s.readers.CanRead(r)
	if err != nil {
		return nil, err
	}
	if !rt.read {
		return nil, errorf(EForbidden, "only the owner token may change runs; platform principals may only read them")
	}
	if id != "" {
		row, err := s.readRun(r.Context(), id)
		if err != nil {
			return nil, err
		}
		if row.Project == nil || !canRead(*row.Project) {
			return nil, errNotFound("run " + quoteShort(id))
		}
	}
	return r.WithContext(context.WithValue(r.Context(), accessKey{}, canRead)), nil
}
