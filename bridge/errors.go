package bridge

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Error codes of the bridge listener (error.code, docs/bridge-api.md
// "Errors"). They are stable: clients switch on them.
const (
	CodeUnauthorized        = "unauthorized"         // 401: token missing, malformed, unknown or revoked
	CodeInsufficientScope   = "insufficient_scope"   // 403: the token lacks the endpoint's scope
	CodeProfileNotAllowed   = "profile_not_allowed"  // 403: the token may not use that profile
	CodeOwnerOnly           = "owner_only"           // 403: needs the owner token
	CodeHostNotAllowed      = "host_not_allowed"     // 403: Host or Origin not allowed
	CodeNotFound            = "not_found"            // 404: no such route, or no such job for this client
	CodeInvalidRequest      = "invalid_request"      // 400: malformed body or unknown property
	CodeInvalidParameter    = "invalid_parameter"    // 400: a query, header or path value out of bounds
	CodeUnknownProfile      = "unknown_profile"      // 400: the profile is not configured
	CodeUnsupportedMedia    = "unsupported_media"    // 415: body is not JSON
	CodeBodyTooLarge        = "body_too_large"       // 413
	CodeInvalidTransition   = "invalid_transition"   // 409: the job's state does not allow it
	CodeIdempotencyConflict = "idempotency_conflict" // 409: key reused with a different body
	CodeCursorExpired       = "cursor_expired"       // 409: Last-Event-ID older than the retained events
	CodeInternal            = "internal"             // 500

	// The workflow-run routes.
	CodeUnknownTemplate      = "unknown_template"      // 422: no workflow (version) of that id is published in the local project
	CodeTemplateNotActive    = "template_not_active"   // 422: published, but no active activation in the local environment
	CodeInvalidInputs        = "invalid_inputs"        // 422: the inputs do not fit the workflow's input schema
	CodeWorkflowsUnavailable = "workflows_unavailable" // 503: no workflow platform runs in this daemon

	// The web console's own routes (package bridge/console).
	CodeCSRFFailed          = "csrf_failed"          // 403: a change without the session's X-Bridge-CSRF header
	CodeMethodNotAllowed    = "method_not_allowed"   // 405
	CodeServiceUnavailable  = "service_unavailable"  // 502: the services listener did not answer
	CodePlatformUnavailable = "platform_unavailable" // 503: the console could not sign in to the platform
)

// codeStatus is the one table of the bridge listener's HTTP statuses:
// domain code returns coded errors and only WriteError (and the Chat
// Completions writer, for the bridge's own codes) reads this.
var codeStatus = map[string]int{
	CodeUnauthorized:        http.StatusUnauthorized,
	CodeInsufficientScope:   http.StatusForbidden,
	CodeProfileNotAllowed:   http.StatusForbidden,
	CodeOwnerOnly:           http.StatusForbidden,
	CodeHostNotAllowed:      http.StatusForbidden,
	CodeNotFound:            http.StatusNotFound,
	CodeInvalidRequest:      http.StatusBadRequest,
	CodeInvalidParameter:    http.StatusBadRequest,
	CodeUnknownProfile:      http.StatusBadRequest,
	CodeUnsupportedMedia:    http.StatusUnsupportedMediaType,
	CodeBodyTooLarge:        http.StatusRequestEntityTooLarge,
	CodeInvalidTransition:   http.StatusConflict,
	CodeIdempotencyConflict: http.StatusConflict,
	CodeCursorExpired:       http.StatusConflict,
	CodeInternal:            http.StatusInternalServerError,

	CodeUnknownTemplate:      http.StatusUnprocessableEntity,
	CodeTemplateNotActive:    http.StatusUnprocessableEntity,
	CodeInvalidInputs:        http.StatusUnprocessableEntity,
	CodeWorkflowsUnavailable: http.StatusServiceUnavailable,

	CodeCSRFFailed:          http.StatusForbidden,
	CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	CodeServiceUnavailable:  http.StatusBadGateway,
	CodePlatformUnavailable: http.StatusServiceUnavailable,
}

// Error is a domain error with an API code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// ErrorCode is the error's code for the toolkit (httpx.Coded).
func (e *Error) ErrorCode() string { return e.Code }

// Errorf makes a coded error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func errf(code, format string, args ...any) *Error { return Errorf(code, format, args...) }

// status is the HTTP status of code; an unknown code is a server fault.
func status(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// asError is err as a coded error: a decoder's refusal gets its code; any
// other error is internal, its text never shown.
func asError(err error) *Error {
	var e *Error
	var be *httpx.BodyError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &be):
		code := CodeInvalidRequest
		switch be.Status {
		case http.StatusRequestEntityTooLarge:
			code = CodeBodyTooLarge
		case http.StatusUnsupportedMediaType:
			code = CodeUnsupportedMedia
		}
		return &Error{Code: code, Message: be.Msg}
	}
	return &Error{Code: CodeInternal, Message: "internal error"}
}

// WriteError is the one function that writes errors in the bridge
// listener's shape, {"error":{"code","message"}}; realm names the Bearer
// realm of a 401 ("bridge", "bridge console"). It returns the status.
func WriteError(w http.ResponseWriter, err error, realm string) int {
	e := asError(err)
	st := status(e.Code)
	if st == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
	}
	httpx.WriteJSON(w, st, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
	return st
}

// writeError answers err on the bridge API's routes.
func writeError(w http.ResponseWriter, err error) int { return WriteError(w, err, "bridge") }

// chatCode is the answer of a Chat Completions code: OpenAI's status and
// error type.
type chatCode struct {
	status int
	typ    string
}

// chatCodes is the one table of the Chat Completions surface's own codes
// (docs/bridge-api.md, "Chat Completions"); the bridge's codes keep their
// statuses there (see chatAnswer).
var chatCodes = map[string]chatCode{
	"missing_required_parameter": {http.StatusBadRequest, "invalid_request_error"},
	"invalid_value":              {http.StatusBadRequest, "invalid_request_error"},
	"context_length_exceeded":    {http.StatusBadRequest, "invalid_request_error"},
	"request_cancelled":          {http.StatusBadRequest, "invalid_request_error"},
	"model_not_found":            {http.StatusNotFound, "invalid_request_error"},
	"job_cancelled":              {http.StatusConflict, "invalid_request_error"},
	"job_paused":                 {http.StatusConflict, "invalid_request_error"},
	codeTokenRevoked:             {http.StatusUnauthorized, "authentication_error"},
	"shutting_down":              {http.StatusServiceUnavailable, "server_error"},
	// The agent failed the job behind the completion: its lastError.code.
	JobErrAgent:       {http.StatusBadGateway, "server_error"},
	JobErrCrashed:     {http.StatusBadGateway, "server_error"},
	JobErrTimeout:     {http.StatusBadGateway, "server_error"},
	JobErrInactive:    {http.StatusBadGateway, "server_error"},
	JobErrUnavailable: {http.StatusBadGateway, "server_error"},
	JobErrInterrupted: {http.StatusBadGateway, "server_error"},
	JobErrAuth:        {http.StatusBadGateway, "server_error"},
	JobErrRateLimited: {http.StatusBadGateway, "server_error"},
}

// chatAnswer is the status, type and code a Chat Completions error answers
// with: a chat code from chatCodes, a bridge code with its bridge status (a
// 401 is OpenAI's invalid_api_key).
func chatAnswer(code string) (int, string, string) {
	if c, ok := chatCodes[code]; ok {
		return c.status, c.typ, code
	}
	st := status(code)
	switch {
	case st == http.StatusUnauthorized:
		return st, "authentication_error", "invalid_api_key"
	case st == http.StatusForbidden:
		return st, "permission_error", code
	case st >= 500:
		return st, "server_error", code
	}
	return st, "invalid_request_error", code
}
