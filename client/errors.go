package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error is an error answer of the daemon in any of its surfaces' shapes:
// problem+json (platform, callbacks, ingest, factory) or the bridge API's
// {"error":{"code":...,"message":...}} (docs/bridge-api.md).
type Error struct {
	Status int
	Code   string
	// Message is the answer's message followed by the diagnostics that
	// say where (a body path or a parameter) or add to it.
	Message string
	// Header is the answer's headers (Retry-After, ...).
	Header http.Header
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// DecodeError reads an error answer's body: the bridge's {"error":{...}},
// a problem (code, message and diagnostics; else title and detail), or
// the text itself.
func DecodeError(status int, data []byte) *Error {
	var shapes struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Code        string `json:"code"`
		Message     string `json:"message"`
		Title       string `json:"title"`
		Detail      string `json:"detail"`
		Diagnostics []struct {
			Message   string `json:"message"`
			Path      string `json:"path"`
			Parameter string `json:"parameter"`
			Field     string `json:"field"`
		} `json:"diagnostics"`
	}
	_ = json.Unmarshal(data, &shapes)
	e := &Error{Status: status}
	switch {
	case shapes.Error != nil:
		e.Code, e.Message = shapes.Error.Code, shapes.Error.Message
	case shapes.Code != "":
		e.Code, e.Message = shapes.Code, shapes.Message
		for _, d := range shapes.Diagnostics {
			switch {
			case d.Path != "":
				e.Message += fmt.Sprintf("; %s: %s", d.Path, d.Message)
			case d.Parameter != "":
				e.Message += fmt.Sprintf("; %s: %s", d.Parameter, d.Message)
			case d.Field == "" && d.Message != "" && !strings.Contains(e.Message, d.Message):
				// a field diagnostic repeats the message it belongs to
				e.Message += "; " + d.Message
			}
		}
	case shapes.Message != "":
		e.Message = shapes.Message
	case shapes.Detail != "" || shapes.Title != "":
		e.Message = strings.TrimSpace(shapes.Title + ": " + shapes.Detail)
	default:
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
	}
	return e
}
