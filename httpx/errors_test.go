package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

type testCoded struct{ code, msg string }

func (e *testCoded) Error() string       { return e.msg }
func (e *testCoded) ErrorCode() string   { return e.code }
func (e *testCoded) ErrorDetails() []any { return []any{map[string]string{"field": "x"}} }

var testTable = ErrorTable{
	Codes: map[string]Mapping{
		ENOTFOUND:   {Status: 404, Code: "T-NOT-FOUND"},
		EBADREQUEST: {Status: 400, Code: "T-BAD-REQUEST"},
		ETOOLARGE:   {Status: 413, Code: "T-TOO-LARGE"},
		EMEDIATYPE:  {Status: 415, Code: "T-MEDIA"},
		"special":   {Status: 409, Code: "T-SPECIAL"},
		EINTERNAL:   {Status: 500, Code: "T-INTERNAL"},
	},
	Fallback: Mapping{Status: 500, Code: "T-INTERNAL"},
}

func TestProblemEncoder(t *testing.T) {
	enc := ProblemEncoder(&testTable, nil, "test")
	for _, c := range []struct {
		err     error
		status  int
		code    string
		message string
		diags   int
	}{
		{fmt.Errorf("wrapped: %w", Errorf(ENOTFOUND, "no thing %d", 1)), 404, "T-NOT-FOUND", "no thing 1", 0},
		{&testCoded{code: "special", msg: "a special case"}, 409, "T-SPECIAL", "a special case", 1},
		{&testCoded{code: "unlisted", msg: "secret detail"}, 500, "T-INTERNAL", "internal error", 0},
		{errors.New("db is on fire"), 500, "T-INTERNAL", "internal error", 0},
		{&BodyError{Status: 413, Msg: "too big"}, 413, "T-TOO-LARGE", "too big", 0},
		{&BodyError{Status: 415, Msg: "not json"}, 415, "T-MEDIA", "not json", 0},
		{&BodyError{Status: 400, Kind: "unknown_field", Field: "a.b", Msg: "unknown field"}, 400, "T-BAD-REQUEST", "unknown field", 1},
		{&JSONError{Offset: 3, Reason: "invalid UTF-8"}, 400, "T-BAD-REQUEST", "request body is not acceptable JSON at byte 3: invalid UTF-8", 0},
		{&http.MaxBytesError{Limit: 10}, 413, "T-TOO-LARGE", "internal error", 0},
	} {
		w := httptest.NewRecorder()
		enc(w, httptest.NewRequest("GET", "/", nil), c.err)
		var p Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if w.Code != c.status || p.Code != c.code || p.Message != c.message || len(p.Diagnostics) != c.diags {
			t.Errorf("%v: %d %+v", c.err, w.Code, p)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%v: content type %q", c.err, ct)
		}
	}
	// Headers of a coded error are sent.
	w := httptest.NewRecorder()
	e := Errorf(ENOTFOUND, "gone")
	e.Headers = map[string]string{"Retry-After": "5"}
	enc(w, httptest.NewRequest("GET", "/", nil), e)
	if w.Header().Get("Retry-After") != "5" {
		t.Errorf("headers %v", w.Header())
	}
}

func TestErrorCode(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                     "",
		Errorf(ECONFLICT, "x"):                  ECONFLICT,
		fmt.Errorf("ctx: %w", context.Canceled): EUNAVAILABLE,
		errors.New("x"):                         EINTERNAL,
	} {
		if got := ErrorCode(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}
