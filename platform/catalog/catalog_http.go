package catalog

import (
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/lang"
)

// getCatalog serves GET P/catalog: the project's current catalog lock in
// canonical form, which compiler requests can pass back as "catalog" and
// `bridge workflow compile --catalog` reads.
func (s *Service) getCatalog(c *api.Call) error {
	lock, err := s.lock(c.Context(), s.db.Reader(), c)
	if err != nil {
		return err
	}
	body, err := lock.Canonical()
	if err != nil {
		return err
	}
	return c.Raw(http.StatusOK, body)
}

// getCapabilities serves GET P/capabilities: what the compiler and catalog
// of this server support, and the caller's capabilities in the project.
func (s *Service) getCapabilities(c *api.Call) error {
	if err := s.requireProject(c.Context(), s.db.Reader(), c); err != nil {
		return err
	}
	out := Capabilities{
		Language: LanguageCapabilities{
			Formats:        []string{FormatYAML},
			Kinds:          []string{lang.KindWorkflow, lang.KindAction, lang.KindConnector, lang.KindDecisionTable},
			ArtifactFormat: []string{lang.WorkflowFormat, lang.ActionFormat, lang.ConnectorFormat, lang.DecisionTableFormat},
			StepKinds:      []string{},
			SideEffects:    []string{lang.SideEffectReadOnly, lang.SideEffectIdempotent, lang.SideEffectIdempotencyKey, lang.SideEffectUnsafe},
			HitPolicies:    []string{"UNIQUE", "ANY", "PRIORITY", "FIRST", "COLLECT", "RULE ORDER", "OUTPUT ORDER"},
			Expression:     "cel",
			MaxSourceBytes: lang.MaxSourceBytes,
		},
		Adapters:           InstalledAdapters(),
		CallerCapabilities: []string{},
	}
	for _, k := range []lang.StepKind{lang.StepAction, lang.StepDecision, lang.StepWait, lang.StepSignal, lang.StepHuman, lang.StepAgent,
		lang.StepWorkflow, lang.StepForEach, lang.StepParallel, lang.StepSwitch, lang.StepSet, lang.StepFail, lang.StepSucceed} {
		out.Language.StepKinds = append(out.Language.StepKinds, string(k))
	}
	scope := c.PathScope()
	for _, cp := range auth.AllCapabilities() {
		if auth.Authorize(c.Caller.Grants, c.Caller.Principal, cp, scope).Allowed {
			out.CallerCapabilities = append(out.CallerCapabilities, string(cp))
		}
	}
	return c.OK(out)
}

func adapterNamesOf(as []lang.CatalogAdapter) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}

// listDescriptors serves GET P/connector-descriptors: every installed
// adapter (built-in http, echo, noop) with its manifest and the project's
// publications on it, sorted by adapter.
func (s *Service) listDescriptors(c *api.Call) error {
	connectors, err := s.connectorVersions(c)
	if err != nil {
		return err
	}
	out := make([]ConnectorDescriptor, 0, len(s.descriptors))
	for _, d := range s.descriptors {
		v, err := d.withPublications(connectors)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	return c.OK(out)
}

// getDescriptor serves GET P/connector-descriptors/{adapter}.
func (s *Service) getDescriptor(c *api.Call) error {
	name := c.Params.ByName("adapter")
	for _, d := range s.descriptors {
		if d.Adapter != name {
			continue
		}
		connectors, err := s.connectorVersions(c)
		if err != nil {
			return err
		}
		v, err := d.withPublications(connectors)
		if err != nil {
			return err
		}
		return c.OK(v)
	}
	if err := s.requireProject(c.Context(), s.db.Reader(), c); err != nil {
		return err
	}
	return api.NotFound("installed connector adapter")
}

func (s *Service) connectorVersions(c *api.Call) ([]Version, error) {
	ctx, r := c.Context(), s.db.Reader()
	if err := s.requireProject(ctx, r, c); err != nil {
		return nil, err
	}
	return listVersions(ctx, r, c.PathScope().Project, lang.KindConnector, "", "", 0)
}
