package callbacks

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Application error codes. Domain code returns *Error with one of them; only
// errorTable maps them to HTTP statuses and problem codes.
const (
	EInvalid              = httpx.EINVALID          // a value outside its bounds
	EBadRequest           = httpx.EBADREQUEST       // malformed input (JSON, cursor)
	ENotFound             = httpx.ENOTFOUND         // no such resource
	EConflict             = httpx.ECONFLICT         // duplicate name or domain, wrong state
	EDomainNotAuthorized  = "domain_not_authorized" // target host not on the allow-list
	EUnauthorized         = httpx.EUNAUTHORIZED     // no owner token
	EInternal             = httpx.EINTERNAL         // the service's own failure
	EUnavailable          = httpx.EUNAVAILABLE      // service closed, request cancelled
	ENotFoundEventExpired = "event_expired"         // payload removed by retention
)

// errorTable is the callbacks API's one map from codes to statuses and
// CB- problem codes (callbacks/README.md, "Routes"). Refused bodies come
// as httpx's ETOOLARGE, EMEDIATYPE and EBADREQUEST.
var errorTable = httpx.ErrorTable{
	Codes: map[string]httpx.Mapping{
		EInvalid:              {Status: http.StatusUnprocessableEntity, Code: "CB-VALIDATION"},
		EBadRequest:           {Status: http.StatusBadRequest, Code: "CB-BAD-REQUEST"},
		ENotFound:             {Status: http.StatusNotFound, Code: "CB-NOT-FOUND"},
		EConflict:             {Status: http.StatusConflict, Code: "CB-CONFLICT"},
		EDomainNotAuthorized:  {Status: http.StatusConflict, Code: "CB-DOMAIN-NOT-AUTHORIZED"},
		ENotFoundEventExpired: {Status: http.StatusConflict, Code: "CB-EVENT-EXPIRED"},
		EUnauthorized:         {Status: http.StatusUnauthorized, Code: "CB-UNAUTHORIZED"},
		EUnavailable:          {Status: http.StatusServiceUnavailable, Code: "CB-UNAVAILABLE"},
		httpx.ETOOLARGE:       {Status: http.StatusRequestEntityTooLarge, Code: "CB-TOO-LARGE"},
		httpx.EMEDIATYPE:      {Status: http.StatusUnsupportedMediaType, Code: "CB-UNSUPPORTED-MEDIA-TYPE"},
	},
	Fallback: httpx.Mapping{Status: http.StatusInternalServerError, Code: "CB-INTERNAL"},
}

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

// ErrorCode is the code errorTable looks up (httpx.Coded).
func (e *Error) ErrorCode() string { return e.Code }

// ErrorDetails are the field errors, a problem's diagnostics (httpx.Detailed).
func (e *Error) ErrorDetails() []any {
	if len(e.Fields) == 0 {
		return nil
	}
	out := make([]any, len(e.Fields))
	for i, f := range e.Fields {
		out[i] = f
	}
	return out
}

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
