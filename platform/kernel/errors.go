package kernel

import (
	"errors"
	"fmt"
)

// Codes of the errors Step returns. Where the platform specification names a
// code for the condition, the kernel uses it, so that the engine maps a
// kernel error to a problem body without translating.
const (
	// CodeIncidentRevision: the resolution names a stale incident revision.
	CodeIncidentRevision = "PF-INCIDENT-REVISION"
	// CodeRuntimeState: the event does not fit the run's state (run ended,
	// unknown or stale task, timer, human task or child, incident no longer
	// active, no matching failed task, sequence out of order).
	CodeRuntimeState = "PF-RUNTIME-STATE"
	// CodeRuntimeDeadline: retry_safe after the action's original deadline
	// (or the run's).
	CodeRuntimeDeadline = "PF-RUNTIME-DEADLINE"
	// CodeReconciliationRequired: retry_safe on an action not safe to repeat
	// or on an incident not tied to an action; a reconciled result without
	// output or evidence.
	CodeReconciliationRequired = "PF-RUNTIME-RECONCILIATION_REQUIRED"
	// CodeRuntimeOutput: a reconciled output violates the pinned schema or
	// the payload limit, or output was sent with retry_safe or terminate.
	CodeRuntimeOutput = "PF-RUNTIME-OUTPUT"
	// CodeValidation: an event's payload does not match its contract (input,
	// task output, signal payload, human decision or data, reason text).
	CodeValidation = "PF-VALIDATION"
	// CodeCapacity: accepting the event would exceed a bound of the run
	// (for example more than MaxBufferedSignals pending signals). It is the
	// spec's operation capacity, like a project's debug session limit: the
	// run must consume before it accepts more. PF-REQUEST-CAPACITY is the
	// server's momentary load, which this never is.
	CodeCapacity = "PF-OPERATION-CAPACITY"
)

// ErrNoChange is returned (wrapped in an *Error with CodeRuntimeState) when
// an event is valid but changes nothing and must not be recorded: a cancel
// request on a run that is already cancelled. The engine answers with the
// current snapshot and appends no event.
var ErrNoChange = errors.New("no change")

// ErrCorruptState is the cause when a state given to Step is not one the
// kernel could have written.
var ErrCorruptState = errors.New("corrupt state")

// Error is a refusal of an event. Step returns it with the state unchanged.
type Error struct {
	// Code is the platform error code (CodeRuntimeState, ...).
	Code string
	// Msg says what was wrong, without secrets.
	Msg string
	// Err is an optional cause (ErrNoChange, a schema validation error).
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil && !errors.Is(e.Err, ErrNoChange) {
		return fmt.Sprintf("kernel: %s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("kernel: %s: %s", e.Code, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code of a kernel *Error anywhere in err's chain, or
// "" when err is not one.
func ErrorCode(err error) string {
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return ""
}

func refuse(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func refuseWrap(code string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}
