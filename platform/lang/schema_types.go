package lang

import (
	"encoding/json"
	"sort"

	"cel.dev/cel-go/common/types"
)

// celType derives the CEL type of values described by a schema. Objects
// whose property names are all identifiers become struct types; other
// objects become maps; anything the mapping cannot express is dyn.
func (ss *schemaSet) celType(v sview, label string) *types.Type {
	return ss.celTypeDepth(v, label, 0)
}

func (ss *schemaSet) celTypeDepth(v sview, label string, depth int) *types.Type {
	if depth > 16 {
		return types.DynType
	}
	r := ss.resolve(v)
	m := r.obj()
	if m == nil {
		return types.DynType
	}
	key := r.doc.url + "#" + r.ptr
	if t, ok := ss.typed[key]; ok {
		return t
	}
	// A recursive schema refers to itself: the inner occurrence is dyn.
	// Marking before deriving also keeps the work linear in the schema's
	// size however often parts are referenced.
	ss.typed[key] = types.DynType
	t := ss.deriveType(r, m, label, depth)
	ss.typed[key] = t
	return t
}

func (ss *schemaSet) deriveType(r sview, m map[string]any, label string, depth int) *types.Type {
	var typeNames []string
	switch t := m["type"].(type) {
	case string:
		typeNames = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				typeNames = append(typeNames, s)
			}
		}
	}
	if typeNames == nil {
		// Infer from const/enum when every value has the same JSON type.
		var vals []any
		if c, ok := m["const"]; ok {
			vals = []any{c}
		} else if e, ok := m["enum"].([]any); ok {
			vals = e
		}
		seen := map[string]bool{}
		for _, x := range vals {
			seen[jsonTypeName(x)] = true
		}
		if len(seen) == 1 {
			for k := range seen {
				typeNames = []string{k}
			}
		}
		if typeNames == nil {
			if _, ok := m["properties"]; ok {
				typeNames = []string{"object"}
			} else if all, ok := m["allOf"].([]any); ok && len(all) == 1 {
				return ss.celTypeDepth(sview{doc: r.doc, ptr: r.ptr + "/allOf/0", v: all[0]}, label, depth+1)
			}
		}
	}
	nullable := false
	var nonNull []string
	for _, t := range typeNames {
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
			return types.NullType
		}
		return types.DynType
	}
	var t *types.Type
	switch nonNull[0] {
	case "string":
		t = types.StringType
	case "integer":
		t = types.IntType
	case "number":
		t = types.DoubleType
	case "boolean":
		t = types.BoolType
	case "array":
		it := ss.items(r)
		elem := types.DynType
		if it.known() {
			elem = ss.celTypeDepth(it, label+"[]", depth+1)
		}
		t = types.NewListType(elem)
	case "object":
		t = ss.objectType(r, m, label, depth)
	default:
		return types.DynType
	}
	if nullable {
		switch t.Kind() {
		case types.StringKind, types.IntKind, types.DoubleKind, types.BoolKind:
			return types.NewNullableType(t)
		}
		return types.DynType
	}
	return t
}

func (ss *schemaSet) objectType(r sview, m map[string]any, label string, depth int) *types.Type {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		if ap, ok := m["additionalProperties"].(map[string]any); ok && ap != nil {
			return types.NewMapType(types.StringType, ss.celTypeDepth(r.child("additionalProperties"), label+"[*]", depth+1))
		}
		return types.NewMapType(types.StringType, types.DynType)
	}
	for k := range props {
		if !identRE.MatchString(k) || contains(celReserved, k) {
			// Such members cannot be selected with "."; a map keeps them
			// reachable as x["first-name"].
			return types.NewMapType(types.StringType, types.DynType)
		}
	}
	fields := make(map[string]*types.Type, len(props))
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fields[k] = ss.celTypeDepth(r.child("properties", k), label+"."+k, depth+1)
	}
	req := map[string]bool{}
	for _, k := range ss.required(r) {
		req[k] = true
	}
	return ss.reg.defineStruct(label, fields, req)
}

func jsonTypeName(v any) string {
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
