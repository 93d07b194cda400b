package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbridge/bridge/bridge"
)

// tools implements the host tools over one API client.
type tools struct {
	api  *API
	opts Options
}

// uuidPattern is what a job id looks like; the schema refuses anything
// else before a request is made.
const uuidPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

// Bounds of the bridge API the schemas repeat (docs/bridge-api.md).
const (
	maxTextChars   = 100_000
	maxIdemKey     = 128
	maxTemplateID  = 256
	maxPageSize    = 200
	defaultWaitSec = 60
)

func (t *tools) register(s *sdk.Server) {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	sdk.AddTool(s, &sdk.Tool{Name: "bridge_status", Title: "Bridge status", Annotations: ro,
		Description: "Where the Agent Bridge daemon actually listens (its port may differ from the configured one), its version and health, the agent CLIs (providers) it found per profile, and this client's job counts.",
		InputSchema: schemaFor[StatusIn](nil)}, t.status)
	sdk.AddTool(s, &sdk.Tool{Name: "submit_job", Title: "Submit an agent job",
		Description: "Queue a job for the local agent CLI (Claude Code, Codex, ...) of a bridge profile. Answers the job at once; use job_result to wait for its answer. Needs the submit scope.",
		InputSchema: schemaFor[SubmitJobIn](func(s *jsonschema.Schema) {
			bound(s, "prompt", 1, maxTextChars)
			bound(s, "idempotencyKey", 1, maxIdemKey)
			s.Properties["metadata"].MaxProperties = ptr(32)
		})}, t.submitJob)
	sdk.AddTool(s, &sdk.Tool{Name: "get_job", Title: "Get a job", Annotations: ro,
		Description: "Read one of this client's jobs: state, attempt, last error, usage.",
		InputSchema: schemaFor[JobIn](jobIDRule)}, t.getJob)
	sdk.AddTool(s, &sdk.Tool{Name: "job_result", Title: "Wait for a job's result", Annotations: ro,
		Description: "Wait up to timeoutSeconds (default 60, at most 600) for a job to end and answer its result. Sends progress notifications while it waits when the request has a progress token. done=false means the wait timed out; call again to keep waiting.",
		InputSchema: schemaFor[JobResultIn](func(s *jsonschema.Schema) {
			jobIDRule(s)
			s.Properties["timeoutSeconds"].Minimum = ptr(0.0)
			s.Properties["timeoutSeconds"].Maximum = ptr(float64(t.opts.MaxWait / time.Second))
		})}, t.jobResult)
	sdk.AddTool(s, &sdk.Tool{Name: "send_message", Title: "Send a message to a job",
		Description: "Continue a job's conversation with the next user message; a finished job is queued again. Needs the submit scope.",
		InputSchema: schemaFor[SendMessageIn](func(s *jsonschema.Schema) {
			jobIDRule(s)
			bound(s, "text", 1, maxTextChars)
			bound(s, "idempotencyKey", 1, maxIdemKey)
		})}, t.sendMessage)
	sdk.AddTool(s, &sdk.Tool{Name: "cancel_job", Title: "Cancel a job",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
		Description: "Cancel a job: its agent's whole process group is killed. Needs the control scope.",
		InputSchema: schemaFor[JobIn](jobIDRule)}, t.cancelJob)
	sdk.AddTool(s, &sdk.Tool{Name: "list_jobs", Title: "List jobs", Annotations: ro,
		Description: "List this client's jobs, a page at a time (limit 1 to 200, default 100; pass next as after for the next page).",
		InputSchema: schemaFor[ListJobsIn](func(s *jsonschema.Schema) {
			s.Properties["limit"].Minimum, s.Properties["limit"].Maximum = ptr(1.0), ptr(float64(maxPageSize))
			s.Properties["order"].Enum = []any{"asc", "desc"}
		})}, t.listJobs)
	sdk.AddTool(s, &sdk.Tool{Name: "start_workflow_run", Title: "Start a workflow run",
		Description: "Start a run of a workflow published and active in the local project. Needs the workflows scope.",
		InputSchema: schemaFor[StartRunIn](func(s *jsonschema.Schema) {
			bound(s, "templateId", 1, maxTemplateID)
			bound(s, "idempotencyKey", 1, maxIdemKey)
			s.Properties["inputs"].MaxProperties = ptr(256)
		})}, t.startRun)
	sdk.AddTool(s, &sdk.Tool{Name: "get_workflow_run", Title: "Get a workflow run", Annotations: ro,
		Description: "Read one of this client's workflow runs: status, output or error.",
		InputSchema: schemaFor[RunIn](func(s *jsonschema.Schema) { bound(s, "runId", 1, 128) })}, t.getRun)
}

// schemaFor derives T's input schema and lets tweak add the bounds a Go
// type cannot say.
func schemaFor[T any](tweak func(*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err)) // a programming error, found by every test
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	if tweak != nil {
		tweak(s)
	}
	return s
}

func bound(s *jsonschema.Schema, prop string, min, max int) {
	s.Properties[prop].MinLength, s.Properties[prop].MaxLength = ptr(min), ptr(max)
}

func jobIDRule(s *jsonschema.Schema) { s.Properties["jobId"].Pattern = uuidPattern }

func ptr[T any](v T) *T { return &v }

func (t *tools) status(ctx context.Context, _ *sdk.CallToolRequest, _ StatusIn) (*sdk.CallToolResult, StatusOut, error) {
	var st struct {
		Version    string                  `json:"version"`
		Commit     string                  `json:"commit"`
		APIVersion string                  `json:"apiVersion"`
		Listener   string                  `json:"listener"`
		Client     string                  `json:"client"`
		Providers  []bridge.ProviderStatus `json:"providers"`
		Jobs       map[string]int          `json:"jobs"`
	}
	if _, err := t.api.call(ctx, http.MethodGet, "/v1/bridge/status", nil, nil, &st); err != nil {
		return nil, StatusOut{}, toolError(err)
	}
	addr := t.opts.Addresses(ctx)
	out := StatusOut{Version: st.Version, Commit: st.Commit, APIVersion: st.APIVersion, BridgeURL: addr.BridgeURL,
		ServicesURL: addr.ServicesURL, ConfiguredBridgePort: addr.ConfiguredBridgePort, Health: "ready",
		Client: st.Client, Providers: st.Providers, Jobs: st.Jobs}
	if st.Listener != "" {
		out.BridgeURL = "http://" + st.Listener // what the daemon itself says it bound
	}
	if u, err := url.Parse(out.BridgeURL); err == nil && addr.ConfiguredBridgePort > 0 {
		out.PortDiffers = u.Port() != strconv.Itoa(addr.ConfiguredBridgePort)
	}
	if t.opts.Health != nil {
		if err := t.opts.Health(ctx); err != nil {
			out.Health = "not ready: " + err.Error()
		}
	}
	if out.Providers == nil {
		out.Providers = []bridge.ProviderStatus{}
	}
	return nil, out, nil
}

func (t *tools) submitJob(ctx context.Context, _ *sdk.CallToolRequest, in SubmitJobIn) (*sdk.CallToolResult, bridge.Job, error) {
	body := map[string]any{"prompt": in.Prompt}
	if in.Profile != "" {
		body["profile"] = in.Profile
	}
	if in.WorkDir != "" {
		body["workDir"] = in.WorkDir
	}
	if in.Metadata != nil {
		body["metadata"] = in.Metadata
	}
	var job bridge.Job
	_, err := t.api.call(ctx, http.MethodPost, "/v1/bridge/jobs", map[string]string{"Idempotency-Key": in.IdempotencyKey}, body, &job)
	return nil, job, toolError(err)
}

func (t *tools) getJob(ctx context.Context, _ *sdk.CallToolRequest, in JobIn) (*sdk.CallToolResult, bridge.Job, error) {
	var job bridge.Job
	_, err := t.api.call(ctx, http.MethodGet, jobPath(in.JobID, ""), nil, nil, &job)
	return nil, job, toolError(err)
}

func (t *tools) cancelJob(ctx context.Context, _ *sdk.CallToolRequest, in JobIn) (*sdk.CallToolResult, bridge.Job, error) {
	var job bridge.Job
	_, err := t.api.call(ctx, http.MethodPost, jobPath(in.JobID, "/cancel"), nil, map[string]any{}, &job)
	return nil, job, toolError(err)
}

func (t *tools) sendMessage(ctx context.Context, _ *sdk.CallToolRequest, in SendMessageIn) (*sdk.CallToolResult, SendMessageOut, error) {
	var out SendMessageOut
	_, err := t.api.call(ctx, http.MethodPost, jobPath(in.JobID, "/messages"), map[string]string{"Idempotency-Key": in.IdempotencyKey},
		map[string]any{"text": in.Text}, &out)
	return nil, out, toolError(err)
}

func (t *tools) listJobs(ctx context.Context, _ *sdk.CallToolRequest, in ListJobsIn) (*sdk.CallToolResult, ListJobsOut, error) {
	q := url.Values{}
	if in.Limit != 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	if in.After != "" {
		q.Set("after", in.After)
	}
	if in.Order != "" {
		q.Set("order", in.Order)
	}
	path := "/v1/bridge/jobs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out ListJobsOut
	_, err := t.api.call(ctx, http.MethodGet, path, nil, nil, &out)
	if out.Jobs == nil {
		out.Jobs = []bridge.Job{}
	}
	return nil, out, toolError(err)
}

func (t *tools) startRun(ctx context.Context, _ *sdk.CallToolRequest, in StartRunIn) (*sdk.CallToolResult, WorkflowRun, error) {
	inputs := in.Inputs
	if inputs == nil {
		inputs = map[string]string{}
	}
	var run WorkflowRun
	_, err := t.api.call(ctx, http.MethodPost, "/v1/bridge/workflow-runs", map[string]string{"Idempotency-Key": in.IdempotencyKey},
		map[string]any{"templateId": in.TemplateID, "inputs": inputs}, &run)
	return nil, run, toolError(err)
}

func (t *tools) getRun(ctx context.Context, _ *sdk.CallToolRequest, in RunIn) (*sdk.CallToolResult, WorkflowRun, error) {
	var run WorkflowRun
	_, err := t.api.call(ctx, http.MethodGet, "/v1/bridge/workflow-runs/"+url.PathEscape(in.RunID), nil, nil, &run)
	return nil, run, toolError(err)
}

// jobResult polls GET /v1/bridge/jobs/{id}/result (202 while the job is not
// terminal) until the job ends or the timeout passes, notifying progress.
func (t *tools) jobResult(ctx context.Context, req *sdk.CallToolRequest, in JobResultIn) (*sdk.CallToolResult, JobResultOut, error) {
	wait := defaultWaitSec * time.Second
	if in.TimeoutSeconds != nil {
		wait = time.Duration(*in.TimeoutSeconds) * time.Second
	}
	if wait < 0 || wait > t.opts.MaxWait {
		return nil, JobResultOut{}, fmt.Errorf("timeoutSeconds must be from 0 to %d", int(t.opts.MaxWait/time.Second))
	}
	deadline := time.Now().Add(wait)
	token := req.Params.GetProgressToken()
	var progress float64
	lastState, lastNote := "", time.Time{}
	tick := time.NewTicker(t.opts.Poll)
	defer tick.Stop()
	for {
		var out JobResultOut
		status, err := t.api.call(ctx, http.MethodGet, jobPath(in.JobID, "/result"), nil, nil, &out)
		if err != nil {
			return nil, JobResultOut{}, toolError(err)
		}
		out.Done = status == http.StatusOK
		if out.Done || !time.Now().Before(deadline) {
			return nil, out, nil
		}
		if token != nil && (out.State != lastState || time.Since(lastNote) >= 2*time.Second) {
			progress++
			lastState, lastNote = out.State, time.Now()
			// A host that went away makes this fail; the wait goes on until
			// the request itself is cancelled.
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: progress,
				Message: fmt.Sprintf("job %s is %s (attempt %d)", out.JobID, out.State, out.Attempt)})
		}
		select {
		case <-ctx.Done():
			return nil, JobResultOut{}, ctx.Err()
		case <-tick.C:
		}
	}
}

func jobPath(id, suffix string) string { return "/v1/bridge/jobs/" + url.PathEscape(id) + suffix }

// toolError words a bridge refusal for the host's model: the code, what it
// means for this integration, and the bridge's own message. Other errors
// (the daemon unreachable) pass as they are.
func toolError(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	hint := ""
	switch {
	case e.Status == http.StatusUnauthorized:
		hint = "the bridge token was refused (revoked, or not a bridge token); mint a new one with `bridge token`"
	case e.Code == "insufficient_scope":
		hint = "this integration's token lacks the scope; mint a token with it (`bridge token --scopes ...`)"
	case e.Status == http.StatusNotFound:
		hint = "no such job or run for this client (each client sees only its own)"
	}
	msg := e.Error()
	if hint != "" {
		msg += "; " + hint
	}
	return errors.New(strings.TrimSpace(msg))
}
