package engine

import (
	"database/sql"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/kernel"
)

// tagIncidents is the OpenAPI tag of the incident routes.
const tagIncidents = "Incidents"

// incidentsBase is E/incidents relative to api.Prefix.
const incidentsBase = "/tenants/{tenant}/projects/{project}/environments/{environment}/incidents"

// registerIncidents adds the incident routes to a.
func (s *Service) registerIncidents(add func(api.Route)) {
	for _, rt := range []api.Route{
		{Method: "GET", Path: base + "/{run}/incidents", Capability: auth.CapIncidentRead, Handler: s.runIncidents,
			OperationID: "listRunIncidents", Tag: tagIncidents, Summary: "List a run's incidents",
			Description: "Active and resolved incidents of the run, in the order they opened.",
			Response:    []Incident{}},
		{Method: "GET", Path: incidentsBase, Capability: auth.CapIncidentRead, Page: true, Handler: s.listIncidents,
			OperationID: "listIncidents", Tag: tagIncidents, Summary: "List the incidents of the environment",
			Description: "Active and resolved incidents of every run of the environment, in incident id order.",
			Query:       []api.Param{{Name: "status", Type: "string", Description: "active or resolved (default: both)"}},
			Response:    api.Page[Incident]{}},
		{Method: "POST", Path: incidentsBase + "/{incident}/resolve", Capability: auth.CapIncidentResolve, IfMatch: api.PolicyRequired,
			Handler: s.resolve, OperationID: "resolveIncident", Tag: tagIncidents, Summary: "Resolve an incident",
			Description: "Resolves an active incident at the If-Match revision (409 PF-INCIDENT-REVISION when stale) following the " +
				"Incident state table: retry_safe, accept_reconciled_result (output and evidence_reference) or terminate (the run is " +
				"cancelled). The same receipt_id with the same body and revision by the same principal answers the committed result; " +
				"otherwise a reused receipt_id answers 409 PF-INCIDENT-RECEIPT-CONFLICT.",
			Request: ResolveRequest{}, Response: Resolved{}, ETag: true, MaxBody: payloadBodyBytes},
	} {
		add(rt)
	}
}

// runIncidents serves GET E/runs/{run}/incidents.
func (s *Service) runIncidents(c *api.Call) error {
	out, err := s.RunIncidents(c.Context(), c.PathScope(), c.Params.ByName("run"))
	if err != nil {
		return err
	}
	return c.OK(out)
}

// listIncidents serves GET E/incidents.
func (s *Service) listIncidents(c *api.Call) error {
	status, err := c.Query("status")
	if err != nil {
		return err
	}
	if status != "" && status != string(kernel.IncidentActive) && status != string(kernel.IncidentResolved) {
		return api.InvalidParameter(api.CodeValidation, "status", "status is active or resolved")
	}
	q, err := c.PageQuery("incidents", map[string]string{"status": status})
	if err != nil {
		return err
	}
	items, err := s.ListIncidents(c.Context(), IncidentFilter{Scope: c.PathScope(), Status: status, After: q.After, Limit: q.Fetch()})
	if err != nil {
		return err
	}
	page, err := api.MakePage(q, items, func(i Incident) string { return i.ID })
	if err != nil {
		return err
	}
	return c.OK(page)
}

// resolve serves POST E/incidents/{incident}/resolve.
func (s *Service) resolve(c *api.Call) error {
	id, err := c.UUIDParam("incident", "incident")
	if err != nil {
		return err
	}
	var req ResolveRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	if _, err := checkResolve(&req); err != nil {
		return err
	}
	ctx, sc, by, rev := c.Context(), c.PathScope(), c.Caller.Principal.ID, c.IfMatch()
	return c.Commit(func(tx *sql.Tx) (*api.Result, error) {
		out, err := s.ResolveIncident(ctx, tx, sc, by, id, rev, req)
		if err != nil {
			return nil, err
		}
		return &api.Result{Body: out, Revision: int64(out.Incident.Revision)}, nil
	}, s.notify)
}
