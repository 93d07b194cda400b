package lang

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"
)

// Schema walking shared by the compiler and the kernel: the compiler maps a
// schema position to the CEL type its expressions are checked against, and
// the kernel gives a value at run time the number types of that same
// mapping (docs/workflow-language.md, "Types"). Both read a position with
// SchemaType and CELFieldNames, so they cannot disagree.

// SchemaType is the one JSON type the mapping gives the schema object m:
// "string", "integer", "number", "boolean", "array", "object", "null" (only
// null allowed), another name (unknown), or "" when it gives none (no type,
// or several: dyn). nullable reports that null is allowed too. The type
// comes from "type", else from const/enum when all their values share one
// JSON type, else "object" when there are properties. allOf reports that m
// has none of these and exactly one allOf member, whose type is m's: the
// caller follows m["allOf"][0] instead.
func SchemaType(m map[string]any) (name string, nullable, allOf bool) {
	var names []string
	switch t := m["type"].(type) {
	case string:
		names = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
	}
	if names == nil {
		var vals []any
		if c, ok := m["const"]; ok {
			vals = []any{c}
		} else if e, ok := m["enum"].([]any); ok {
			vals = e
		}
		seen := map[string]bool{}
		for _, x := range vals {
			seen[JSONTypeName(x)] = true
		}
		if len(seen) == 1 {
			for k := range seen {
				names = []string{k}
			}
		}
		if names == nil {
			if _, ok := m["properties"]; ok {
				names = []string{"object"}
			} else if all, ok := m["allOf"].([]any); ok && len(all) == 1 {
				return "", false, true
			}
		}
	}
	var nonNull []string
	for _, t := range names {
		if t == "null" {
			nullable = true
		} else {
			nonNull = append(nonNull, t)
		}
	}
	if len(nonNull) == 2 && contains(nonNull, "integer") && contains(nonNull, "number") {
		nonNull = []string{"number"}
	}
	if len(nonNull) != 1 {
		if nullable && len(nonNull) == 0 {
			return "null", true, false
		}
		return "", nullable, false
	}
	return nonNull[0], nullable, false
}

// CELFieldNames reports whether every property name can be a field of a CEL
// struct: an identifier CEL does not reserve. An object schema with other
// names maps to a map, whose members are read as x["first-name"].
func CELFieldNames(props map[string]any) bool {
	for k := range props {
		if !identRE.MatchString(k) || contains(celReserved, k) {
			return false
		}
	}
	return true
}

// JSONTypeName is the JSON Schema type name of a decoded JSON value
// (integral doubles count as integers, as JSON Schema says).
func JSONTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64, int:
		return "integer"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// DecodeJSONSchema decodes a JSON Schema document for the validator; an
// empty raw is no schema (nil).
func DecodeJSONSchema(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
		return doc, nil
	}
	return nil, errors.New("a JSON Schema must be an object or a boolean")
}

// ValidationLeaves returns the innermost causes of a validation error,
// which carry the specific messages.
func ValidationLeaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, ValidationLeaves(c)...)
	}
	return out
}

// ValidationMessage renders one validation failure. The validator collects
// some lists while ranging over maps; sorting them keeps messages
// deterministic (a message can end up in a run's error, which must be the
// same on every replay).
func ValidationMessage(p *message.Printer, ve *jsonschema.ValidationError) string {
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		sort.Strings(k.Properties)
	case *kind.Required:
		sort.Strings(k.Missing)
	case *kind.Dependency:
		sort.Strings(k.Missing)
	case *kind.DependentRequired:
		sort.Strings(k.Missing)
	}
	return ve.ErrorKind.LocalizedString(p)
}

// JSONPointer joins path segments into a JSON Pointer (RFC 6901).
func JSONPointer(segs []string) string {
	p := ""
	for _, s := range segs {
		p = joinPath(p, s)
	}
	return p
}
