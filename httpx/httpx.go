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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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

// BodyError describes why a request body was refused.
type BodyError struct {
	Status int    // 413 or 400/422 (caller chooses the mapping of the latter)
	Kind   string // "too_large", "syntax", "unknown_field", "type", "empty", "trailing", "content_type"
	Field  string // JSON path of the offending field, when known
	Msg    string
}

func (e *BodyError) Error() string { return e.Msg }

// DecodeOptions tunes DecodeJSON.
type DecodeOptions struct {
	MaxBytes int64 // required; 0 means 1 MiB
	// AllowUnknown accepts properties the target does not declare; the
	// default refuses them ("no other property is allowed").
	AllowUnknown bool
	// AllowEmpty accepts an empty body as the zero value.
	AllowEmpty bool
}

// DecodeJSON reads r's body into dst strictly: at most MaxBytes, one JSON
// value, no unknown properties (unless allowed), nothing after it.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any, o DecodeOptions) error {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := strings.Cut(ct, ";")
		mt = strings.TrimSpace(strings.ToLower(mt))
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return &BodyError{Status: http.StatusUnsupportedMediaType, Kind: "content_type", Msg: fmt.Sprintf("content type %q is not JSON", mt)}
		}
	}
	body := http.MaxBytesReader(w, r.Body, o.MaxBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &BodyError{Status: http.StatusRequestEntityTooLarge, Kind: "too_large", Msg: fmt.Sprintf("request body exceeds %d bytes", o.MaxBytes)}
		}
		return &BodyError{Status: http.StatusBadRequest, Kind: "syntax", Msg: "could not read request body"}
	}
	return DecodeBytes(data, dst, o)
}

// DecodeBytes applies DecodeJSON's rules to an already-read body.
func DecodeBytes(data []byte, dst any, o DecodeOptions) error {
	if len(strings.TrimSpace(string(data))) == 0 {
		if o.AllowEmpty {
			return nil
		}
		return &BodyError{Status: http.StatusBadRequest, Kind: "empty", Msg: "request body is required"}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if !o.AllowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, data, dst)
	}
	if dec.More() {
		return &BodyError{Status: http.StatusBadRequest, Kind: "trailing", Msg: "request body has data after the JSON value"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &BodyError{Status: http.StatusBadRequest, Kind: "trailing", Msg: "request body has data after the JSON value"}
	}
	return nil
}

func jsonError(err error, data []byte, dst any) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &BodyError{Status: http.StatusBadRequest, Kind: "syntax", Msg: fmt.Sprintf("malformed JSON at byte %d", se.Offset)}
	case errors.As(err, &te):
		field := te.Field
		if p := pathAt(data, te.Offset); p != "" {
			field = p // names the element of a map or array too
		}
		return &BodyError{Status: http.StatusBadRequest, Kind: "type", Field: field, Msg: fmt.Sprintf("field %q must be %s", field, jsonKind(te.Type.Kind().String()))}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if p := unknownFieldPath(data, dst, name); p != "" {
			name = p // names a nested property by its path
		}
		return &BodyError{Status: http.StatusBadRequest, Kind: "unknown_field", Field: name, Msg: fmt.Sprintf("unknown field %q", name)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &BodyError{Status: http.StatusBadRequest, Kind: "syntax", Msg: "truncated JSON body"}
	default:
		return &BodyError{Status: http.StatusBadRequest, Kind: "syntax", Msg: "malformed JSON body"}
	}
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	default:
		return "of another type"
	}
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
