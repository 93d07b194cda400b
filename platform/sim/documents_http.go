package sim

import (
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

const (
	tagDocuments = "Editor documents"
	documentP    = projectBase + "/drafts/{identifier}/studio/{kind}"
	// maxDocumentBody lets a save over the document limits be read and
	// answered 413 PF-STUDIO-DOCUMENT-SIZE (larger bodies: 413
	// PF-REQUEST-TOO-LARGE).
	maxDocumentBody = 2 << 20
)

func (s *Service) documentRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodGet, Path: documentP, Capability: auth.CapCatalogRead, Handler: s.getDocumentRoute,
			OperationID: "getEditorDocument", Tag: tagDocuments, Summary: "Read a draft's canvas or test-data document",
			Response: Document{}, ETag: true},
		{Method: http.MethodPut, Path: documentP, Capability: auth.CapDefinitionWrite, IfMatch: api.PolicyOptional, MaxBody: maxDocumentBody,
			Handler: s.saveDocumentRoute, OperationID: "saveEditorDocument", Tag: tagDocuments,
			Summary:     "Save a draft's canvas or test-data document",
			Description: "Body {draft_revision, document}; without If-Match creates (201), with it replaces (200; 412 PF-ETAG when stale). contains_run_data and source_environment_ids are derived and refused in the body.",
			Request:     DocumentSave{}, Response: Document{}, ETag: true},
	}
}

// documentScope checks the path's kind and draft id.
func documentScope(c *api.Call) (Scope, string, string, error) {
	kind := c.Params.ByName("kind")
	if kind != "canvas" && kind != "test-data" {
		return Scope{}, "", "", api.NotFound("editor document kind")
	}
	draft, err := c.UUIDParam("identifier", "draft")
	return scopeOf(c), draft, kind, err
}

// runReader checks run.read in an environment of the path's project.
func runReader(c *api.Call) RunReader {
	return func(env string) error {
		ps := c.PathScope()
		return c.Authorize(auth.CapRunRead, auth.Scope{Tenant: ps.Tenant, Project: ps.Project, Environment: env})
	}
}

func (s *Service) getDocumentRoute(c *api.Call) error {
	sc, draft, kind, err := documentScope(c)
	if err != nil {
		return err
	}
	d, err := s.GetDocument(c.Context(), sc, draft, kind, runReader(c))
	if err != nil {
		return problem(err)
	}
	return c.Respond(&api.Result{Body: d, Revision: d.Revision})
}

func (s *Service) saveDocumentRoute(c *api.Call) error {
	sc, draft, kind, err := documentScope(c)
	if err != nil {
		return err
	}
	var req DocumentSave
	if err := c.Decode(&req); err != nil {
		return err
	}
	d, created, err := s.SaveDocument(c.Context(), sc, draft, kind, c.IfMatch(), req, runReader(c))
	if err != nil {
		return problem(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.Respond(&api.Result{Status: status, Body: d, Revision: d.Revision})
}
