package api

import (
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Problem codes shared by every platform route (docs/platform-api.md, "Errors"). Feature
// packages declare their own codes next to the code that returns them; errorTable lists
// them all.
const (
	CodeUnauthenticated     = "PF-UNAUTHENTICATED"
	CodeForbidden           = "PF-FORBIDDEN"
	CodeNotFound            = "PF-NOT-FOUND"
	CodeConflict            = "PF-CONFLICT"
	CodeIdempotencyConflict = "PF-IDEMPOTENCY-CONFLICT"
	CodeIdempotency         = "PF-IDEMPOTENCY"
	CodeETag                = "PF-ETAG"
	CodeValidation          = "PF-VALIDATION"
	CodeFilter              = "PF-FILTER"
	CodeRequestTooLarge     = "PF-REQUEST-TOO-LARGE"
	CodeUnavailable         = "PF-UNAVAILABLE"
	CodeInternal            = "PF-INTERNAL"
)

// Rows of errorTable for a code the spec answers with a second status. They
// are not codes: an Error still carries the spec code, and only this
// package's constructors (CheckRevision, StaleRevision, Closed) select them.
const (
	// rowStaleETag: a stale If-Match revision is 412 PF-ETAG; a missing or
	// malformed one is 422 PF-ETAG (docs/platform-api.md, "Shared rules").
	rowStaleETag = "PF-ETAG (stale revision)"
	// rowClosed: the editor host's live channel ends with a 410 PF-NOT-FOUND
	// when the session closes (docs/platform-api.md, "Editor host live
	// channel"); a missing session is 404.
	rowClosed = "PF-NOT-FOUND (closed)"
)

// errorTable is the platform's one table from codes to HTTP statuses
// (docs/platform-api.md, "Errors"): every code a platform route answers,
// the toolkit's codes (*httpx.Error, httpx.Coded, refused bodies) with the
// PF- code they are answered as, and the two second-status rows above.
// Domain code never chooses a status: it returns an *Error or an api.Coded
// error carrying a code, and WriteError looks the code up here. A code the
// table does not list is answered as a 500 (TestErrorTableListsEveryCode
// keeps that from happening).
var errorTable = httpx.ErrorTable{
	Codes: map[string]httpx.Mapping{
		// The toolkit's codes.
		httpx.EINVALID:      {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		httpx.EBADREQUEST:   {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		httpx.EMEDIATYPE:    {Status: http.StatusUnprocessableEntity, Code: CodeValidation},
		httpx.ETOOLARGE:     {Status: http.StatusRequestEntityTooLarge, Code: CodeRequestTooLarge},
		httpx.ENOTFOUND:     {Status: http.StatusNotFound, Code: CodeNotFound},
		httpx.ECONFLICT:     {Status: http.StatusConflict, Code: CodeConflict},
		httpx.EUNAUTHORIZED: {Status: http.StatusUnauthorized, Code: CodeUnauthenticated},
		httpx.EFORBIDDEN:    {Status: http.StatusForbidden, Code: CodeForbidden},
		// A cancelled request (the toolkit's EUNAVAILABLE) is 503, as the
		// daemon's "not ready" answer is. The spec's 501 PF-UNAVAILABLE
		// (an operation this server does not serve) has no row: every
		// operation of docs/platform-api.md is served.
		httpx.EUNAVAILABLE: {Status: http.StatusServiceUnavailable, Code: CodeUnavailable},

		// Second-status rows.
		rowStaleETag: {Status: http.StatusPreconditionFailed, Code: CodeETag},
		rowClosed:    {Status: http.StatusGone, Code: CodeNotFound},

		// 401, 403, 404.
		CodeUnauthenticated:    pf(http.StatusUnauthorized, CodeUnauthenticated),
		CodeForbidden:          pf(http.StatusForbidden, CodeForbidden),
		"PF-STEPTEST-DISABLED": pf(http.StatusForbidden, "PF-STEPTEST-DISABLED"),
		CodeNotFound:           pf(http.StatusNotFound, CodeNotFound),

		// 409: a refusal in the resource's current state.
		CodeConflict:                         pf(http.StatusConflict, CodeConflict),
		CodeIdempotencyConflict:              pf(http.StatusConflict, CodeIdempotencyConflict),
		"PF-INCIDENT-REVISION":               pf(http.StatusConflict, "PF-INCIDENT-REVISION"),
		"PF-INCIDENT-RECEIPT-CONFLICT":       pf(http.StatusConflict, "PF-INCIDENT-RECEIPT-CONFLICT"),
		"PF-RUNTIME-STATE":                   pf(http.StatusConflict, "PF-RUNTIME-STATE"),
		"PF-RUNTIME-DEADLINE":                pf(http.StatusConflict, "PF-RUNTIME-DEADLINE"),
		"PF-RUNTIME-RECONCILIATION_REQUIRED": pf(http.StatusConflict, "PF-RUNTIME-RECONCILIATION_REQUIRED"),
		"PF-LEGACY-UNAVAILABLE":              pf(http.StatusConflict, "PF-LEGACY-UNAVAILABLE"),
		"PF-HUMAN-TASK-REVISION":             pf(http.StatusConflict, "PF-HUMAN-TASK-REVISION"),
		"PF-SCHEDULE-REVISION":               pf(http.StatusConflict, "PF-SCHEDULE-REVISION"),
		"PF-DEBUG-REVISION":                  pf(http.StatusConflict, "PF-DEBUG-REVISION"),
		"PF-PROVIDER-CONFLICT":               pf(http.StatusConflict, "PF-PROVIDER-CONFLICT"),
		"PF-STEPTEST-CONFIRM":                pf(http.StatusConflict, "PF-STEPTEST-CONFIRM"),
		"PF-REVISION":                        pf(http.StatusConflict, "PF-REVISION"),
		"PF-STUDIO-CATALOG-CONFLICT":         pf(http.StatusConflict, "PF-STUDIO-CATALOG-CONFLICT"),
		"PF-FILE-CHUNK-CONFLICT":             pf(http.StatusConflict, "PF-FILE-CHUNK-CONFLICT"),
		"PF-FILE-CHUNK-ORDER":                pf(http.StatusConflict, "PF-FILE-CHUNK-ORDER"),
		"PF-FILE-INCOMPLETE":                 pf(http.StatusConflict, "PF-FILE-INCOMPLETE"),
		"PF-FILE-STATE":                      pf(http.StatusConflict, "PF-FILE-STATE"),

		// 410, 412 (rowStaleETag), 413.
		"PF-DEBUG-EXPIRED":          pf(http.StatusGone, "PF-DEBUG-EXPIRED"),
		"PF-TESTACTIVATION-EXPIRED": pf(http.StatusGone, "PF-TESTACTIVATION-EXPIRED"),
		CodeRequestTooLarge:         pf(http.StatusRequestEntityTooLarge, CodeRequestTooLarge),
		"PF-STUDIO-DOCUMENT-SIZE":   pf(http.StatusRequestEntityTooLarge, "PF-STUDIO-DOCUMENT-SIZE"),

		// 422: the request does not match the contract.
		CodeValidation:               pf(http.StatusUnprocessableEntity, CodeValidation),
		CodeIdempotency:              pf(http.StatusUnprocessableEntity, CodeIdempotency),
		CodeETag:                     pf(http.StatusUnprocessableEntity, CodeETag),
		CodeFilter:                   pf(http.StatusUnprocessableEntity, CodeFilter),
		"PF-RUNTIME-OUTPUT":          pf(http.StatusUnprocessableEntity, "PF-RUNTIME-OUTPUT"),
		"PF-SCHEDULE-RANGE":          pf(http.StatusUnprocessableEntity, "PF-SCHEDULE-RANGE"),
		"PF-PROVIDER-PAYLOAD":        pf(http.StatusUnprocessableEntity, "PF-PROVIDER-PAYLOAD"),
		"PF-SCHEMA-SECRET_VALUE":     pf(http.StatusUnprocessableEntity, "PF-SCHEMA-SECRET_VALUE"),
		"PF-FILE-DIGEST":             pf(http.StatusUnprocessableEntity, "PF-FILE-DIGEST"),
		"PF-DEBUG-REQUEST":           pf(http.StatusUnprocessableEntity, "PF-DEBUG-REQUEST"),
		"PF-DEBUG-COMMAND":           pf(http.StatusUnprocessableEntity, "PF-DEBUG-COMMAND"),
		"PF-DEBUG-MISSING_MOCK":      pf(http.StatusUnprocessableEntity, "PF-DEBUG-MISSING_MOCK"),
		"PF-DEBUG-MOCK-KEY":          pf(http.StatusUnprocessableEntity, "PF-DEBUG-MOCK-KEY"),
		"PF-DEBUG-MOCK-OUTPUT":       pf(http.StatusUnprocessableEntity, "PF-DEBUG-MOCK-OUTPUT"),
		"PF-DEBUG-SIGNAL":            pf(http.StatusUnprocessableEntity, "PF-DEBUG-SIGNAL"),
		"PF-DEBUG-HUMAN-TASK":        pf(http.StatusUnprocessableEntity, "PF-DEBUG-HUMAN-TASK"),
		"PF-DEBUG-STATE":             pf(http.StatusUnprocessableEntity, "PF-DEBUG-STATE"),
		"PF-DEBUG-BREAKPOINT":        pf(http.StatusUnprocessableEntity, "PF-DEBUG-BREAKPOINT"),
		"PF-DEBUG-TIME":              pf(http.StatusUnprocessableEntity, "PF-DEBUG-TIME"),
		"PF-DEBUG-LIMIT":             pf(http.StatusUnprocessableEntity, "PF-DEBUG-LIMIT"),
		"PF-STEPTEST-DRAFT":          pf(http.StatusUnprocessableEntity, "PF-STEPTEST-DRAFT"),
		"PF-STEPTEST-STEP":           pf(http.StatusUnprocessableEntity, "PF-STEPTEST-STEP"),
		"PF-STEPTEST-KIND":           pf(http.StatusUnprocessableEntity, "PF-STEPTEST-KIND"),
		"PF-STEPTEST-TOOLS":          pf(http.StatusUnprocessableEntity, "PF-STEPTEST-TOOLS"),
		"PF-STEPTEST-ANSWER":         pf(http.StatusUnprocessableEntity, "PF-STEPTEST-ANSWER"),
		"PF-STEPTEST-ANSWERED":       pf(http.StatusUnprocessableEntity, "PF-STEPTEST-ANSWERED"),
		"PF-STEPTEST-ENDED":          pf(http.StatusUnprocessableEntity, "PF-STEPTEST-ENDED"),
		"PF-TESTACTIVATION-SECRET":   pf(http.StatusUnprocessableEntity, "PF-TESTACTIVATION-SECRET"),
		"PF-TESTACTIVATION-DRAFT":    pf(http.StatusUnprocessableEntity, "PF-TESTACTIVATION-DRAFT"),
		"PF-STUDIO-REQUEST":          pf(http.StatusUnprocessableEntity, "PF-STUDIO-REQUEST"),
		"PF-STUDIO-TESTDATA-INVALID": pf(http.StatusUnprocessableEntity, "PF-STUDIO-TESTDATA-INVALID"),

		// 429: capacity refusals.
		"PF-OPERATION-CAPACITY":   pf(http.StatusTooManyRequests, "PF-OPERATION-CAPACITY"),
		"PF-REQUEST-CAPACITY":     pf(http.StatusTooManyRequests, "PF-REQUEST-CAPACITY"),
		"PF-STEPTEST-BUSY":        pf(http.StatusTooManyRequests, "PF-STEPTEST-BUSY"),
		"PF-STUDIO-SESSIONS-FULL": pf(http.StatusTooManyRequests, "PF-STUDIO-SESSIONS-FULL"),

		// 5xx.
		CodeInternal:        pf(http.StatusInternalServerError, CodeInternal),
		CodeUnavailable:     pf(http.StatusServiceUnavailable, CodeUnavailable),
		"PF-STUDIO-CATALOG": pf(http.StatusBadGateway, "PF-STUDIO-CATALOG"),
		"PF-COMPATIBILITY":  pf(http.StatusServiceUnavailable, "PF-COMPATIBILITY"),
		"PF-STUDIO-BUSY":    pf(http.StatusServiceUnavailable, "PF-STUDIO-BUSY"),
	},
	Fallback: httpx.Mapping{Status: http.StatusInternalServerError, Code: CodeInternal},
}

// pf is the row of a spec code: answered as itself.
func pf(status int, code string) httpx.Mapping { return httpx.Mapping{Status: status, Code: code} }

// CodeStatus is the HTTP status of a code: its row of errorTable; a code
// the table does not list is the server's fault (500).
func CodeStatus(code string) int { return errorTable.Lookup(code).Status }

// The class of a refusal, for code that reacts to another package's
// refusal (retry later, give up, block a schedule) instead of answering
// it; like Status, it comes from the code's row.

// IsCapacity reports a capacity refusal (429): the same request may pass
// later.
func (e *Error) IsCapacity() bool { return e.Status() == http.StatusTooManyRequests }

// IsInvalid reports a refusal of the request's content (422).
func (e *Error) IsInvalid() bool { return e.Status() == http.StatusUnprocessableEntity }

// IsConflict reports a refusal in the resource's current state (409).
func (e *Error) IsConflict() bool { return e.Status() == http.StatusConflict }

// IsServerSide reports a failure or refusal of the server (5xx: internal,
// unavailable, compatibility, busy).
func (e *Error) IsServerSide() bool { return e.Status() >= http.StatusInternalServerError }

// IsInternal reports the server's own failure (500).
func (e *Error) IsInternal() bool { return e.Status() == http.StatusInternalServerError }
