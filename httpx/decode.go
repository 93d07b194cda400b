package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
)

// The one strict JSON decoder of every surface. A body is read into a
// tree (one token walk: syntax, duplicate keys, nesting depth), checked for
// what encoding/json would silently repair (invalid UTF-8, lone
// surrogates), then assigned to the target by reflection, collecting every
// problem with its place in the body. Each surface words the result in its
// own error shape: the toolkit's BodyError message and field (the bridge's
// {"error":{...}}, callbacks' and the factory's problem+json), or the
// diagnostics with their JSON Pointers (the platform's problem+json,
// docs/platform-api.md "Shared rules").

// Kinds of a refused body: BodyError.Kind and BodyDiagnostic.Code.
const (
	BodyTooLarge     = "too_large"     // over the size limit (413)
	BodyContentType  = "content_type"  // not a JSON media type (415)
	BodyEmpty        = "empty"         // no value at all
	BodySyntax       = "syntax"        // not JSON, or not readable
	BodyTrailing     = "trailing"      // data after the one value
	BodyDepth        = "depth"         // nested deeper than MaxDecodeDepth
	BodyEncoding     = "encoding"      // invalid UTF-8, a lone surrogate escape
	BodyDuplicateKey = "duplicate_key" // a key twice in one object
	BodyUnknownField = "unknown_field" // a property the target does not declare
	BodyType         = "type"          // a value of the wrong type or out of range
	BodyRequired     = "required"      // a field tagged `api:"required"` is missing
)

// Limits of the decoder.
const (
	// MaxDecodeDepth bounds the nesting of a body (encoding/json allows
	// 10000 levels, which is a stack to exhaust rather than a document).
	MaxDecodeDepth = 64
	// maxDiagnostics bounds how many problems one refusal reports.
	maxDiagnostics = 20
	// defaultMaxBytes is DecodeJSON's limit when the caller sets none.
	defaultMaxBytes = 1 << 20
)

// BodyError describes why a request body was refused.
type BodyError struct {
	Status int    // 413, 415 or 400 (each surface maps the last itself)
	Kind   string // one of the Body* kinds
	Field  string // the offending field as a.b[2].c, when the toolkit's wording names one
	Msg    string // the toolkit's wording of the first problem
	// Diagnostics are the problems found in the body, at most 20, in
	// document order (a field's type, unknown properties, then the
	// missing required fields of each object), each with its JSON
	// Pointer; empty for a refusal before the body is read (size, media
	// type).
	Diagnostics []BodyDiagnostic
}

func (e *BodyError) Error() string { return e.Msg }

// BodyDiagnostic is one problem of a refused body.
type BodyDiagnostic struct {
	Code    string // one of the Body* kinds
	Pointer string // RFC 6901 JSON Pointer into the body ("" is the whole body)
	Field   string // the same place as a.b[2].c
	Message string // what is wrong there ("must be a string")
	Offset  int64  // the byte offset, for syntax, encoding and duplicate keys
	// summary is the toolkit's one-line wording (BodyError.Msg).
	summary string
	// cause is the CheckJSON error of a duplicate key or a bad encoding.
	cause *JSONError
}

// DecodeOptions tunes DecodeJSON and DecodeBytes.
type DecodeOptions struct {
	MaxBytes int64 // DecodeJSON's limit; 0 means 1 MiB
	// AllowUnknown accepts properties the target does not declare; the
	// default refuses them ("no other property is allowed").
	AllowUnknown bool
	// AllowEmpty accepts an empty body, leaving the target as it is.
	AllowEmpty bool
	// Exact is the platform's contract (docs/platform-api.md, "Shared
	// rules"): property names match exactly (not case-insensitively),
	// null is a value only for pointers, interfaces and json.Unmarshalers,
	// a json.Unmarshaler receives its value re-encoded compactly, and a
	// malformed Content-Type is refused. Without it the decoder keeps
	// encoding/json's leniencies the other surfaces documented: names
	// fold case, null leaves a value as it is (and empties a map or
	// slice), an Unmarshaler receives the bytes as sent.
	Exact bool
	// JSONOnly accepts only application/json, not other +json types.
	JSONOnly bool
}

// CheckMediaType refuses a request whose Content-Type is not JSON
// (BodyContentType, 415); a request without one is taken as JSON.
func CheckMediaType(r *http.Request, o DecodeOptions) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		if o.Exact {
			return contentTypeError(o, strings.TrimSpace(ct))
		}
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	if mt == "application/json" || (!o.JSONOnly && strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return contentTypeError(o, mt)
}

func contentTypeError(o DecodeOptions, mt string) *BodyError {
	msg := fmt.Sprintf("content type %q is not JSON", mt)
	if o.JSONOnly {
		msg = "Content-Type must be application/json"
	}
	return &BodyError{Status: http.StatusUnsupportedMediaType, Kind: BodyContentType, Msg: msg}
}

// DecodeJSON reads r's body into dst strictly: a JSON media type, at most
// MaxBytes, then DecodeBytes.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any, o DecodeOptions) error {
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if err := CheckMediaType(r, o); err != nil {
		return err
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, o.MaxBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &BodyError{Status: http.StatusRequestEntityTooLarge, Kind: BodyTooLarge, Msg: fmt.Sprintf("request body exceeds %d bytes", o.MaxBytes)}
		}
		return &BodyError{Status: http.StatusBadRequest, Kind: BodySyntax, Msg: "could not read request body"}
	}
	return DecodeBytes(data, dst, o)
}

// DecodeBytes decodes one JSON value from data into dst (a non-nil
// pointer): a body that is not empty (unless allowed), valid JSON nested
// at most MaxDecodeDepth levels with nothing after it, without duplicate
// keys, in valid UTF-8 without lone surrogate escapes, whose properties
// the target declares (unless allowed), whose values have the declared
// types (integers in range), with every field tagged `api:"required"`.
// A refusal is a *BodyError; types implementing json.Unmarshaler or
// encoding.TextUnmarshaler decode themselves.
func DecodeBytes(data []byte, dst any, o DecodeOptions) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("httpx: decoding needs a non-nil pointer, got %T", dst)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if o.AllowEmpty {
			return nil
		}
		return refused(BodyDiagnostic{Code: BodyEmpty, Message: "a JSON request body is required", summary: "request body is required"})
	}
	root, d := parseJSON(data, MaxDecodeDepth)
	if d != nil {
		return refused(*d)
	}
	if err := checkEncoding(data); err != nil {
		return refused(encodingDiagnostic(err))
	}
	a := &assigner{o: o}
	a.assign(root, data, rv.Elem(), nil)
	if len(a.diags) > 0 {
		return refused(a.diags...)
	}
	return nil
}

// refused is the BodyError of diags, worded by the first.
func refused(diags ...BodyDiagnostic) *BodyError {
	first := diags[0]
	e := &BodyError{Status: http.StatusBadRequest, Kind: first.Code, Msg: first.summary, Diagnostics: diags}
	if first.Code == BodyType || first.Code == BodyUnknownField || first.Code == BodyRequired {
		e.Field = first.Field
	}
	return e
}

func encodingDiagnostic(je *JSONError) BodyDiagnostic {
	return BodyDiagnostic{Code: BodyEncoding, Offset: je.Offset, Message: fmt.Sprintf("%s at byte %d", je.Reason, je.Offset), summary: je.Error(), cause: je}
}
