package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbridge/bridge/bridge/provider"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/kernel"
)

// Agent-step tools (docs/workflow-language.md, "Agent steps"): while a
// workflow agent step's job runs a turn, the bridge serves that step's
// pinned tools at /v1/bridge/jobs/{id}/mcp, an MCP endpoint whose bearer
// token is minted for the turn, held in memory only, and dies with it.
// The agent CLI is pointed at it (provider.Request.MCP). A call goes to the
// engine, which runs the action through its normal path.

// ToolCaller runs an agent's tool call; the engine implements it.
type ToolCaller interface {
	CallTool(ctx context.Context, c engine.ToolCall, wait time.Duration) (engine.ToolResult, error)
}

// WithTools lets the agent steps' jobs call their pinned tools through c.
func (a *WorkflowAgents) WithTools(c ToolCaller) *WorkflowAgents {
	a.tools = c
	return a
}

// mcpServerName is the name of the endpoint in the agent's configuration.
const mcpServerName = "bridge"

// toolWait bounds how long one MCP call waits for its action; a call still
// running then answers an error result saying so (the action goes on).
const toolWait = 5 * time.Minute

// stepTools are the tools of one agent step's task.
type stepTools struct {
	run, task string
	tools     []kernel.ToolSpec
	caller    ToolCaller
}

// turnTools is the endpoint of one running turn.
type turnTools struct {
	hash    [32]byte
	attempt int
	step    *stepTools
}

// toolRegistry holds the steps whose tasks wait for their job (by the
// task's operation key, which the job's metadata carries) and the turns
// that serve them (by job id).
type toolRegistry struct {
	mu    sync.Mutex
	steps map[string]*stepTools
	turns map[string]*turnTools
}

func newToolRegistry() *toolRegistry {
	return &toolRegistry{steps: map[string]*stepTools{}, turns: map[string]*turnTools{}}
}

// register makes the step's tools available to its job's turns until the
// returned function is called.
func (g *toolRegistry) register(opKey string, st *stepTools) func() {
	g.mu.Lock()
	g.steps[opKey] = st
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.steps[opKey] == st {
			delete(g.steps, opKey)
		}
		for id, t := range g.turns {
			if t.step == st {
				delete(g.turns, id)
			}
		}
	}
}

// openTurn gives job's turn its endpoint when the job is an agent step's
// with tools: req.MCP is set, and the returned function (always non-nil)
// ends the endpoint.
func (s *Service) openTurn(job Job, req *provider.Request) (func(), error) {
	if job.Client != PlatformClient || job.Source != SourceWorkflow {
		return func() {}, nil
	}
	g := s.agentTools
	g.mu.Lock()
	st := g.steps[job.Metadata["operationKey"]]
	g.mu.Unlock()
	if st == nil || len(st.tools) == 0 {
		return func() {}, nil
	}
	tok, err := daemon.NewToken()
	if err != nil {
		return func() {}, err
	}
	t := &turnTools{hash: daemon.TokenHash(tok), attempt: job.Attempt, step: st}
	g.mu.Lock()
	g.turns[job.ID] = t
	g.mu.Unlock()
	req.MCP = &provider.MCPServer{Name: mcpServerName, URL: "http://" + s.addr() + "/v1/bridge/jobs/" + job.ID + "/mcp", Token: tok}
	return func() {
		g.mu.Lock()
		if g.turns[job.ID] == t {
			delete(g.turns, job.ID)
		}
		g.mu.Unlock()
	}, nil
}

// toolName is an MCP tool name for an action reference: the characters
// every agent accepts ([A-Za-z0-9_-]), so "acme/crm.get-customer@2" is
// "acme_crm_get-customer_2".
var toolNameBad = regexp.MustCompile(`[^A-Za-z0-9_-]`)

func toolName(ref string) string { return toolNameBad.ReplaceAllString(ref, "_") }

// toolServer is the MCP server of one turn: exactly the step's pinned
// tools, with their pinned schemas.
func (s *Service) toolServer(jobID string, t *turnTools) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "agent-bridge-tools", Version: s.build.Version}, nil)
	seen := map[string]bool{}
	for _, spec := range t.step.tools {
		if !spec.Callable {
			continue
		}
		name := toolName(spec.Ref)
		if seen[name] {
			continue // two references that differ only in punctuation: the first is served
		}
		seen[name] = true
		tool := &sdk.Tool{Name: name, Description: fmt.Sprintf("Runs the workflow action %s (side effect: %s).", spec.Ref, spec.SideEffect),
			InputSchema: objectSchema(spec.InputSchema)}
		if isObjectSchema(spec.OutputSchema) {
			tool.OutputSchema = spec.OutputSchema
		}
		spec := spec
		srv.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return s.callTool(ctx, jobID, t, spec, tool.OutputSchema != nil, req.Params.Arguments), nil
		})
	}
	return srv
}

// objectSchema: MCP requires a tool's input schema to be an object schema.
func objectSchema(raw json.RawMessage) any {
	if isObjectSchema(raw) {
		return raw
	}
	return json.RawMessage(`{"type":"object"}`)
}

func isObjectSchema(raw json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return len(raw) > 0 && json.Unmarshal(raw, &s) == nil && s.Type == "object"
}

// callTool runs one call and records it in the job's audit. Every outcome
// is a tool result the agent reads: refusals and failures are error
// results with the code.
func (s *Service) callTool(ctx context.Context, jobID string, t *turnTools, spec kernel.ToolSpec, structured bool, args json.RawMessage) *sdk.CallToolResult {
	callID := uuid.NewString()
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	res, err := t.step.caller.CallTool(ctx, engine.ToolCall{RunID: t.step.run, AgentTaskID: t.step.task, CallID: callID,
		Tool: spec.Ref, Input: args}, toolWait)
	status, code, text := "completed", "", ""
	switch {
	case err != nil:
		status, code, text = "refused", kernel.ErrorCode(err), err.Error()
		if code == "" {
			code = "TOOL_UNAVAILABLE"
		}
		if errors.Is(err, engine.ErrAgentEnded) {
			code = "AGENT_ENDED"
		}
	case !res.Done:
		status, code, text = "running", "TOOL_STILL_RUNNING", "the action is still running; its outcome will be in the run's history"
	case res.Error != nil:
		status, code, text = "failed", res.Error.Code, res.Error.Message
	default:
		text = string(res.Output)
	}
	summary := map[string]any{"tool": spec.Ref, "callId": callID, "status": status, "sideEffect": spec.SideEffect}
	if code != "" {
		summary["code"] = code
	}
	// The audit keeps what the run's history shows: values the tool's
	// pinned schemas mark secret are redacted by the engine.
	payload := map[string]any{"input": res.RedactedInput}
	if status == "completed" {
		payload["output"] = res.RedactedOutput
	}
	actx := context.WithoutCancel(ctx)
	// The agent's own lines the turn's recorder still holds (its tool use
	// among them) go first, so the audit keeps the order things happened.
	s.sched.flush(jobID)
	if werr := s.db.Write(actx, func(tx *sql.Tx) error {
		return s.audit(tx, jobID, t.attempt, "agent.tool_call", summary, payload)
	}); werr != nil {
		s.log.Warn("audit an agent tool call", "job", jobID, "err", werr)
	}
	if status != "completed" {
		msg := code
		if text != "" {
			msg += ": " + text
		}
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
	}
	out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
	if structured {
		out.StructuredContent = res.Output
	}
	return out
}
