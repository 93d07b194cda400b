package factory

import (
	"errors"
	"fmt"
)

// Application error codes. Domain code returns *Error with one of them; only
// writeError (http.go) maps them to HTTP statuses and problem codes
// (docs/factory-api.md, "Errors").
const (
	EInvalid      = "invalid"      // 422: a value outside its bounds
	EBadRequest   = "bad_request"  // 400: malformed input (JSON, cursor, query)
	ENotFound     = "not_found"    // 404
	EConflict     = "conflict"     // 409: the run's state does not allow the operation
	ETooLarge     = "too_large"    // 409: the run diff exceeds the limit
	EUnauthorized = "unauthorized" // 401
	EForbidden    = "forbidden"    // 403: a platform principal on a write route
	EUnavailable  = "unavailable"  // 503: the service is closed
	EInternal     = "internal"     // 500
)

// Error is a coded error of the factory.
type Error struct {
	Code    string
	Message string
	// Field names the request field at fault, when there is one.
	Field string
}

func (e *Error) Error() string { return e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func fieldErr(field, format string, args ...any) *Error {
	return &Error{Code: EInvalid, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

func errNotFound(what string) *Error { return errorf(ENotFound, "%s not found", what) }

// ErrorCode returns err's application code, EInternal for foreign errors.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}
