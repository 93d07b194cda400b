package ingest

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/agentbridge/bridge/httpx"
)

// apiError is a coded failure of the ingest surface. Domain code returns
// these; writeError is the one place that turns them into HTTP.
type apiError struct {
	Status int
	Code   string // problem code, e.g. WH-PAYLOAD-TOO-LARGE
	Reason string // stable dead-letter reason, e.g. payload_too_large
	Msg    string
	// RetryAfter (seconds) and Allow become response headers when set.
	RetryAfter int
	Allow      string
	// transient refusals ask the client to come back (overloaded, body
	// timeout): they are not dead-lettered.
	transient bool
}

func (e *apiError) Error() string { return e.Msg }

func newError(status int, code, reason, msg string) *apiError {
	return &apiError{Status: status, Code: code, Reason: reason, Msg: msg}
}

// writeError writes err as application/problem+json; errors that are not
// *apiError are internal and their text is not shown.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, errNotFound):
		ae = newError(http.StatusNotFound, "WH-NOT-FOUND", "not_found", "no dead letter with that event id")
	case errors.Is(err, errNotReplayable):
		ae = newError(http.StatusConflict, "WH-NOT-REPLAYABLE", "not_replayable", err.Error())
	default:
		ae = newError(http.StatusInternalServerError, "WH-INTERNAL", "internal", "internal error; see the daemon log")
	}
	p := &httpx.Problem{Status: ae.Status, Code: ae.Code, Message: ae.Msg, Headers: map[string]string{}}
	if ae.RetryAfter > 0 {
		p.Headers["Retry-After"] = strconv.Itoa(ae.RetryAfter)
	}
	if ae.Allow != "" {
		p.Headers["Allow"] = ae.Allow
	}
	httpx.WriteProblem(w, r, p)
}
