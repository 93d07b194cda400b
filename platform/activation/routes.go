package activation

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// tagActivations is the OpenAPI tag of the routes.
const tagActivations = "Activations"

// base is E/activations relative to api.Prefix.
const base = "/tenants/{tenant}/projects/{project}/environments/{environment}/activations"

// Register adds the activation routes to a.
func (s *Service) Register(a *api.API, r *httprouter.Router) {
	routes := []api.Route{
		{Method: http.MethodGet, Path: base, Capability: auth.CapCatalogRead, Page: true, Handler: s.list,
			OperationID: "listActivations", Tag: tagActivations, Summary: "List the environment's activations",
			Description: "Active and retired activations in id order.",
			Query:       []api.Param{{Name: "status", Description: "only activations with this status: active or retired"}},
			Response:    api.Page[Activation]{}},
		{Method: http.MethodPost, Path: base, Capability: auth.CapReleaseActivate, Idempotency: api.PolicyRequired, IfMatch: api.PolicyOptional,
			Handler: s.create, OperationID: "createActivation", Tag: tagActivations, Summary: "Activate a published workflow version",
			Description: "Binds a published workflow version of the project to the environment. At most one activation of a workflow id is active: " +
				"while one is, a request without If-Match answers 409 PF-CONFLICT, and one with If-Match equal to the active activation's revision " +
				"replaces it (the previous one is retired in the same transaction; needs release.retire too); a stale or unmatched If-Match answers 412 PF-ETAG. " +
				"An unknown version, or one that is not a workflow, answers 422 PF-VALIDATION.",
			Request: Request{}, Response: Activation{}, Status: http.StatusCreated, ETag: true},
		{Method: http.MethodGet, Path: base + "/{identifier}", Capability: auth.CapCatalogRead, Handler: s.get,
			OperationID: "getActivation", Tag: tagActivations, Summary: "Read an activation",
			Response: Activation{}, ETag: true},
		{Method: http.MethodGet, Path: base + "/{identifier}/export", Capability: auth.CapCatalogRead, Handler: s.export,
			OperationID: "exportActivation", Tag: tagActivations, Summary: "Export an activation with its workflow",
			Description: "The activation and the bound published workflow version (artifact and source): what is needed to reproduce it elsewhere.",
			Response:    Export{}},
		{Method: http.MethodPost, Path: base + "/{identifier}/retire", Capability: auth.CapReleaseRetire, Idempotency: api.PolicyRequired,
			IfMatch: api.PolicyRequired, Handler: s.retire,
			OperationID: "retireActivation", Tag: tagActivations, Summary: "Retire an activation",
			Description: "Needs If-Match with the activation's current revision (412 PF-ETAG when stale). Retirement is final: retiring again answers 409 PF-CONFLICT.",
			Request:     RetirementRequest{}, Response: Activation{}, ETag: true},
	}
	for _, rt := range routes {
		a.Handle(r, rt)
	}
}
