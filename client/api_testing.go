package client

import (
	"context"
	"net/http"
	"net/url"
)

// Drafts, step tests and test activations (docs/platform-api.md, "Drafts
// and tests").

// Draft reads a draft of the project.
func (p Platform) Draft(ctx context.Context, e Env, id string) (Draft, error) {
	return call[Draft](ctx, p.D, http.MethodGet, e.ProjectPath()+"/drafts/"+url.PathEscape(id), nil, nil)
}

// SaveDraft saves a draft revision (hdr carries If-Match for an existing one).
func (p Platform) SaveDraft(ctx context.Context, e Env, id string, hdr map[string]string, req PublishRequest) (Draft, error) {
	return call[Draft](ctx, p.D, http.MethodPut, e.ProjectPath()+"/drafts/"+url.PathEscape(id), hdr, req)
}

// TestPolicy reads the environment's test policy.
func (p Platform) TestPolicy(ctx context.Context, e Env) (TestPolicy, error) {
	return call[TestPolicy](ctx, p.D, http.MethodGet, e.Path("/test-policy"), nil, nil)
}

// SaveTestPolicy saves it (hdr carries If-Match once it exists).
func (p Platform) SaveTestPolicy(ctx context.Context, e Env, hdr map[string]string, req TestPolicyRequest) (TestPolicy, error) {
	return call[TestPolicy](ctx, p.D, http.MethodPut, e.Path("/test-policy"), hdr, req)
}

// StartStepTest starts a step test.
func (p Platform) StartStepTest(ctx context.Context, e Env, req StepTestRequest) (StepTestCreated, error) {
	return call[StepTestCreated](ctx, p.D, http.MethodPost, e.Path("/step-tests"), nil, req)
}

// StepTest reads a step test.
func (p Platform) StepTest(ctx context.Context, e Env, id string) (StepTest, error) {
	return call[StepTest](ctx, p.D, http.MethodGet, e.Path("/step-tests/"+url.PathEscape(id)), nil, nil)
}

// CancelStepTest cancels a step test (and its run).
func (p Platform) CancelStepTest(ctx context.Context, e Env, id string) (StepTest, error) {
	return call[StepTest](ctx, p.D, http.MethodPost, e.Path("/step-tests/"+url.PathEscape(id)+"/cancel"), nil, nil)
}

// AnswerStepTest answers a pending item of a waiting step test.
func (p Platform) AnswerStepTest(ctx context.Context, e Env, id string, req StepTestAnswer) (StepTest, error) {
	return call[StepTest](ctx, p.D, http.MethodPost, e.Path("/step-tests/"+url.PathEscape(id)+"/answers"), nil, req)
}

// ActivateTest activates a draft revision for a limited time.
func (p Platform) ActivateTest(ctx context.Context, e Env, req TestActivationRequest) (TestActivation, error) {
	return call[TestActivation](ctx, p.D, http.MethodPost, e.Path("/test-activations"), nil, req)
}

// StartTestRun starts a test run of a test activation.
func (p Platform) StartTestRun(ctx context.Context, e Env, id string, req TestRunRequest) (Run, error) {
	return call[Run](ctx, p.D, http.MethodPost, e.Path("/test-activations/"+url.PathEscape(id)+"/runs"), nil, req)
}

// Listen opens a signed listen URL of a test activation.
func (p Platform) Listen(ctx context.Context, e Env, id string, req ListenRequest) (Listen, error) {
	return call[Listen](ctx, p.D, http.MethodPost, e.Path("/test-activations/"+url.PathEscape(id)+"/listen"), nil, req)
}

// DeactivateTest ends a test activation now.
func (p Platform) DeactivateTest(ctx context.Context, e Env, id string) (TestActivation, error) {
	return call[TestActivation](ctx, p.D, http.MethodDelete, e.Path("/test-activations/"+url.PathEscape(id)), nil, nil)
}
