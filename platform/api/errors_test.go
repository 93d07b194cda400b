package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/api"
)

// TestErrorTable: the platform's one error table answers the toolkit's
// coded errors and refused bodies with PF- problems; an *api.Error is
// answered with its code's status (a second-status row for a stale
// revision or a closed session), a code the table does not list and
// anything else with a bare 500.
func TestErrorTable(t *testing.T) {
	for _, c := range []struct {
		err     error
		status  int
		code    string
		message string
	}{
		{httpx.Errorf(httpx.ENOTFOUND, "no such thing"), 404, api.CodeNotFound, "no such thing"},
		{fmt.Errorf("ctx: %w", httpx.Errorf(httpx.ECONFLICT, "in use")), 409, api.CodeConflict, "in use"},
		{httpx.Errorf(httpx.EINVALID, "bad"), 422, api.CodeValidation, "bad"},
		{httpx.Errorf(httpx.EFORBIDDEN, "no"), 403, api.CodeForbidden, "no"},
		{httpx.Errorf(httpx.EUNAUTHORIZED, "who"), 401, api.CodeUnauthenticated, "who"},
		{httpx.Errorf(httpx.EINTERNAL, "db detail"), 500, api.CodeInternal, "internal error; quote the request id when reporting it"},
		{httpx.Errorf("unlisted", "detail"), 500, api.CodeInternal, "internal error; quote the request id when reporting it"},
		{&httpx.BodyError{Status: 413, Kind: "too_large", Msg: "request body exceeds 10 bytes"}, 413, api.CodeRequestTooLarge, "request body exceeds 10 bytes"},
		{&httpx.BodyError{Status: 400, Kind: "syntax", Msg: "malformed"}, 422, api.CodeValidation, "the request body does not match the contract"},
		{&http.MaxBytesError{Limit: 7}, 413, api.CodeRequestTooLarge, "request body exceeds 7 bytes"},
		{api.Errorf("PF-COMPATIBILITY", "its own"), 503, "PF-COMPATIBILITY", "its own"},
		{api.Errorf(api.CodeUnavailable, "not ready"), 503, api.CodeUnavailable, "not ready"},
		{api.StaleRevision(3, "stale"), 412, api.CodeETag, "stale"},
		{api.InvalidParameter(api.CodeETag, "If-Match", "missing"), 422, api.CodeETag, "missing"},
		{api.Closed("gone"), 410, api.CodeNotFound, "gone"},
		{api.Errorf("PF-UNLISTED", "its own"), 500, api.CodeInternal, "internal error; quote the request id when reporting it"},
		{errors.New("secret cause"), 500, api.CodeInternal, "internal error; quote the request id when reporting it"},
	} {
		w := httptest.NewRecorder()
		api.WriteError(w, httptest.NewRequest("GET", "/api/v1/x", nil), nil, c.err)
		var p api.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if w.Code != c.status || p.Code != c.code || p.Message != c.message {
			t.Errorf("%v: %d %s %q", c.err, w.Code, p.Code, p.Message)
		}
		if w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%v: %s", c.err, w.Header().Get("Content-Type"))
		}
	}
}
