package engine

import (
	"errors"

	"github.com/agentbridge/bridge/platform/api"
)

// ProblemCode is the problem code (api.Coded): the platform surface maps
// it to the HTTP status in one table (api.CodeStatus).
func (e *Error) ProblemCode() string { return e.Code }

// ProblemDetail is what the client is shown (api.Coded), in the shapes of
// api.Invalid and api.InvalidParameter for refusals of a body member or a
// query parameter.
func (e *Error) ProblemDetail() (string, []api.Diagnostic, map[string]string) {
	var headers map[string]string
	if e.Revision > 0 {
		headers = map[string]string{"ETag": api.FormatETag(e.Revision)}
	}
	switch {
	case e.Field != "":
		return "the request body does not match the contract",
			[]api.Diagnostic{{Code: "invalid", Path: e.Field, Message: e.Message}}, headers
	case e.Parameter != "":
		return e.Message, []api.Diagnostic{{Code: "invalid", Parameter: e.Parameter, Message: e.Message}}, headers
	}
	return e.Message, nil, headers
}

// asProblem turns a coded engine error into the *api.Error it is answered
// as, for the platform packages that ask a refusal's class (source,
// steptest); other errors pass unchanged. The cause stays reachable with
// errors.Is.
func asProblem(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	msg, diags, headers := e.ProblemDetail()
	return &api.Error{Code: e.Code, Message: msg, Diagnostics: diags, Headers: headers, Err: err}
}
