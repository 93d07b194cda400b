// Package httpx holds the HTTP plumbing every surface of the daemon shares:
// the Host/Origin guard against DNS rebinding, server-generated request ids,
// strict JSON bodies with size limits, and problem+json responses. Each
// surface keeps its own error shape; this package only provides the parts.
package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
)

type ctxKey int

const requestIDKey ctxKey = 1

// NewRequestID returns a random 128-bit id as 32 hex characters.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WithRequestID assigns every request a server-generated id (never copied from
// the client), stores it in the context and echoes it in header.
func WithRequestID(header string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := NewRequestID()
		w.Header().Set(header, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// RequestID returns the id WithRequestID assigned, or "".
func RequestID(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey).(string)
	return id
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Problem is an RFC 9457 problem body in the platform's shape.
type Problem struct {
	Status      int    `json:"status"`
	Code        string `json:"code"`
	Message     string `json:"message"`
	RequestID   string `json:"request_id,omitempty"`
	Diagnostics []any  `json:"diagnostics"`
	Result      any    `json:"result,omitempty"`
	// Headers are set on the response (e.g. Retry-After); not serialized.
	Headers map[string]string `json:"-"`
}

func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Code, p.Message) }

// WriteProblem writes p as application/problem+json, filling the request id.
func WriteProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	if p.RequestID == "" {
		p.RequestID = RequestID(r)
	}
	if p.Diagnostics == nil {
		p.Diagnostics = []any{}
	}
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	if p.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(p)
}

// LimitBody caps every request body of next at max bytes; handlers that
// read more get an error from the reader (and respond 413).
func LimitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}
