package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Error codes of the console's own routes; the shape is the bridge
// listener's ({"error": {"code", "message"}}, docs/bridge-api.md "Errors").
const (
	codeUnauthorized        = "unauthorized"        // 401: no session, or the code or token does not sign in
	codeOwnerOnly           = "owner_only"          // 403: needs the owner token
	codeCSRF                = "csrf_failed"         // 403: a change without the session's X-Bridge-CSRF header
	codeInvalidRequest      = "invalid_request"     // 400
	codeBodyTooLarge        = "body_too_large"      // 413
	codeUnsupportedMedia    = "unsupported_media"   // 415
	codeNotFound            = "not_found"           // 404
	codeMethodNotAllowed    = "method_not_allowed"  // 405
	codeUnavailable         = "service_unavailable" // 502/503: the services listener or platform sign-in failed
	codeInternal            = "internal"            // 500
	codePlatformUnavailable = "platform_unavailable"
)

var codeStatus = map[string]int{
	codeUnauthorized:        http.StatusUnauthorized,
	codeOwnerOnly:           http.StatusForbidden,
	codeCSRF:                http.StatusForbidden,
	codeInvalidRequest:      http.StatusBadRequest,
	codeBodyTooLarge:        http.StatusRequestEntityTooLarge,
	codeUnsupportedMedia:    http.StatusUnsupportedMediaType,
	codeNotFound:            http.StatusNotFound,
	codeMethodNotAllowed:    http.StatusMethodNotAllowed,
	codeUnavailable:         http.StatusBadGateway,
	codePlatformUnavailable: http.StatusServiceUnavailable,
	codeInternal:            http.StatusInternalServerError,
}

// Error is a refusal with a code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// writeError is the one place that maps the console's errors to responses.
func writeError(w http.ResponseWriter, err error) {
	var e *Error
	var be *httpx.BodyError
	switch {
	case errors.As(err, &e):
	case errors.As(err, &be):
		code := codeInvalidRequest
		switch be.Status {
		case http.StatusRequestEntityTooLarge:
			code = codeBodyTooLarge
		case http.StatusUnsupportedMediaType:
			code = codeUnsupportedMedia
		}
		e = &Error{Code: code, Message: be.Msg}
	default:
		e = &Error{Code: codeInternal, Message: "internal error"}
	}
	status := codeStatus[e.Code]
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bridge console"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
}

func respond(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
