package httpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
)

// Domain codes of the toolkit. Domain code returns errors carrying a code
// (these, or a surface's own codes from its contract); only a surface's
// error table decides which HTTP status and wire code a code answers, in
// the style of WTF Dial's http/http.go.
const (
	EINVALID      = "invalid"      // a value outside its bounds
	EBADREQUEST   = "bad_request"  // malformed input (JSON, cursor, header)
	ENOTFOUND     = "not_found"    // no such resource
	ECONFLICT     = "conflict"     // duplicate, or a state that does not allow it
	EUNAUTHORIZED = "unauthorized" // no valid credentials
	EFORBIDDEN    = "forbidden"    // valid credentials, not allowed
	ETOOLARGE     = "too_large"    // a body over its limit
	EMEDIATYPE    = "media_type"   // a body that is not of an accepted type
	EUNAVAILABLE  = "unavailable"  // the service cannot serve it now
	EINTERNAL     = "internal"     // the service's own failure
)

// Error is a coded domain error. Message and Fields are shown to clients,
// so they must never hold secrets or internal details; Err is the cause,
// logged only.
type Error struct {
	Code    string
	Message string
	// Fields are per-field details (a surface's diagnostics).
	Fields []any
	// Headers are set on the response (Retry-After, Allow, ...).
	Headers map[string]string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Coded is implemented by the domain errors of a surface that keeps its
// own error type (callbacks.Error, ...): ErrorCode is the domain code its
// error table looks up.
type Coded interface {
	error
	ErrorCode() string
}

// Detailed is implemented by a Coded error with per-field details (a
// problem's diagnostics).
type Detailed interface {
	ErrorDetails() []any
}

// Headered is implemented by a Coded error that sets response headers
// (Retry-After, Allow).
type Headered interface {
	ErrorHeaders() map[string]string
}

// ErrorCode returns the domain code of err: an *Error's, a Coded error's,
// EBADREQUEST/ETOOLARGE/EMEDIATYPE for a refused body (BodyError,
// JSONError),
// ETOOLARGE for a body over a MaxBytesReader's limit, EUNAVAILABLE for a
// cancelled request, and EINTERNAL for anything else.
func ErrorCode(err error) string {
	var e *Error
	var c Coded
	var be *BodyError
	var je *JSONError
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	case errors.As(err, &c):
		return c.ErrorCode()
	case errors.As(err, &je):
		return EBADREQUEST
	case errors.As(err, &be):
		switch be.Status {
		case http.StatusRequestEntityTooLarge:
			return ETOOLARGE
		case http.StatusUnsupportedMediaType:
			return EMEDIATYPE
		}
		return EBADREQUEST
	case errors.As(err, &mbe):
		return ETOOLARGE
	case errors.Is(err, context.Canceled):
		return EUNAVAILABLE
	}
	return EINTERNAL
}

// Mapping is one row of a surface's error table: the status and the wire
// code (the problem's code, the bridge's error.code) a domain code answers.
type Mapping struct {
	Status int
	Code   string
}

// ErrorTable maps domain codes to statuses: the one table of a surface.
// Fallback answers codes the table does not list (the surface's internal
// error).
type ErrorTable struct {
	Codes    map[string]Mapping
	Fallback Mapping
	// InternalMessage is all a client learns of a 500 ("internal error"
	// when empty).
	InternalMessage string
}

// Lookup returns the row of code, or the fallback.
func (t *ErrorTable) Lookup(code string) Mapping {
	if m, ok := t.Codes[code]; ok {
		return m
	}
	return t.Fallback
}

// Map returns the row of err's code (ErrorCode).
func (t *ErrorTable) Map(err error) Mapping { return t.Lookup(ErrorCode(err)) }

// ErrorEncoder writes err in a surface's error shape: problem+json on the
// services listener, {"error":{...}} on the bridge's.
type ErrorEncoder func(w http.ResponseWriter, r *http.Request, err error)

// ProblemEncoder returns the encoder of a problem+json surface: the status
// and code come from table, the message from the error when it is a coded
// one (never a foreign error's text: a 500 says only "internal error"),
// Fields become diagnostics and Headers response headers. Failures are
// logged on log with the request id: the service's own (500) at ERROR,
// other 5xx at WARN, a refused request at DEBUG.
func ProblemEncoder(table *ErrorTable, log *slog.Logger, surface string) ErrorEncoder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(w http.ResponseWriter, r *http.Request, err error) {
		m := table.Map(err)
		p := &Problem{Status: m.Status, Code: m.Code, Message: table.InternalMessage}
		if p.Message == "" {
			p.Message = "internal error"
		}
		var e *Error
		var be *BodyError
		var je *JSONError
		var c Coded
		shown := m.Status != http.StatusInternalServerError // a 500 tells nothing
		switch {
		case errors.As(err, &e):
			if shown {
				p.Message, p.Diagnostics = e.Message, e.Fields
			}
			p.Headers = e.Headers
		case errors.As(err, &c):
			if shown {
				p.Message = c.Error()
				if d, ok := c.(Detailed); ok {
					p.Diagnostics = d.ErrorDetails()
				}
			}
			if h, ok := c.(Headered); ok {
				p.Headers = h.ErrorHeaders()
			}
		case !shown:
		case errors.As(err, &be):
			p.Message = be.Msg
			if be.Field != "" {
				p.Diagnostics = []any{FieldDiagnostic{Field: be.Field, Message: be.Msg}}
			}
		case errors.As(err, &je):
			p.Message = je.Error()
		case errors.Is(err, context.Canceled):
			p.Message = "the request was cancelled"
		}
		LogRefusal(log, r, surface, p.Status, err)
		WriteProblem(w, r, p)
	}
}

// LogRefusal logs a request a surface refused or failed: the service's own
// failures (500) at ERROR, other 5xx at WARN, a client's mistakes at DEBUG
// (bad input is not an error of the service).
func LogRefusal(log *slog.Logger, r *http.Request, surface string, status int, err error) {
	attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "request_id", RequestID(r), "err", err}
	switch {
	case status == http.StatusInternalServerError:
		log.Error(surface+": request failed", attrs...)
	case status >= 500:
		log.Warn(surface+": request not served", attrs...)
	default:
		log.Debug(surface+": request refused", attrs...)
	}
}
