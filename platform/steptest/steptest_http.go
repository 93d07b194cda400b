package steptest

import (
	"net/http"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

func (s *Service) stepTestRoutes() []api.Route {
	base := envBase + "/step-tests"
	return []api.Route{
		{Method: http.MethodPost, Path: base, Capability: auth.CapStepTest, Handler: s.createStep,
			OperationID: "createStepTest", Tag: tagTests, Summary: "Run one step of a draft as a test run",
			Description: "Compiles the draft revision against the project's catalog and runs the step alone, for real, as a run marked test. " +
				"403 PF-STEPTEST-DISABLED when the test policy does not allow it; 409 PF-STEPTEST-CONFIRM for a side-effecting step without " +
				"the matching acknowledged_side_effect; 422 PF-STEPTEST-DRAFT, -STEP, -KIND, -TOOLS; 429 PF-STEPTEST-BUSY. " +
				"Time limit 300 s (agent steps 900 s). MaxBody 1 MiB + 64 KiB.",
			Request: StepTestRequest{}, Response: StepTestCreated{}, MaxBody: maxInputBody},
		{Method: http.MethodGet, Path: base + "/{id}", Capability: auth.CapStepTest, Handler: s.getStep,
			OperationID: "getStepTest", Tag: tagTests, Summary: "Read a step test (its creator only; others get 404)",
			Response: StepTest{}},
		{Method: http.MethodPost, Path: base + "/{id}/answers", Capability: auth.CapStepTest, Handler: s.answerStep,
			OperationID: "answerStepTest", Tag: tagTests, Summary: "Answer a pending item of a waiting step test",
			Description: "confirm items: true runs the held agent tool call, false refuses it; review items: true applies the agent's answer, " +
				"false fails the step test; person items: true the first decision, false the last. " +
				"422 PF-STEPTEST-ENDED once the step test ended, PF-STEPTEST-ANSWERED for an item answered before, " +
				"PF-STEPTEST-ANSWER when nothing pending has that instance_key.",
			Request: StepTestAnswer{}, Response: StepTest{}},
		{Method: http.MethodPost, Path: base + "/{id}/cancel", Capability: auth.CapStepTest, Handler: s.cancelStep,
			OperationID: "cancelStepTest", Tag: tagTests, Summary: "Cancel a step test (its run is cancelled)",
			Description: "An ended step test answers unchanged.", Response: StepTest{}},
	}
}

// maxInputBody lets a 1 MiB input through to its own 422.
const maxInputBody = 1<<20 + 64<<10

func (s *Service) createStep(c *api.Call) error {
	var req StepTestRequest
	if err := c.Decode(&req); err != nil {
		return err
	}
	v, err := s.CreateStep(c.Context(), c.PathScope(), c.Caller.Principal.ID, req)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) getStep(c *api.Call) error {
	id, err := c.UUIDParam("id", "step test")
	if err != nil {
		return err
	}
	v, err := s.Step(c.Context(), c.PathScope(), c.Caller.Principal.ID, id)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) answerStep(c *api.Call) error {
	id, err := c.UUIDParam("id", "step test")
	if err != nil {
		return err
	}
	var a StepTestAnswer
	if err := c.Decode(&a); err != nil {
		return err
	}
	v, err := s.Answer(c.Context(), c.PathScope(), c.Caller.Principal.ID, id, a)
	if err != nil {
		return err
	}
	return c.OK(v)
}

func (s *Service) cancelStep(c *api.Call) error {
	id, err := c.UUIDParam("id", "step test")
	if err != nil {
		return err
	}
	if err := c.DecodeOptional(&struct{}{}); err != nil {
		return err
	}
	v, err := s.Cancel(c.Context(), c.PathScope(), c.Caller.Principal.ID, id)
	if err != nil {
		return err
	}
	return c.OK(v)
}
