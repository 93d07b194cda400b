package activation

import (
	"database/sql"
	"errors"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/catalog"
	"github.com/agentbridge/bridge/platform/lang"
)

// create serves POST E/activations (see the route's description).
func (s *Service) create(c *api.Call) error {
	var req Request
	if err := c.Decode(&req); err != nil {
		return err
	}
	defaults, err := checkRequest(&req)
	if err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return nil, err
		}
		v, err := catalog.PublishedVersion(ctx, tx, sc.Project, req.PublishedVersionID)
		if errors.Is(err, catalog.ErrVersionNotFound) {
			return nil, api.Invalid("/published_version_id", "the project has no published version with that id")
		}
		if err != nil {
			return nil, err
		}
		if v.Kind != lang.KindWorkflow {
			return nil, api.Invalid("/published_version_id", "that published version is a %s; only workflow versions are activated", v.Kind)
		}
		if err := checkDefaults(defaults, v.Artifact); err != nil {
			return nil, err
		}
		now := s.timestamp()
		a := Activation{ID: s.newID(), EnvironmentID: sc.Environment, ProjectID: sc.Project, PublishedVersionID: v.ID,
			WorkflowID: v.DefinitionID, WorkflowVersion: v.Version, Digest: v.Digest, InputDefaults: defaults,
			ConnectionBindings: req.ConnectionBindings, Status: StatusActive, Revision: 1, CreatedAt: now, CreatedBy: by}
		if a.ConnectionBindings == nil {
			a.ConnectionBindings = map[string]string{}
		}
		if req.Name != "" {
			a.Name = &req.Name
		}
		if err := s.replace(c, tx, a); err != nil {
			return nil, err
		}
		if err := insertActivation(ctx, tx, sc.Tenant, a); err != nil {
			return nil, err
		}
		return &api.Result{Body: a, Revision: a.Revision, Location: activationPath(sc, a.ID)}, nil
	}, nil)
}

// replace applies the If-Match rule of POST E/activations before next is
// inserted: without an active activation of the workflow no If-Match may
// be sent; with one, If-Match must carry its revision and it is retired
// (replaced by next), which also needs release.retire.
func (s *Service) replace(c *api.Call, tx *sql.Tx, next Activation) error {
	ctx := c.Context()
	prev, err := activeFor(ctx, tx, next.EnvironmentID, next.WorkflowID)
	if errors.Is(err, errNotFound) {
		if c.IfMatch() != 0 {
			return api.StaleRevision(0, "If-Match names a revision, but workflow %s has no active activation in this environment to replace", next.WorkflowID)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if c.IfMatch() == 0 {
		e := api.Conflict(api.CodeConflict, "workflow %s already has active activation %s; send If-Match: %s to replace it",
			next.WorkflowID, prev.ID, api.FormatETag(prev.Revision))
		e.Headers = map[string]string{"ETag": api.FormatETag(prev.Revision)}
		return e
	}
	if err := api.CheckRevision(c.IfMatch(), prev.Revision); err != nil {
		return err
	}
	if err := c.Authorize(auth.CapReleaseRetire, c.PathScope()); err != nil {
		return err
	}
	reason := "replaced by activation " + next.ID
	prev.Status, prev.Revision = StatusRetired, prev.Revision+1
	prev.RetiredAt, prev.RetiredBy, prev.RetirementReason = &next.CreatedAt, &next.CreatedBy, &reason
	return retireActivation(ctx, tx, prev)
}

// retire serves POST E/activations/{identifier}/retire.
func (s *Service) retire(c *api.Call) error {
	var req RetirementRequest
	if err := c.DecodeOptional(&req); err != nil {
		return err
	}
	if err := checkRetirement(&req); err != nil {
		return err
	}
	id, err := c.UUIDParam("identifier", "activation")
	if err != nil {
		return err
	}
	ctx, sc, by := c.Context(), c.PathScope(), c.Caller.Principal.ID
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		if err := requireEnvironment(ctx, tx, sc); err != nil {
			return nil, err
		}
		a, err := getActivation(ctx, tx, sc.Environment, id)
		if errors.Is(err, errNotFound) {
			return nil, api.NotFound("activation")
		}
		if err != nil {
			return nil, err
		}
		if a.Status == StatusRetired {
			return nil, api.Conflict(api.CodeConflict, "the activation is already retired; retirement is final")
		}
		if err := api.CheckRevision(c.IfMatch(), a.Revision); err != nil {
			return nil, err
		}
		now := s.timestamp()
		a.Status, a.Revision, a.RetiredAt, a.RetiredBy = StatusRetired, a.Revision+1, &now, &by
		if req.Reason != "" {
			a.RetirementReason = &req.Reason
		}
		if err := retireActivation(ctx, tx, a); err != nil {
			return nil, err
		}
		return &api.Result{Body: a, Revision: a.Revision}, nil
	}, nil)
}
