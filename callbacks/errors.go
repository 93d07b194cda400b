package callbacks

import (
	"errors"
	"fmt"
)

// Application error codes. Domain code returns *Error with one of them; only
// writeError (http.go) maps them to HTTP statuses and problem codes.
const (
	EInvalid              = "invalid"               // 422: a value outside its bounds
	EBadRequest           = "bad_request"           // 400: malformed input (JSON, cursor)
	ENotFound             = "not_found"             // 404
	EConflict             = "conflict"              // 409: duplicate name or domain, wrong state
	EDomainNotAuthorized  = "domain_not_authorized" // 409: target host not on the allow-list
	EUnauthorized         = "unauthorized"          // 401
	EInternal             = "internal"              // 500
	EUnavailable          = "unavailable"           // 503: service closed
	ENotFoundEventExpired = "event_expired"         // 409: payload removed by retention
)

// Error is a coded error of the callback service.
type Error struct {
	Code    string
	Message string
	// Fields are per-field validation messages (JSON field name -> message).
	Fields []FieldError
}

// FieldError is one validation failure, reported in a problem's diagnostics.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns err's application code, EInternal for foreign errors.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// validation collects field errors and turns them into one EInvalid error.
type validation struct{ fields []FieldError }

func (v *validation) add(field, format string, args ...any) {
	v.fields = append(v.fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *validation) check(ok bool, field, format string, args ...any) {
	if !ok {
		v.add(field, format, args...)
	}
}

func (v *validation) err() error {
	if len(v.fields) == 0 {
		return nil
	}
	msg := v.fields[0].Field + ": " + v.fields[0].Message
	if len(v.fields) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(v.fields)-1)
	}
	return &Error{Code: EInvalid, Message: msg, Fields: v.fields}
}
