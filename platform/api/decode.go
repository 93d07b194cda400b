package api

import (
	"net/http"

	"github.com/agentbridge/bridge/httpx"
)

// bodyRules are the platform's rules for a request body
// (docs/platform-api.md, "Shared rules"): the toolkit's strict decoder in
// its Exact form, names matched exactly and null only where a pointer
// takes it.
var bodyRules = httpx.DecodeOptions{Exact: true}

// DecodeBytes decodes JSON the platform receives by its body rules: a
// request body, or JSON inside a message that follows the same contract
// (the debug channel's commands, mock outcomes, test-data documents).
func DecodeBytes(data []byte, dst any) error { return httpx.DecodeBytes(data, dst, bodyRules) }

// bodyError is the platform's answer to a body the toolkit refused (key
// is the toolkit's code of it): 413 PF-REQUEST-TOO-LARGE over the limit,
// 422 PF-VALIDATION naming the Content-Type header for another media type,
// and otherwise 422 PF-VALIDATION with a diagnostic for each problem at
// its JSON Pointer.
func bodyError(be *httpx.BodyError, key string) *Error {
	m := errorTable.Lookup(key)
	switch {
	case m.Status == http.StatusRequestEntityTooLarge:
		return &Error{Code: m.Code, Message: be.Msg, row: key}
	case be.Kind == httpx.BodyContentType:
		return InvalidParameter(CodeValidation, "Content-Type", "the request body must be application/json")
	}
	var diags []Diagnostic
	for _, d := range be.Diagnostics {
		diags = append(diags, Diagnostic{Code: d.Code, Path: d.Pointer, Message: d.Message})
	}
	if len(diags) == 0 { // a refusal the decoder did not place (an unreadable body)
		d := Diagnostic{Code: be.Kind, Message: be.Msg}
		if be.Field != "" {
			d.Path = "/" + be.Field
		}
		diags = []Diagnostic{d}
	}
	return &Error{Code: m.Code, Message: "the request body does not match the contract", Diagnostics: diags, row: key}
}
