package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Problem codes shared by every platform route (docs/platform-api.md, "Errors"). Routes of
// later issues add their own codes; these are the ones the toolkit itself
// answers.
const (
	CodeUnauthenticated     = "PF-UNAUTHENTICATED"
	CodeForbidden           = "PF-FORBIDDEN"
	CodeNotFound            = "PF-NOT-FOUND"
	CodeConflict            = "PF-CONFLICT"
	CodeIdempotencyConflict = "PF-IDEMPOTENCY-CONFLICT"
	CodeIdempotency         = "PF-IDEMPOTENCY"
	CodeETag                = "PF-ETAG"
	CodeValidation          = "PF-VALIDATION"
	CodeFilter              = "PF-FILTER"
	CodeRequestTooLarge     = "PF-REQUEST-TOO-LARGE"
	CodeUnavailable         = "PF-UNAVAILABLE"
	CodeInternal            = "PF-INTERNAL"
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
// is the one place that turns it into an application/problem+json response.
// Message and Diagnostics are shown to the client, so they must never hold
// tokens, credentials or internal details; Err is the cause, logged only.
type Error struct {
	Status      int
	Code        string
	Message     string
	Diagnostics []Diagnostic
	// Result is the optional "result" member (a safe compiler result, ...).
	Result any
	// Headers are set on the response (Retry-After, ...).
	Headers map[string]string
	// Err is the underlying cause; never shown.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a formatted message.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is 404 PF-NOT-FOUND for what (e.g. "project").
func NotFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf("no %s with that id in the scope of the path", what)}
}

// Forbidden is 403 PF-FORBIDDEN.
func Forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

// Unauthenticated is 401 PF-UNAUTHENTICATED; reason is a safe, fixed
// identifier (e.g. "token_expired"), never a token or claim value.
func Unauthenticated(reason string) *Error {
	e := &Error{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: "a valid bearer token from a configured identity provider is required"}
	if reason != "" {
		e.Diagnostics = []Diagnostic{{Code: reason, Message: "the request was not authenticated: " + reason}}
	}
	return e
}

// Invalid is 422 PF-VALIDATION for the body field at path (a JSON Pointer).
func Invalid(path, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Status: http.StatusUnprocessableEntity, Code: CodeValidation, Message: "the request body does not match the contract",
		Diagnostics: []Diagnostic{{Code: "invalid", Path: path, Message: msg}}}
}

// InvalidParameter is 422 with code for the query parameter or header name.
func InvalidParameter(code, name, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Status: http.StatusUnprocessableEntity, Code: code, Message: msg,
		Diagnostics: []Diagnostic{{Code: "invalid", Parameter: name, Message: msg}}}
}

// Conflict is 409 with code.
func Conflict(code, format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorTable is the platform's one table from domain codes to statuses and
// PF- codes (docs/platform-api.md, "Errors"): what a coded error of the
// toolkit (*httpx.Error, httpx.Coded) or a refused body answers. An *Error
// names its status and code itself.
var errorTable = httpx.ErrorTable{
	Codes: map[string]httpx.Mapping{
		httpx.EINVALID:      {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		httpx.EBADREQUEST:   {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		httpx.EMEDIATYPE:    {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		httpx.ETOOLARGE:     {Status: http.StatusRequestEntityTooLarge, Code: CodeRequestTooLarge},
		httpx.ENOTFOUND:     {Status: http.StatusNotFound, Code: CodeNotFound},
		httpx.ECONFLICT:     {Status: http.StatusConflict, Code: CodeConflict},
		httpx.EUNAUTHORIZED: {Status: http.StatusUnauthorized, Code: CodeUnauthenticated},
		httpx.EFORBIDDEN:    {Status: http.StatusForbidden, Code: CodeForbidden},
		httpx.EUNAVAILABLE:  {Status: http.StatusServiceUnavailable, Code: CodeUnavailable},
		// The spec's codes, as the domain errors of platform packages
		// carry them (Coded: engine.Error, ...).
		CodeNotFound:            {Status: http.StatusNotFound, Code: CodeNotFound},
		CodeValidation:          {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		CodeFilter:              {Status: http.StatusUnprocessableEntity, Code: CodeFilter},
		CodeForbidden:           {Status: http.StatusForbidden, Code: CodeForbidden},
		CodeConflict:            {Status: http.StatusConflict, Code: CodeConflict},
		"PF-RUNTIME-OUTPUT":     {Status: http.StatusUnprocessableEntity, Code: "PF-RUNTIME-OUTPUT"},
		"PF-OPERATION-CAPACITY": {Status: http.StatusTooManyRequests, Code: "PF-OPERATION-CAPACITY"},
	},
	Fallback: httpx.Mapping{Status: http.StatusInternalServerError, Code: CodeInternal},
}

// Coded is a domain error that carries a spec code (PF-RUNTIME-STATE, ...)
// but no status (engine.Error, ...): the status comes from errorTable
// (CodeStatus), so domain code never chooses one, and the error keeps its
// diagnostics and headers.
type Coded interface {
	error
	ProblemCode() string
	// ProblemDetail answers what the client is shown: the message, the
	// diagnostics and the response headers (nil when none).
	ProblemDetail() (message string, diags []Diagnostic, headers map[string]string)
}

// CodeStatus is the HTTP status of a spec code: errorTable's row, and for
// a code it does not list (the kernel's PF-RUNTIME-STATE,
// PF-INCIDENT-REVISION, ...) 409, a refusal in the resource's current
// state.
func CodeStatus(code string) int {
	if m, ok := errorTable.Codes[code]; ok {
		return m.Status
	}
	return http.StatusConflict
}

// internalMessage is all a client learns of a 500.
const internalMessage = "internal error; quote the request id when reporting it"

// asError maps any error to the Error written to the client. Unknown errors
// become a bare 500 whose cause is only logged.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ce Coded
	if errors.As(err, &ce) {
		msg, diags, headers := ce.ProblemDetail()
		return &Error{Status: CodeStatus(ce.ProblemCode()), Code: ce.ProblemCode(), Message: msg, Diagnostics: diags, Headers: headers}
	}
	var be *httpx.BodyError
	if errors.As(err, &be) {
		m := errorTable.Map(err)
		if m.Status == http.StatusRequestEntityTooLarge {
			return &Error{Status: m.Status, Code: m.Code, Message: be.Msg}
		}
		d := Diagnostic{Code: be.Kind, Message: be.Msg}
		if be.Field != "" {
			d.Path = "/" + be.Field
		}
		return &Error{Status: m.Status, Code: m.Code, Message: "the request body does not match the contract", Diagnostics: []Diagnostic{d}}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		m := errorTable.Lookup(httpx.ETOOLARGE)
		return &Error{Status: m.Status, Code: m.Code, Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
	}
	var he *httpx.Error
	var c httpx.Coded
	if errors.As(err, &he) || errors.As(err, &c) {
		m := errorTable.Map(err)
		if m.Status == http.StatusInternalServerError {
			return &Error{Status: m.Status, Code: m.Code, Message: internalMessage, Err: err}
		}
		msg := err.Error()
		if he != nil {
			msg = he.Message
		}
		return &Error{Status: m.Status, Code: m.Code, Message: msg, Err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: internalMessage, Err: err}
}

// WriteError writes err as a problem+json body carrying the request id. A
// 500 is the server's fault: its cause is logged at ERROR with the request
// id, and its text never reaches the client. A deliberate 5xx answer (501
// PF-UNAVAILABLE, 503 PF-COMPATIBILITY, ...) is logged at WARN, and a
// client's 4xx only at DEBUG: bad input is not an error of the service.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e := asError(err)
	if log != nil && !errors.Is(err, context.Canceled) {
		level := slog.LevelDebug
		switch {
		case e.Status == http.StatusInternalServerError:
			level = slog.LevelError
		case e.Status >= 500:
			level = slog.LevelWarn
		}
		log.Log(r.Context(), level, "platform request failed", "method", r.Method, "path", r.URL.Path,
			"status", e.Status, "code", e.Code, "request_id", RequestID(r), "err", err)
	}
	diags := make([]any, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		diags[i] = d
	}
	httpx.WriteProblem(w, r, &httpx.Problem{
		Status: e.Status, Code: e.Code, Message: e.Message, RequestID: RequestID(r),
		Diagnostics: diags, Result: e.Result, Headers: e.Headers,
	})
}
