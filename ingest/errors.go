package ingest

import (
	"net/http"
	"strconv"

	"github.com/agentbridge/bridge/httpx"
)

// errorTable is the ingest surface's one map from problem codes to HTTP
// statuses (ingest/README.md, "Routes"). Domain code returns an *apiError
// with a code; nothing else chooses a status.
var errorTable = httpx.ErrorTable{
	Codes: map[string]httpx.Mapping{
		"WH-BAD-REQUEST":            {Status: http.StatusBadRequest},
		"WH-EMPTY-BODY":             {Status: http.StatusBadRequest},
		"WH-INVALID-CURSOR":         {Status: http.StatusBadRequest},
		"WH-INVALID-HEADER":         {Status: http.StatusBadRequest},
		"WH-INVALID-PARAMETER":      {Status: http.StatusBadRequest},
		"WH-INVALID-PROVIDER":       {Status: http.StatusBadRequest},
		"WH-MALFORMED-BODY":         {Status: http.StatusBadRequest},
		"WH-UNAUTHORIZED":           {Status: http.StatusUnauthorized},
		"WH-SOURCE-NOT-ALLOWED":     {Status: http.StatusForbidden},
		"WH-NOT-FOUND":              {Status: http.StatusNotFound},
		"WH-METHOD-NOT-ALLOWED":     {Status: http.StatusMethodNotAllowed},
		"WH-BODY-TIMEOUT":           {Status: http.StatusRequestTimeout},
		"WH-NOT-REPLAYABLE":         {Status: http.StatusConflict},
		"WH-PAYLOAD-TOO-LARGE":      {Status: http.StatusRequestEntityTooLarge},
		"WH-UNSUPPORTED-MEDIA-TYPE": {Status: http.StatusUnsupportedMediaType},
		"WH-UNPUBLISHABLE":          {Status: http.StatusUnprocessableEntity},
		"WH-RATE-LIMITED":           {Status: http.StatusTooManyRequests},
		"WH-HEADERS-TOO-LARGE":      {Status: http.StatusRequestHeaderFieldsTooLarge},
		"WH-OVERLOADED":             {Status: http.StatusServiceUnavailable},
		"WH-PUBLISH-FAILED":         {Status: http.StatusServiceUnavailable},
		"WH-UNAVAILABLE":            {Status: http.StatusServiceUnavailable},
	},
	Fallback:        httpx.Mapping{Status: http.StatusInternalServerError, Code: "WH-INTERNAL"},
	InternalMessage: "internal error; see the daemon log",
}

func init() {
	// The wire code of every row is its domain code.
	for code, m := range errorTable.Codes {
		m.Code = code
		errorTable.Codes[code] = m
	}
}

// apiError is a coded failure of the ingest surface. Domain code returns
// these; errorTable gives the status and writeError the problem.
type apiError struct {
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

// ErrorCode is the code errorTable looks up (httpx.Coded).
func (e *apiError) ErrorCode() string { return e.Code }

// ErrorHeaders are Retry-After and Allow (httpx.Headered).
func (e *apiError) ErrorHeaders() map[string]string {
	h := map[string]string{}
	if e.RetryAfter > 0 {
		h["Retry-After"] = strconv.Itoa(e.RetryAfter)
	}
	if e.Allow != "" {
		h["Allow"] = e.Allow
	}
	return h
}

// status is the HTTP status the error answers, recorded with dead letters
// and activity.
func (e *apiError) status() int { return errorTable.Lookup(e.Code).Status }

func newError(code, reason, msg string) *apiError {
	return &apiError{Code: code, Reason: reason, Msg: msg}
}

// writeError writes err as application/problem+json; errors that are not
// *apiError are internal and their text is not shown.
var writeError = httpx.ProblemEncoder(&errorTable, nil, "ingest")
