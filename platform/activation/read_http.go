package activation

import (
	"errors"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/catalog"
)

// list serves GET E/activations: the environment's activations in id
// order, optionally of one status.
func (s *Service) list(c *api.Call) error {
	status, err := c.Query("status")
	if err != nil {
		return err
	}
	if status != "" && status != StatusActive && status != StatusRetired {
		return api.InvalidParameter(api.CodeValidation, "status", "status must be %s or %s", StatusActive, StatusRetired)
	}
	q, err := c.PageQuery("activations", map[string]string{"status": status})
	if err != nil {
		return err
	}
	ctx, r, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, r, sc); err != nil {
		return err
	}
	rows, err := listActivations(ctx, r, sc.Environment, status, q.After, q.Fetch())
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, rows, func(a Activation) string { return a.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// read loads the activation named by the path in the path's environment.
func (s *Service) read(c *api.Call) (Activation, error) {
	id, err := c.UUIDParam("identifier", "activation")
	if err != nil {
		return Activation{}, err
	}
	ctx, r, sc := c.Context(), s.db.Reader(), c.PathScope()
	if err := requireEnvironment(ctx, r, sc); err != nil {
		return Activation{}, err
	}
	a, err := getActivation(ctx, r, sc.Environment, id)
	if errors.Is(err, errNotFound) {
		return a, api.NotFound("activation")
	}
	return a, err
}

// get serves GET E/activations/{identifier}; the ETag is the revision.
func (s *Service) get(c *api.Call) error {
	a, err := s.read(c)
	if err != nil {
		return err
	}
	return c.Respond(&api.Result{Body: a, Revision: a.Revision})
}

// export serves GET E/activations/{identifier}/export: the activation with
// the published workflow version it binds.
func (s *Service) export(c *api.Call) error {
	a, err := s.read(c)
	if err != nil {
		return err
	}
	v, err := catalog.PublishedVersion(c.Context(), s.db.Reader(), a.ProjectID, a.PublishedVersionID)
	if err != nil {
		// Published versions are never deleted, so a miss is an internal error.
		return err
	}
	return c.OK(Export{
		Activation: a,
		Workflow: ExportWorkflow{PublishedVersionID: v.ID, ID: v.DefinitionID, Version: v.Version, Digest: v.Digest,
			Artifact: v.Artifact, Source: v.Source, Format: v.Format, CatalogDigest: v.CatalogDigest},
		ExportedAt: s.timestamp().Format(exportTimeLayout),
	})
}
