package engine

import "fmt"

// StartRefusal is a refusal of a local run start (StartActivated, and the
// platform's StartLocalRun): Kind is ErrWorkflowNotPublished,
// ErrNoActiveActivation or ErrInvalidInput, which errors.Is matches, and
// Detail says why for people. In-process callers (the bridge, through
// package wire) read both with errors.As instead of parsing the text.
type StartRefusal struct {
	Kind   error
	Detail string
}

func (e *StartRefusal) Error() string { return e.Kind.Error() + ": " + e.Detail }

// Unwrap exposes Kind.
func (e *StartRefusal) Unwrap() error { return e.Kind }

// RefuseStart is a StartRefusal of kind with a detail for people.
func RefuseStart(kind error, format string, args ...any) error {
	return &StartRefusal{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}
