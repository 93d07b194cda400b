package lang

import (
	"fmt"
	"sort"
	"sync"

	"cel.dev/cel-go/common/types"
)

// typeRegistry is the CEL type provider of one compilation. JSON Schema
// objects with named properties become CEL struct types, so that
// input.custmer is a type error at compile time. Struct names have the form
// "object<input.customer>": the angle brackets keep them from ever matching a
// qualified identifier in an expression.
//
// At run time the values are plain JSON maps; field selection on maps gives
// the same results, so kernels can evaluate the expressions without this
// provider.
//
// The expression checkers run on worker goroutines while the compiler goes
// on walking the document and defining struct types, so structs is read
// and written under mu; a structInfo never changes once defined.
type typeRegistry struct {
	*types.Registry
	mu      sync.RWMutex
	structs map[string]*structInfo
}

// lookup answers the struct type named name (nil: not one of ours).
func (r *typeRegistry) lookup(name string) *structInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.structs[name]
}

type structInfo struct {
	name     string
	fields   map[string]*types.Type
	names    []string // sorted
	required map[string]bool
}

func newTypeRegistry() (*typeRegistry, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, fmt.Errorf("create CEL type registry: %w", err)
	}
	return &typeRegistry{Registry: reg, structs: map[string]*structInfo{}}, nil
}

// FindStructType implements types.Provider.
func (r *typeRegistry) FindStructType(name string) (*types.Type, bool) {
	if r.lookup(name) != nil {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return r.Registry.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (r *typeRegistry) FindStructFieldNames(name string) ([]string, bool) {
	if s := r.lookup(name); s != nil {
		return append([]string(nil), s.names...), true
	}
	return r.Registry.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (r *typeRegistry) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if s := r.lookup(name); s != nil {
		t, ok := s.fields[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return r.Registry.FindStructFieldType(name, field)
}

// defineStruct registers a struct type under a unique name derived from label.
func (r *typeRegistry) defineStruct(label string, fields map[string]*types.Type, required map[string]bool) *types.Type {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := "object<" + label + ">"
	for i := 2; r.structs[name] != nil; i++ {
		name = fmt.Sprintf("object<%s#%d>", label, i)
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	if required == nil {
		required = map[string]bool{}
	}
	r.structs[name] = &structInfo{name: name, fields: fields, names: names, required: required}
	return types.NewObjectType(name)
}

// assignable reports whether a value of type got may be stored where a value
// of type want is expected once both are seen as JSON. It is deliberately
// lenient where CEL cannot know (dyn, maps of dyn) and strict where it can.
func (r *typeRegistry) assignable(got, want *types.Type, depth int) bool {
	return r.assignableMemo(got, want, depth, map[[2]string]bool{})
}

// assignableMemo remembers struct pairs already compared (or being
// compared): types derived from schemas share structs, and without the memo
// comparing two wide, deep types would take exponential time.
func (r *typeRegistry) assignableMemo(got, want *types.Type, depth int, memo map[[2]string]bool) bool {
	if got == nil || want == nil || depth > MaxNestingDepth {
		return true
	}
	if got.Kind() == types.StructKind && want.Kind() == types.StructKind {
		key := [2]string{got.TypeName(), want.TypeName()}
		if ok, seen := memo[key]; seen {
			return ok
		}
		memo[key] = true // assume so while comparing (recursive types)
		ok := r.assignableStep(got, want, depth, memo)
		memo[key] = ok
		return ok
	}
	return r.assignableStep(got, want, depth, memo)
}

func (r *typeRegistry) assignableStep(got, want *types.Type, depth int, memo map[[2]string]bool) bool {
	gk, wk := got.Kind(), want.Kind()
	if wk == types.DynKind || wk == types.AnyKind || gk == types.DynKind || gk == types.AnyKind ||
		gk == types.ErrorKind || wk == types.TypeParamKind || gk == types.TypeParamKind {
		return true
	}
	if gk == types.NullTypeKind {
		return wk == types.NullTypeKind || want.IsAssignableType(types.NullType)
	}
	switch wk {
	case types.DoubleKind:
		// JSON has one number type: integers are fine where numbers are expected.
		return gk == types.DoubleKind || gk == types.IntKind || gk == types.UintKind
	case types.IntKind:
		return gk == types.IntKind || gk == types.UintKind
	case types.StringKind:
		// Timestamps, durations and bytes serialise to JSON strings.
		return gk == types.StringKind || gk == types.TimestampKind || gk == types.DurationKind || gk == types.BytesKind
	case types.ListKind:
		if gk != types.ListKind {
			return false
		}
		return r.assignableMemo(param(got, 0), param(want, 0), depth+1, memo)
	case types.MapKind:
		switch gk {
		case types.MapKind:
			return r.assignableMemo(param(got, 1), param(want, 1), depth+1, memo)
		case types.StructKind:
			gs := r.lookup(got.TypeName())
			if gs == nil {
				return true
			}
			for _, f := range gs.names {
				if !r.assignableMemo(gs.fields[f], param(want, 1), depth+1, memo) {
					return false
				}
			}
			return true
		}
		return false
	case types.StructKind:
		ws := r.lookup(want.TypeName())
		switch gk {
		case types.MapKind:
			return true // a map's keys are not known statically
		case types.StructKind:
			if ws == nil || got.TypeName() == want.TypeName() {
				return true
			}
			gs := r.lookup(got.TypeName())
			if gs == nil {
				return true
			}
			for _, f := range ws.names {
				gt, ok := gs.fields[f]
				if !ok {
					if ws.required[f] && !gs.required[f] {
						return false
					}
					continue
				}
				if !r.assignableMemo(gt, ws.fields[f], depth+1, memo) {
					return false
				}
			}
			return true
		}
		return false
	}
	return gk == wk
}

// missingRequired lists the required fields of want that got lacks, for
// messages.
func (r *typeRegistry) missingRequired(got, want *types.Type) []string {
	ws, gs := r.lookup(want.TypeName()), r.lookup(got.TypeName())
	if ws == nil || gs == nil {
		return nil
	}
	var out []string
	for _, f := range ws.names {
		if _, ok := gs.fields[f]; !ok && ws.required[f] {
			out = append(out, f)
		}
	}
	return out
}

func param(t *types.Type, i int) *types.Type {
	ps := t.Parameters()
	if i < len(ps) {
		return ps[i]
	}
	return types.DynType
}

// typeString renders a CEL type for messages.
func typeString(t *types.Type) string {
	if t == nil {
		return "dyn"
	}
	return t.String()
}
