package kernel

import (
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// stepsObject is the steps variable of one scope: a CEL map from step id
// to {"output": …} over the outputs of the scope and its enclosing scopes.
// A member is looked up (and decoded, once, through the state's memo) when
// an expression reads it; only iterating or comparing the whole map builds
// it. It reads the state as it is when the expression runs: expressions
// are evaluated as soon as their activation is built, before the state
// changes again.
type stepsObject struct {
	m     *machine
	scope string
}

var (
	_ traits.Mapper = (*stepsObject)(nil)
	_ traits.Sizer  = (*stepsObject)(nil)
)

// find looks step up from the innermost scope outwards (step ids are
// unique, so at most one scope holds it).
func (o *stepsObject) find(step string) (ref.Val, bool) {
	st := o.m.st
	for key := o.scope; ; {
		sc := st.Scopes[key]
		if sc == nil {
			return nil, false
		}
		if raw, ok := sc.Outputs[step]; ok {
			return o.m.memo().outputVal(key, step, raw), true
		}
		if key == "" {
			return nil, false
		}
		key = sc.Parent
	}
}

// object builds the whole map, outer scopes first so that the innermost
// output of a step wins.
func (o *stepsObject) object() *objectVal {
	st := o.m.st
	var chain []string
	for key := o.scope; ; {
		chain = append(chain, key)
		sc := st.Scopes[key]
		if key == "" || sc == nil {
			break
		}
		key = sc.Parent
	}
	memo := o.m.memo()
	vals := map[string]ref.Val{}
	for i := len(chain) - 1; i >= 0; i-- {
		sc := st.Scopes[chain[i]]
		if sc == nil {
			continue
		}
		for step, raw := range sc.Outputs {
			vals[step] = memo.outputVal(chain[i], step, raw)
		}
	}
	return newObject(vals)
}

func (o *stepsObject) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return o.object().ConvertToNative(typeDesc)
}

func (o *stepsObject) ConvertToType(t ref.Type) ref.Val { return mapConvert(o, t) }

func (o *stepsObject) Equal(other ref.Val) ref.Val { return o.object().Equal(other) }

func (o *stepsObject) Type() ref.Type { return types.MapType }

func (o *stepsObject) Value() any { return o.object().Value() }

func (o *stepsObject) Contains(key ref.Val) ref.Val { return mapContains(o, key) }

func (o *stepsObject) Get(key ref.Val) ref.Val { return mapGet(o, key) }

func (o *stepsObject) Find(key ref.Val) (ref.Val, bool) {
	s, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return o.find(string(s))
}

func (o *stepsObject) Size() ref.Val { return o.object().Size() }

func (o *stepsObject) Iterator() traits.Iterator { return o.object().Iterator() }
