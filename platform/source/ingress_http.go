package source

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/source/provider"
)

func (s *Service) ingressRoutes() []api.Route {
	return []api.Route{
		{Method: http.MethodPost, Path: "/provider-ingress/{identifier}", Layout: api.Root, Access: api.AccessPublic, MaxBody: provider.MaxBody,
			Handler: s.ingress, OperationID: "receiveProviderEvents", Tag: tagSources, Summary: "Provider events: admitted as receipts",
			Description: "Authenticated by the provider's own scheme with the source's connection secrets only (the route id is no credential). " +
				"The body is read up to 1 MiB (413), a repeated header is refused (422 PF-PROVIDER-PAYLOAD), at most 100 events are normalized " +
				"(413 beyond). 401 PF-UNAUTHENTICATED for a bad or missing signature or a stale timestamp; 422 PF-PROVIDER-PAYLOAD for a delivery " +
				"the package does not understand, an event that does not fit its schema, another account than the pinned account_id, or a " +
				"payload carrying a connection secret; 409 PF-PROVIDER-CONFLICT when an event's identity (source, kind, provider event id) is " +
				"stored with another payload: the whole batch is refused. The answer (200) follows the admission commit; a 500 means nothing " +
				"was stored or acknowledged. A retried event answers duplicate: true. In-band challenges (Slack url_verification) are answered " +
				"as the provider requires. 404 for an unknown or disabled source.",
			Response: IngressAck{}},
		{Method: http.MethodGet, Path: "/provider-ingress/{identifier}", Layout: api.Root, Access: api.AccessPublic,
			Query: []api.Param{{Name: "hub.mode", Type: "string", Description: "subscribe"},
				{Name: "hub.verify_token", Type: "string", Description: "the connection's verify_token secret"},
				{Name: "hub.challenge", Type: "string", Description: "echoed back, 1 to 200 characters"}},
			Handler: s.challenge, OperationID: "answerProviderChallenge", Tag: tagSources, Summary: "Provider challenge (WhatsApp hub.challenge)",
			Description: "Answers the provider's GET verification with its challenge (text/plain) when the verify token matches the connection's " +
				"(401 otherwise). 404 for an unknown or disabled source, or a package without a GET challenge.",
			Response: map[string]string{}},
	}
}

// enabledSource loads the path's source for ingress: 404 unless it exists
// and is enabled.
func (s *Service) enabledSource(c *api.Call) (Source, error) {
	id := c.Params.ByName("identifier")
	if !auth.IsCanonicalUUID(id) {
		return Source{}, api.NotFound("enabled provider source")
	}
	src, err := getSource(c.Context(), s.db.Reader(), id)
	if errors.Is(err, errNotFound) || (err == nil && src.Disabled) {
		return Source{}, api.NotFound("enabled provider source")
	}
	return src, err
}

// credentials answers a source's package and connection secrets.
func (s *Service) credentials(c *api.Call, src Source) (*provider.Package, map[string]string, error) {
	p := s.packages.Exact(src.Provider, src.Package, src.PackageVersion, src.AdapterVersion)
	if p == nil {
		return nil, nil, api.NotFound("enabled provider source with an available package")
	}
	conn, err := getConnection(c.Context(), s.db.Reader(), src.ConnectionRevisionID)
	if err != nil {
		return nil, nil, err
	}
	secrets, err := s.openSecrets(conn)
	return p, secrets, err
}

// reply writes a challenge answer as the provider requires it.
func reply(c *api.Call, r *provider.Reply) error {
	h := c.W.Header()
	h.Set("Content-Type", r.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(r.Body)))
	h.Set("Cache-Control", "no-store")
	c.W.WriteHeader(http.StatusOK)
	_, _ = c.W.Write(r.Body)
	return nil
}

// ingress serves POST /provider-ingress/{identifier}.
func (s *Service) ingress(c *api.Call) error {
	src, err := s.enabledSource(c)
	if err != nil {
		return err
	}
	for name, vs := range c.R.Header {
		if len(vs) > 1 {
			return &api.Error{Code: CodeProviderPayload, Message: "the provider event was refused: a header is repeated",
				Diagnostics: []api.Diagnostic{{Code: "duplicate_header", Parameter: name, Message: "send the " + name + " header once"}}}
		}
	}
	body, err := c.Body()
	if err != nil {
		return err
	}
	p, secrets, err := s.credentials(c, src)
	if err != nil {
		return err
	}
	r, events, err := p.Receive(provider.Inbound{Header: c.R.Header, Query: c.R.URL.Query(), Body: body, Now: s.now()}, secrets)
	if err != nil {
		return ingressError(err)
	}
	if r != nil {
		return reply(c, r)
	}
	if err := screen(src, secrets, events); err != nil {
		return err
	}
	ack, err := s.admit(c.Context(), src, events)
	if err != nil {
		return err
	}
	s.runs.Notify()
	return c.JSON(http.StatusOK, ack)
}

// challenge serves GET /provider-ingress/{identifier}.
func (s *Service) challenge(c *api.Call) error {
	src, err := s.enabledSource(c)
	if err != nil {
		return err
	}
	p, secrets, err := s.credentials(c, src)
	if err != nil {
		return err
	}
	r, err := p.Challenge(provider.Inbound{Header: c.R.Header, Query: c.R.URL.Query(), Now: s.now()}, secrets)
	if errors.Is(err, provider.ErrNoChallenge) {
		return api.NotFound("provider challenge for this package")
	}
	if err != nil {
		return ingressError(err)
	}
	return reply(c, r)
}
