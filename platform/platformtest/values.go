package platformtest

import "encoding/json"

// Value makes a value valid for the common JSON Schemas of the language
// reference's examples (schema decoded as any): const and enum take their
// first value, objects get every property except optional secret-marked
// ones (x-secret, writeOnly: simulations refuse secret values), arrays two
// items.
func Value(schema any) any { return value(schema, 0) }

// ValueJSON is Value encoded.
func ValueJSON(schema any) json.RawMessage {
	b, _ := json.Marshal(Value(schema))
	return b
}

func value(s any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > 8 {
		return "x"
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := m["type"].(string)
	if l, ok := m["type"].([]any); ok && len(l) > 0 {
		typ, _ = l[0].(string)
	}
	if typ == "" && m["properties"] != nil {
		typ = "object"
	}
	switch typ {
	case "string":
		switch m["pattern"] {
		case `^[A-Z]{3}$`:
			return "EUR"
		case `^tok_[a-z0-9]+$`:
			return "tok_abc"
		}
		return "x"
	case "integer":
		if min, ok := m["minimum"].(float64); ok {
			return int(min)
		}
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "array":
		return []any{value(m["items"], depth+1), value(m["items"], depth+1)}
	case "object":
		out := map[string]any{}
		required := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, k := range r {
				if s, ok := k.(string); ok {
					required[s] = true
				}
			}
		}
		props, _ := m["properties"].(map[string]any)
		for k, pv := range props {
			if p, ok := pv.(map[string]any); ok && !required[k] && (p["x-secret"] == true || p["writeOnly"] == true) {
				continue
			}
			out[k] = value(pv, depth+1)
		}
		return out
	}
	return "x"
}
