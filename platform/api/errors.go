package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Diagnostic is one entry of a problem's diagnostics: what was wrong and
// where. Path is a JSON Pointer (RFC 6901) into the request body ("" is the
// whole body); Parameter names a query parameter or header instead.
type Diagnostic struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Path      string `json:"path,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

// Error is a coded domain error. Handlers return it (or wrap it); WriteError
// Error is a coded domain error. Handlers return it (or wrap it); WriteError
// is the one place that turns it into an application/problem+json response,
// its status coming from Code's row of errorTable (codes.go): domain code
// never chooses a status. Message and Diagnostics are shown to the client,
// so they must never hold tokens, credentials or internal details; Err is
// the cause, logged only.
type Error struct {
	// Code is the spec code (PF-CONFLICT, ...), sent as the problem's code.
	Code        string
	Message     string
	Diagnostics []Diagnostic
	// Result is the optional "result" member (a safe compiler result, ...).
	Result any
	// Headers are set on the response (Retry-After, ...).
	Headers map[string]string
	// Err is the underlying cause; never shown.
	Err error
	// row selects a second-status row of errorTable for Code (rowStaleETag,
	// rowClosed, a toolkit code); only this package sets it.
	row string
}

// Status is the HTTP status e is answered with: its row of errorTable.
func (e *Error) Status() int { return errorTable.Lookup(e.key()).Status }

// key is e's row of errorTable.
func (e *Error) key() string {
	if e.row != "" {
		return e.row
	}
	return e.Code
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s: %s", e.Status(), e.Code, e.Message)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is 404 PF-NOT-FOUND for what (e.g. "project").
func NotFound(what string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("no %s with that id in the scope of the path", what)}
}

// Forbidden is 403 PF-FORBIDDEN.
func Forbidden(format string, args ...any) *Error {
	return &Error{Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

// Unauthenticated is 401 PF-UNAUTHENTICATED; reason is a safe, fixed
// identifier (e.g. "token_expired"), never a token or claim value.
func Unauthenticated(reason string) *Error {
	e := &Error{Code: CodeUnauthenticated, Message: "a valid bearer token from a configured identity provider is required"}
	if reason != "" {
		e.Diagnostics = []Diagnostic{{Code: reason, Message: "the request was not authenticated: " + reason}}
	}
	return e
}

// Invalid is 422 PF-VALIDATION for the body field at path (a JSON Pointer).
func Invalid(path, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: CodeValidation, Message: "the request body does not match the contract",
		Diagnostics: []Diagnostic{{Code: "invalid", Path: path, Message: msg}}}
}

// InvalidParameter is code (a 422 one: PF-VALIDATION, PF-FILTER, PF-ETAG,
// PF-IDEMPOTENCY) for the query parameter or header name.
func InvalidParameter(code, name, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: code, Message: msg,
		Diagnostics: []Diagnostic{{Code: "invalid", Parameter: name, Message: msg}}}
}

// Conflict is code (a 409 one: PF-CONFLICT, PF-FILE-STATE, ...).
func Conflict(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// StaleRevision is 412 PF-ETAG: the If-Match revision is not the current
// one, which the ETag header tells (none while current is 0).
func StaleRevision(current int64, format string, args ...any) *Error {
	e := &Error{Code: CodeETag, Message: fmt.Sprintf(format, args...), row: rowStaleETag}
	if current > 0 {
		e.Headers = map[string]string{"ETag": FormatETag(current)}
	}
	return e
}

// Closed is 410 PF-NOT-FOUND: what the client followed is gone (the live
// channel of a closed debug session).
func Closed(format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf(format, args...), row: rowClosed}
}

// Coded is a domain error that carries a spec code (PF-RUNTIME-STATE, ...)
// but no status (engine.Error, ...): the status comes from errorTable
// (codes.go), so domain code never chooses one, and the error keeps its
// diagnostics and headers.
type Coded interface {
	error
	ProblemCode() string
	// ProblemDetail answers what the client is shown: the message, the
	// diagnostics and the response headers (nil when none).
	ProblemDetail() (message string, diags []Diagnostic, headers map[string]string)
}

// internalMessage is all a client learns of a 500.
const internalMessage = "internal error; quote the request id when reporting it"

// asError maps any error to the Error written to the client. Unknown errors,
// and coded ones whose code errorTable does not list, become a bare 500
// whose cause is only logged.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if _, ok := errorTable.Codes[e.key()]; !ok {
			return &Error{Code: CodeInternal, Message: internalMessage, Err: err}
		}
		return e
	}
	var ce Coded
	if errors.As(err, &ce) {
		if _, ok := errorTable.Codes[ce.ProblemCode()]; !ok {
			return &Error{Code: CodeInternal, Message: internalMessage, Err: err}
		}
		msg, diags, headers := ce.ProblemDetail()
		return &Error{Code: ce.ProblemCode(), Message: msg, Diagnostics: diags, Headers: headers}
	}
	key := httpx.ErrorCode(err)
	m := errorTable.Lookup(key)
	var be *httpx.BodyError
	if errors.As(err, &be) {
		return bodyError(be, key)
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Error{Code: m.Code, Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), row: key}
	}
	var he *httpx.Error
	var c httpx.Coded
	if errors.As(err, &he) || errors.As(err, &c) {
		if m.Status == http.StatusInternalServerError {
			return &Error{Code: CodeInternal, Message: internalMessage, Err: err}
		}
		msg := err.Error()
		if he != nil {
			msg = he.Message
		}
		return &Error{Code: m.Code, Message: msg, Err: err, row: key}
	}
	return &Error{Code: CodeInternal, Message: internalMessage, Err: err}
}

// WriteError writes err as a problem+json body carrying the request id, its
// status and code from errorTable. A 500 is the server's fault: its cause
// is logged at ERROR with the request id, and its text never reaches the
// client. A deliberate 5xx answer (503 PF-COMPATIBILITY,
// PF-UNAVAILABLE, ...) is logged at WARN, and a client's 4xx only at
// DEBUG: bad input is not an error of the service.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e := asError(err)
	m := errorTable.Lookup(e.key())
	if log != nil && !errors.Is(err, context.Canceled) {
		level := slog.LevelDebug
		switch {
		case m.Status == http.StatusInternalServerError:
			level = slog.LevelError
		case m.Status >= 500:
			level = slog.LevelWarn
		}
		log.Log(r.Context(), level, "platform request failed", "method", r.Method, "path", r.URL.Path,
			"status", m.Status, "code", m.Code, "request_id", RequestID(r), "err", err)
	}
	diags := make([]any, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		diags[i] = d
	}
	httpx.WriteProblem(w, r, &httpx.Problem{
		Status: m.Status, Code: m.Code, Message: e.Message, RequestID: RequestID(r),
		Diagnostics: diags, Result: e.Result, Headers: e.Headers,
	})
}
