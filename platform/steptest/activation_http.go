package steptest

import (
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
	"github.com/agentbridge/bridge/platform/engine"
)

func (s *Service) activationRoutes() []api.Route {
	base := envBase + "/test-activations"
	return []api.Route{
		{Method: http.MethodPost, Path: base, Capability: auth.CapStepTest, Handler: s.createActivation,
			OperationID: "createTestActivation", Tag: tagTests, Summary: "Activate a draft revision for a limited time",
			Description: "900 s by default, at most 3600. 403 PF-STEPTEST-DISABLED when the test policy does not allow the draft's side " +
				"effect; 409 PF-STEPTEST-CONFIRM without the matching acknowledged_side_effect; 422 PF-TESTACTIVATION-DRAFT.",
			Request: TestActivationRequest{}, Response: TestActivation{}, Status: http.StatusCreated},
		{Method: http.MethodPost, Path: base + "/{id}/runs", Capability: auth.CapStepTest, Handler: s.startRun, MaxBody: maxInputBody,
			OperationID: "startTestRun", Tag: tagTests, Summary: "Start a test run of a test activation",
			Description: "The run has test: true and is left out of run lists unless include_test=true. 410 PF-TESTACTIVATION-EXPIRED " +
				"after expiry; 404 once deleted or for anyone but its creator.",
			Request: TestRunRequest{}, Response: engine.Run{}, Status: http.StatusCreated},
		{Method: http.MethodPost, Path: base + "/{id}/listen", Capability: auth.CapStepTest, Handler: s.listen,
			OperationID: "listenTestActivation", Tag: tagTests, Summary: "Open a signed listen route that starts a test run per request",
			Description: "POST signed requests (Standard Webhooks) to test_url until the test activation ends; each accepted " +
				"webhook-id starts one test run with the JSON body as input.",
			Request: ListenRequest{}, Response: Listen{}, Status: http.StatusCreated},
		{Method: http.MethodDelete, Path: base + "/{id}", Capability: auth.CapStepTest, Handler: s.deleteActivation,
			OperationID: "deleteTestActivation", Tag: tagTests, Summary: "End a test activation now",
			Description: "Retires its activation and removes its listen routes; its test runs stay readable.", Response: TestActivation{}},
		{Method: http.MethodPost, Path: "/test-webhooks/{identifier}", Layout: api.Root, Access: api.AccessPublic, MaxBody: MaxListenBody,
			Handler: s.deliver, OperationID: "receiveTestWebhook", Tag: tagTests, Summary: "Signed test delivery: starts a test run",
			Description: "Authenticated by the Standard Webhooks signature only (as POST /webhooks/{id}). 404 for an unknown or removed " +
				"route, 410 once the test activation expired, 413 over the route's max_body_bytes, 422 when the body is not a JSON object " +
				"or the workflow refuses it. A replayed webhook-id answers the run it started (replayed: true).",
			Response: TestDelivery{}},
	}
}

func (s *Service) createActivation(c *api.Call) error {
	var req TestActivationRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	v, err := s.CreateActivation(c.Context(), c.PathScope(), c.Caller.Principal.ID, req)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) startRun(c *api.Call) error {
	id, err := c.UUIDParam("id", "test activation")
	if err != nil {
		return err
	}
	var req TestRunRequest
	if err := c.DecodeOptional(&req); err != nil {
		return err
	}
	v, err := s.StartRun(c.Context(), c.PathScope(), c.Caller.Principal.ID, id, req)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) listen(c *api.Call) error {
	id, err := c.UUIDParam("id", "test activation")
	if err != nil {
		return err
	}
	var req ListenRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	v, err := s.Listen(c.Context(), c.PathScope(), c.Caller.Principal.ID, id, req)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) deleteActivation(c *api.Call) error {
	id, err := c.UUIDParam("id", "test activation")
	if err != nil {
		return err
	}
	v, err := s.DeleteActivation(c.Context(), c.PathScope(), c.Caller.Principal.ID, id)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) deliver(c *api.Call) error {
	id := c.Params.ByName("identifier")
	if !auth.IsCanonicalUUID(id) {
		return api.NotFound("listen route")
	}
	body, err := c.Body()
	if err != nil {
		return err
	}
	v, err := s.Deliver(c.Context(), id, c.R.Header, body)
	if err != nil {
		return err
	}
	return c.OK(v)
}
