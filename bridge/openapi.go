package bridge

import (
	"strings"

	"github.com/agentbridge/bridge/httpx"
)

// apiVersion is the version of the bridge's interface description.
const apiVersion = "0.2.8"

// opDoc is the documentation a route of the table declares with it
// (routes_http.go): operation turns it into the route's OpenAPI operation.
type opDoc struct {
	summary  string
	params   []httpx.Param
	body     map[string]any
	success  string
	response string // component schema name
	// more are responses besides the success and the error (the result's
	// 202 while a job runs).
	more []httpx.Response
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func qparam(name, desc string, schema map[string]any) httpx.Param {
	return httpx.Param{Name: name, In: "query", ShowRequired: true, Description: desc, Schema: schema}
}

var (
	pageLimit   = map[string]any{"type": "integer", "minimum": 1, "maximum": 200, "default": 100}
	afterInt    = map[string]any{"type": "integer", "minimum": 0, "default": 0}
	boolParam   = map[string]any{"type": "string", "enum": []string{"true", "false"}, "default": "false"}
	idemHeader  = httpx.Param{Name: "Idempotency-Key", In: "header", Schema: map[string]any{"type": "string", "minLength": 1, "maxLength": 128}, Description: "a repeat with the same body returns the first answer; a different body answers 409 idempotency_conflict"}
	emptyBody   = map[string]any{"type": "object", "additionalProperties": false, "maxProperties": 0}
	jobIDParam  = httpx.Param{Name: "id", In: "path", Required: true, Schema: map[string]any{"type": "string", "format": "uuid"}}
	toolIDParam = httpx.Param{Name: "tool", In: "path", Required: true, Schema: map[string]any{"type": "integer", "minimum": 1}}
)

func schemaObj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

var (
	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "integer"}
	boolean = map[string]any{"type": "boolean"}
	anyJSON = map[string]any{}
	dt      = map[string]any{"type": []string{"string", "null"}, "format": "date-time"}
)

func arrayOf(items map[string]any) map[string]any {
	return map[string]any{"type": "array", "items": items}
}

// operation documents the route at path with d; every route is behind a
// bridge token, its access level in x-access.
func operation(path, access string, d opDoc) httpx.Operation {
	op := httpx.Operation{Summary: d.summary, Security: []string{"bearer"}, Extensions: map[string]any{"x-access": access},
		Params: append([]httpx.Param{}, d.params...)}
	if strings.Contains(path, "{id}") {
		op.Params = append(op.Params, jobIDParam)
	}
	if strings.Contains(path, "{tool}") {
		op.Params = append(op.Params, toolIDParam)
	}
	if d.body != nil {
		op.Request = d.body
	}
	ok := httpx.Response{Status: d.success, Description: "success"}
	if d.response != "" {
		ok.Media, ok.Schema = "application/json", ref(d.response)
	}
	op.Responses = append([]httpx.Response{ok, {Status: "default", Description: "error", Media: "application/json", Schema: ref("Error")}}, d.more...)
	return op
}

// headOp documents the HEAD of a GET operation: the same status and headers
// without a body.
func headOp(get httpx.Operation) httpx.Operation {
	return httpx.Operation{Summary: "HEAD of: " + get.Summary + " (status and headers only)", Security: get.Security, Extensions: get.Extensions,
		Params:    get.Params,
		Responses: []httpx.Response{{Status: "default", Description: "the status and headers GET answers, without a body"}}}
}

// openAPI is the bridge's document, generated from its route table by the
// toolkit's generator; the component schemas are written out here.
func (s *Service) openAPI() map[string]any {
	o := httpx.NewOpenAPI(httpx.SchemaStyle{})
	o.AddRoutes(s.routes)
	states := []string{string(StateQueued), string(StateRunning), string(StatePaused), string(StateSucceeded), string(StateFailed), string(StateCancelled), string(StateInterrupted)}
	jobErr := schemaObj(map[string]any{"code": str, "message": str}, "code", "message")
	usage := schemaObj(map[string]any{"inputTokens": integer, "outputTokens": integer, "cacheReadTokens": integer, "cacheWriteTokens": integer, "reasoningTokens": integer, "costUsd": map[string]any{"type": "number"}})
	codes := []string{CodeUnauthorized, CodeInsufficientScope, CodeProfileNotAllowed, CodeOwnerOnly, CodeHostNotAllowed, CodeNotFound, CodeInvalidRequest, CodeInvalidParameter, CodeUnknownProfile, CodeUnsupportedMedia, CodeBodyTooLarge, CodeInvalidTransition, CodeIdempotencyConflict, CodeCursorExpired, CodeInternal,
		CodeUnknownTemplate, CodeTemplateNotActive, CodeInvalidInputs, CodeWorkflowsUnavailable}
	return o.Build(httpx.Document{
		Info:            httpx.Info{Title: "Agent Bridge API", Version: apiVersion, Description: "Agent jobs, messages, audit, tool observations, events, workflow runs and tokens of the local agent bridge."},
		Servers:         []string{"http://127.0.0.1:8766"},
		SecuritySchemes: map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "a bridge token (brg_...) in Authorization; never in the URL"}},
		Schemas: map[string]any{
			"Error": schemaObj(map[string]any{"error": schemaObj(map[string]any{"code": map[string]any{"type": "string", "enum": codes}, "message": str}, "code", "message")}, "error"),
			"JobRequest": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"prompt"}, "properties": map[string]any{
				"profile": map[string]any{"type": "string", "default": "default"}, "prompt": map[string]any{"type": "string", "minLength": 1, "maxLength": maxTextChars},
				"workDir":  map[string]any{"type": "string", "maxLength": maxWorkDir, "description": "an existing absolute directory"},
				"metadata": map[string]any{"type": "object", "maxProperties": maxMetaEntries, "additionalProperties": map[string]any{"type": "string", "maxLength": maxMetaValue}}}},
			"Job": schemaObj(map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "client": str, "profile": str, "provider": str, "source": map[string]any{"type": "string", "enum": []string{"api", "chat", SourceWorkflow}},
				"state": map[string]any{"type": "string", "enum": states}, "prompt": str, "workDir": str, "metadata": map[string]any{"type": "object", "additionalProperties": str},
				"attempt": integer, "sessionId": str, "lastError": map[string]any{"oneOf": []any{jobErr, map[string]any{"type": "null"}}}, "usage": usage,
				"createdAt": dt, "updatedAt": dt, "startedAt": dt, "finishedAt": dt}, "id", "client", "profile", "state", "attempt"),
			"JobPage":         schemaObj(map[string]any{"jobs": arrayOf(ref("Job")), "next": map[string]any{"type": []string{"string", "null"}}, "hasMore": boolean}, "jobs", "next"),
			"AuditPage":       schemaObj(map[string]any{"jobId": str, "through": integer, "entries": arrayOf(schemaObj(map[string]any{"seq": integer, "attempt": integer, "kind": str, "summary": anyJSON, "payload": anyJSON, "createdAt": dt})), "nextAfter": map[string]any{"type": []string{"integer", "null"}}, "hasMore": boolean}, "through", "entries"),
			"Tool":            schemaObj(map[string]any{"seq": integer, "attempt": integer, "callId": str, "parentCallId": str, "name": str, "input": anyJSON, "output": map[string]any{"type": []string{"string", "null"}}, "status": map[string]any{"type": "string", "enum": []string{"running", "succeeded", "failed", "abandoned"}}, "error": map[string]any{"type": []string{"string", "null"}}, "files": arrayOf(str), "startedAt": dt, "finishedAt": dt, "durationMs": map[string]any{"type": []string{"integer", "null"}}}, "seq", "name", "status"),
			"ToolPage":        schemaObj(map[string]any{"jobId": str, "tools": arrayOf(ref("Tool")), "nextAfter": map[string]any{"type": []string{"integer", "null"}}, "hasMore": boolean}, "tools"),
			"AttemptList":     schemaObj(map[string]any{"jobId": str, "current": integer, "attempts": arrayOf(schemaObj(map[string]any{"n": integer, "state": str, "reason": str, "sessionId": str, "error": anyJSON, "usage": usage, "createdAt": dt, "startedAt": dt, "finishedAt": dt}))}, "attempts"),
			"Result":          schemaObj(map[string]any{"jobId": str, "state": str, "attempt": integer, "result": map[string]any{"type": []string{"string", "null"}}, "error": anyJSON, "usage": usage, "finishedAt": dt, "demo": boolean}, "jobId", "state"),
			"MessageRequest":  map[string]any{"type": "object", "additionalProperties": false, "required": []string{"text"}, "properties": map[string]any{"text": map[string]any{"type": "string", "minLength": 1, "maxLength": maxTextChars}}},
			"Message":         schemaObj(map[string]any{"seq": integer, "attempt": integer, "role": map[string]any{"type": "string", "enum": []string{"user", "assistant"}}, "text": str, "status": str, "createdAt": dt}),
			"MessageList":     schemaObj(map[string]any{"jobId": str, "sessionId": str, "messages": arrayOf(ref("Message"))}, "messages"),
			"MessageAccepted": schemaObj(map[string]any{"message": ref("Message"), "job": ref("Job")}, "message", "job"),
			"Status":          schemaObj(map[string]any{"version": str, "apiVersion": str, "listener": str, "providers": arrayOf(anyJSON), "jobs": anyJSON, "concurrency": anyJSON, "events": anyJSON}),
			"TokenRequest":    map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "profiles", "scopes"}, "properties": map[string]any{"id": map[string]any{"type": "string", "pattern": clientIDPattern.String()}, "profiles": arrayOf(str), "scopes": arrayOf(map[string]any{"type": "string", "enum": AllScopes})}},
			"IssuedToken":     schemaObj(map[string]any{"token": str, "tokenId": str, "client": str, "profiles": arrayOf(str), "scopes": arrayOf(str), "createdAt": dt}, "token"),
			"TokenList":       schemaObj(map[string]any{"tokens": arrayOf(schemaObj(map[string]any{"tokenId": str, "client": str, "profiles": arrayOf(str), "scopes": arrayOf(str), "createdAt": dt, "revokedAt": dt}))}),
			"WorkflowRunRequest": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"templateId", "inputs"}, "properties": map[string]any{
				"templateId": map[string]any{"type": "string", "minLength": 1, "maxLength": maxTemplateID, "description": "a workflow id published in the local project, optionally with @version"},
				"inputs":     map[string]any{"type": "object", "maxProperties": maxWorkflowInputs, "additionalProperties": str, "description": "the run input; every value is a string"}}},
			"WorkflowRun": schemaObj(map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "client": str, "templateId": str,
				"workflow": map[string]any{"type": "string", "description": "id@version of the published workflow the run runs"},
				"status":   map[string]any{"type": "string", "description": "the platform run's status: running, waiting, suspended, succeeded, failed, cancelled, timed_out (unknown when the platform run is gone)"},
				"inputs":   map[string]any{"type": "object", "description": "the run input as the platform holds it (activation defaults filled in, secret values redacted)"},
				"output":   anyJSON, "error": map[string]any{"oneOf": []any{jobErr, map[string]any{"type": "null"}}}, "createdAt": dt, "updatedAt": dt,
				"platformRunId": map[string]any{"type": "string", "format": "uuid"},
				"links":         schemaObj(map[string]any{"platformRun": map[string]any{"type": "string", "description": "the run's path on the services listener (platform API, platform token)"}})},
				"id", "client", "templateId", "workflow", "status", "inputs", "output", "error", "platformRunId"),
			"WorkflowRunList": schemaObj(map[string]any{"workflowRuns": arrayOf(ref("WorkflowRun")), "hasMore": boolean}, "workflowRuns", "hasMore"),
			"Revocation": schemaObj(map[string]any{"client": str, "revokedTokens": integer, "closedStreams": integer,
				"endedSessions": map[string]any{"type": "integer", "description": "client owner only: the web console sessions signed out"}}),
		},
	})
}
