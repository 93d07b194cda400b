package activation

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/auth"
)

// Limits of an ActivationRequest and a retirement request.
const (
	MaxInputDefaultsBytes = 64 << 10
	MaxBindings           = 100
	MaxBindingNameLen     = 200
	MaxNameLen            = 200
	MaxReasonLen          = 2000
)

// checkRequest applies the ActivationRequest rules that need no stored
// state and returns the input defaults in compact form ("{}" when absent).
func checkRequest(req *Request) (json.RawMessage, error) {
	if !auth.IsCanonicalUUID(req.PublishedVersionID) {
		return nil, api.Invalid("/published_version_id", "published_version_id must be a canonical lowercase UUID")
	}
	if utf8.RuneCountInString(req.Name) > MaxNameLen {
		return nil, api.Invalid("/name", "name has at most %d characters", MaxNameLen)
	}
	if len(req.ConnectionBindings) > MaxBindings {
		return nil, api.Invalid("/connection_bindings", "at most %d connection bindings are accepted", MaxBindings)
	}
	for name, conn := range req.ConnectionBindings {
		path := "/connection_bindings/" + escapePointer(name)
		if name == "" || utf8.RuneCountInString(name) > MaxBindingNameLen {
			return nil, api.Invalid(path, "a binding name has 1 to %d characters", MaxBindingNameLen)
		}
		if !auth.IsCanonicalUUID(conn) {
			return nil, api.Invalid(path, "a connection id must be a canonical lowercase UUID")
		}
	}
	raw := bytes.TrimSpace(req.InputDefaults)
	if len(raw) == 0 {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		return nil, api.Invalid("/input_defaults", "input_defaults must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, api.Invalid("/input_defaults", "input_defaults must be a JSON object")
	}
	if buf.Len() > MaxInputDefaultsBytes {
		return nil, api.Invalid("/input_defaults", "input_defaults has %d bytes; at most %d are accepted", buf.Len(), MaxInputDefaultsBytes)
	}
	return buf.Bytes(), nil
}

// checkRetirement applies the retirement request rules.
func checkRetirement(req *RetirementRequest) error {
	if utf8.RuneCountInString(req.Reason) > MaxReasonLen {
		return api.Invalid("/reason", "reason has at most %d characters", MaxReasonLen)
	}
	return nil
}

// escapePointer escapes a JSON Pointer segment (RFC 6901).
func escapePointer(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
