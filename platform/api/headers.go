package api

import (
	"context"
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// Wire-level names of docs/platform-api.md, "Versioning" and "Authentication".
const (
	// Prefix starts every canonical path.
	Prefix = "/api/v1"
	// HeaderRequestID carries the server-generated request id on every
	// platform response; incoming values are never copied.
	HeaderRequestID = "X-Platform-Request-ID"
	// HeaderWireVersion carries WireVersion on every platform response.
	HeaderWireVersion = "X-Platform-Wire-Version"
	// WireVersion is the value of HeaderWireVersion.
	WireVersion = "platform/api-v1"
	// HeaderIdempotencyKey names the idempotency key of a change.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderReplayed is set to "true" on a response replayed for an
	// idempotency key.
	HeaderReplayed = "Idempotent-Replayed"
)

type ctxKey int

const requestIDKey ctxKey = 1

// RequestID returns the request's server-generated id: the one the daemon's
// middleware assigned (httpx.WithRequestID) or, when the toolkit runs
// without it (unit tests), the one WithPlatformHeaders assigned.
func RequestID(r *http.Request) string {
	if id := httpx.RequestID(r); id != "" {
		return id
	}
	id, _ := r.Context().Value(requestIDKey).(string)
	return id
}

// WithPlatformHeaders makes sure r has a server-generated request id and
// sets HeaderRequestID and HeaderWireVersion on the response before next
// runs. Every handler the toolkit registers is wrapped in it; so is the
// platform's unknown-route handler.
func WithPlatformHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = ensureRequestID(r)
		h := w.Header()
		h.Set(HeaderRequestID, RequestID(r))
		h.Set(HeaderWireVersion, WireVersion)
		next.ServeHTTP(w, r)
	})
}

func ensureRequestID(r *http.Request) *http.Request {
	if RequestID(r) != "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), requestIDKey, httpx.NewRequestID()))
}

// headWriter answers HEAD with the GET handler's status and headers and no
// body.
type headWriter struct{ http.ResponseWriter }

func (headWriter) Write(p []byte) (int, error) { return len(p), nil }
