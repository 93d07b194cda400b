package engine

import (
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/kernel"
)

// Error is a refusal of the engine's service methods, coded with the
// problem codes of docs/platform-api.md ("Errors"). It carries no HTTP
// status: the platform surface picks one from Code alone (api.CodeStatus),
// and in-process callers (the bridge, through wire) match it with
// errors.Is against the sentinels below or errors.As for the code.
type Error struct {
	// Code is the problem code: PF-NOT-FOUND, PF-VALIDATION,
	// PF-RUNTIME-STATE, PF-INCIDENT-REVISION, ...
	Code string
	// What names the missing resource of a PF-NOT-FOUND ("run",
	// "incident", "task", "human task", "environment").
	What string
	// Message is safe to show to the client.
	Message string
	// Field is the JSON Pointer of the request member at fault, for a
	// refusal of the body; Parameter names the query parameter at fault.
	Field     string
	Parameter string
	// Revision is the resource's current revision, sent as its ETag with
	// a revision conflict (0: none).
	Revision int64
	// Err is the cause (a kernel refusal, ...); never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// Unwrap exposes the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a sentinel of the same code (and the same What, when the
// sentinel names one): errors.Is(err, ErrRunNotFound).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.What == "" || t.What == e.What)
}

// Problem codes of the engine besides the kernel's (kernel.Code*).
const (
	CodeNotFound   = api.CodeNotFound
	CodeValidation = api.CodeValidation
	CodeConflict   = api.CodeConflict
	// CodeRuntimeState: the run's or task's state refuses the operation.
	CodeRuntimeState = kernel.CodeRuntimeState
)

// Sentinels for errors.Is. The service methods answer *Error values of
// these codes with a specific message.
var (
	// ErrNotFound matches every PF-NOT-FOUND.
	ErrNotFound = &Error{Code: CodeNotFound, Message: "not found"}
	// ErrRunNotFound: no run has that id (in the environment).
	ErrRunNotFound = &Error{Code: CodeNotFound, What: "run", Message: "run not found"}
	// ErrEnvironmentNotFound: the scope names no environment.
	ErrEnvironmentNotFound = &Error{Code: CodeNotFound, What: "environment", Message: "environment not found"}
	// ErrIncidentNotFound: the environment has no incident of that id.
	ErrIncidentNotFound = &Error{Code: CodeNotFound, What: "incident", Message: "incident not found"}
	// ErrTaskNotFound: the environment never had a worker task of that id.
	ErrTaskNotFound = &Error{Code: CodeNotFound, What: "task", Message: "task not found"}
	// ErrHumanTaskNotFound: the environment has no human task of that id.
	ErrHumanTaskNotFound = &Error{Code: CodeNotFound, What: "human task", Message: "human task not found"}
	// ErrInvalid matches every PF-VALIDATION (a bad argument).
	ErrInvalid = &Error{Code: CodeValidation, Message: "invalid"}
	// ErrRunState matches every PF-RUNTIME-STATE: the run (or task) is
	// in a state that refuses the operation (ended, not leased, ...).
	ErrRunState = &Error{Code: CodeRuntimeState, Message: "refused in the current state"}
)

// notFound is PF-NOT-FOUND for what, with the routes' message.
func notFound(what string) *Error {
	return &Error{Code: CodeNotFound, What: what, Message: fmt.Sprintf("no %s with that id in the scope of the path", what)}
}

// invalid is PF-VALIDATION of the request member at field (a JSON Pointer).
func invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeValidation, Field: field, Message: fmt.Sprintf(format, args...)}
}

// refused is a refusal with code (PF-RUNTIME-STATE, PF-CONFLICT, ...).
func refused(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// refusal codes a kernel refusal (its code and message); other errors pass.
func refusal(err error) error {
	var ke *kernel.Error
	if !errors.As(err, &ke) {
		return err
	}
	return &Error{Code: ke.Code, Message: ke.Msg, Err: err}
}
