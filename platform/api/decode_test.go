package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/httpx"
	"github.com/agentbridge/bridge/platform/api"
)

// TestBodyErrorProblem: the platform words a body the toolkit's decoder
// refused as 422 PF-VALIDATION with a diagnostic for each problem at its
// JSON Pointer (the decoder's rules are tested in httpx), another media
// type as a Content-Type parameter problem, and an oversized body as 413.
func TestBodyErrorProblem(t *testing.T) {
	is := is.New(t)
	problem := func(err error) (int, api.Problem) {
		w := httptest.NewRecorder()
		api.WriteError(w, httptest.NewRequest("POST", "/api/v1/x", nil), nil, err)
		var p api.Problem
		is.NoErr(json.Unmarshal(w.Body.Bytes(), &p))
		return w.Code, p
	}
	var dst struct {
		Name string `json:"name" api:"required"`
		N    int8   `json:"n"`
	}
	status, p := problem(httpx.DecodeBytes([]byte(`{"bogus":1,"n":300}`), &dst, httpx.DecodeOptions{Exact: true}))
	is.Equal(status, 422)
	is.Equal(p.Code, api.CodeValidation)
	is.Equal(p.Message, "the request body does not match the contract")
	is.Equal(p.Diagnostics, []api.Diagnostic{
		{Code: "unknown_field", Path: "/bogus", Message: `unknown property "bogus"`},
		{Code: "type", Path: "/n", Message: "must be an integer within range"},
		{Code: "required", Path: "/name", Message: "is required"},
	})

	r := httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "text/plain")
	status, p = problem(httpx.CheckMediaType(r, httpx.DecodeOptions{Exact: true}))
	is.Equal(status, 422)
	is.Equal(p.Diagnostics, []api.Diagnostic{{Code: "invalid", Parameter: "Content-Type", Message: "the request body must be application/json"}})

	status, p = problem(httpx.DecodeJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(`{"name":"xxxxxxxx"}`)), &dst, httpx.DecodeOptions{MaxBytes: 8}))
	is.Equal(status, 413)
	is.Equal(p.Code, api.CodeRequestTooLarge)
}
