package bridge

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Error codes of the bridge API (error.code). They are stable: clients switch on them.
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
)

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
}

// Error is a domain error with an API code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// writeError is the one function that maps errors to the bridge's error
// shape; it returns the status it answered.
func writeError(w http.ResponseWriter, err error) int {
	var e *Error
	var be *httpx.BodyError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &be):
		code := CodeInvalidRequest
		switch be.Status {
		case http.StatusRequestEntityTooLarge:
			code = CodeBodyTooLarge
		case http.StatusUnsupportedMediaType:
			code = CodeUnsupportedMedia
		}
		e = &Error{Code: code, Message: be.Msg}
	default:
		e = &Error{Code: CodeInternal, Message: "internal error"}
	}
	status := codeStatus[e.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bridge"`)
	}
	httpx.WriteJSON(w, status, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
	return status
}
