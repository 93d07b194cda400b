package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// JSONError says why a request body is refused before it is decoded, and
// where: Offset is the byte offset in the body.
type JSONError struct {
	Offset int64
	Reason string
}

func (e *JSONError) Error() string {
	return fmt.Sprintf("request body is not acceptable JSON at byte %d: %s", e.Offset, e.Reason)
}

// CheckJSON reports the first problem that makes data unacceptable as a
// request body although encoding/json would take it: invalid UTF-8, a \u
// escape that is a lone surrogate (both are silently replaced by U+FFFD when
// decoding), or a duplicate object key at any depth (encoding/json keeps the
// last). Keys are compared after unescaping, so "a" and "\u0061" collide.
// Syntax errors are left to the decoder, which words them for the surface.
// DecodeBytes applies the same checks; CheckJSON is for JSON that is not a
// request body (a token's claims).
func CheckJSON(data []byte) error {
	if err := checkEncoding(data); err != nil {
		return err
	}
	if !bytes.ContainsRune(data, '{') {
		return nil
	}
	// encoding/json's own nesting limit: deeper is its syntax error.
	if _, d := parseJSON(data, 10000); d != nil && d.Code == BodyDuplicateKey {
		return d.cause
	}
	return nil
}

// checkEncoding refuses invalid UTF-8 and lone surrogate escapes.
func checkEncoding(data []byte) *JSONError {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return &JSONError{Offset: int64(off), Reason: "invalid UTF-8"}
	}
	return checkSurrogates(data)
}

// checkSurrogates scans the strings of data for \u escapes and refuses a high
// surrogate not followed by a low one, and a low one on its own.
func checkSurrogates(data []byte) *JSONError {
	if !bytes.Contains(data, []byte(`\u`)) {
		return nil
	}
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(data) {
				return nil // truncated: the decoder reports it
			}
			if data[i+1] != 'u' {
				i++
				continue
			}
			v, ok := hex4(data, i+2)
			if !ok {
				return nil // malformed escape: the decoder reports it
			}
			switch {
			case v >= 0xD800 && v <= 0xDBFF:
				lo, ok := uint16(0), false
				if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
					lo, ok = hex4(data, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return &JSONError{Offset: int64(i), Reason: fmt.Sprintf(`lone surrogate \u%04x`, v)}
				}
				i += 11
			case v >= 0xDC00 && v <= 0xDFFF:
				return &JSONError{Offset: int64(i), Reason: fmt.Sprintf(`lone surrogate \u%04x`, v)}
			default:
				i += 5
			}
		}
	}
	return nil
}

func hex4(data []byte, at int) (uint16, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var v uint16
	for _, c := range data[at : at+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(d)
	}
	return v, true
}

// SingleHeader returns the only value of header name ("" when absent) and an
// error when the request carries it more than once: two Authorization
// headers are refused rather than resolved by picking one.
func SingleHeader(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", fmt.Errorf("the request carries %d %s headers; send exactly one", len(vs), http.CanonicalHeaderKey(name))
}

// FieldDiagnostic is a problem diagnostic naming the request field at fault.
type FieldDiagnostic struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// BodyProblem maps a refused request body (*BodyError from DecodeJSON, or
// *JSONError from CheckJSON) to a problem+json body whose codes carry the
// surface's prefix: PREFIX-TOO-LARGE (413), PREFIX-UNSUPPORTED-MEDIA-TYPE
// (415), PREFIX-BAD-REQUEST (400, with the field when known). ok is false for
// any other error, which the surface maps itself.
func BodyProblem(err error, prefix string) (p *Problem, ok bool) {
	var be *BodyError
	var je *JSONError
	switch {
	case errors.As(err, &be):
		p = &Problem{Status: be.Status, Message: be.Msg}
		switch be.Status {
		case http.StatusRequestEntityTooLarge:
			p.Code = prefix + "-TOO-LARGE"
		case http.StatusUnsupportedMediaType:
			p.Code = prefix + "-UNSUPPORTED-MEDIA-TYPE"
		default:
			p.Status, p.Code = http.StatusBadRequest, prefix+"-BAD-REQUEST"
		}
		if be.Field != "" {
			p.Diagnostics = []any{FieldDiagnostic{Field: be.Field, Message: be.Msg}}
		}
		return p, true
	case errors.As(err, &je):
		return &Problem{Status: http.StatusBadRequest, Code: prefix + "-BAD-REQUEST", Message: je.Error()}, true
	}
	return nil, false
}
