package lang

import (
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
	name, nullable, viaAllOf := SchemaType(m)
	if viaAllOf {
		return ss.celTypeDepth(sview{doc: r.doc, ptr: r.ptr + "/allOf/0", v: m["allOf"].([]any)[0]}, label, depth+1)
	}
	var t *types.Type
	switch name {
	case "null":
		return types.NullType
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
	if !CELFieldNames(props) {
		// Such members cannot be selected with "."; a map keeps them
		// reachable as x["first-name"].
		return types.NewMapType(types.StringType, types.DynType)
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
