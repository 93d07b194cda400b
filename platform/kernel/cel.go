package kernel

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// toCEL converts an IR value into a CEL value. Objects become objectVal,
// whose keys iterate in sorted order: cel-go's own maps iterate in Go map
// order, which would let `m.map(k, k)` differ between two runs of the same
// events.
func toCEL(v any) ref.Val {
	switch x := v.(type) {
	case nil:
		return types.NullValue
	case bool:
		return types.Bool(x)
	case string:
		return types.String(x)
	case int64:
		return types.Int(x)
	case float64:
		return types.Double(x)
	case []any:
		elems := make([]ref.Val, len(x))
		for i, e := range x {
			elems[i] = toCEL(e)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, elems)
	case map[string]any:
		o := &objectVal{keys: make([]string, 0, len(x)), vals: make(map[string]ref.Val, len(x))}
		for k, e := range x {
			o.keys = append(o.keys, k)
			o.vals[k] = toCEL(e)
		}
		sort.Strings(o.keys)
		return o
	}
	return types.NewErr("unsupported value type %T", v)
}

// newObject builds an objectVal from CEL values.
func newObject(vals map[string]ref.Val) *objectVal {
	o := &objectVal{keys: make([]string, 0, len(vals)), vals: vals}
	for k := range vals {
		o.keys = append(o.keys, k)
	}
	sort.Strings(o.keys)
	return o
}

// fromCEL converts a CEL result into IR. Timestamps, durations and bytes
// become strings, as the language specifies.
func fromCEL(v ref.Val, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, errTooDeep
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		if uint64(x) > math.MaxInt64 {
			return float64(x), nil
		}
		return int64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the result %v is not representable in JSON", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString([]byte(x)), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		s := x.ConvertToType(types.StringType)
		if str, ok := s.(types.String); ok {
			return string(str), nil
		}
		return x.Duration.String(), nil
	case *types.Err:
		return nil, x
	case *types.Unknown:
		return nil, errors.New("the result is unknown")
	case *types.Optional:
		if !x.HasValue() {
			return nil, nil
		}
		return fromCEL(x.GetValue(), depth+1)
	case ref.Type:
		return x.TypeName(), nil
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			key, err := mapKey(k)
			if err != nil {
				return nil, err
			}
			e, err := fromCEL(x.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[key] = e
		}
		return out, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		it := x.Iterator()
		for it.HasNext() == types.True {
			e, err := fromCEL(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s value cannot be represented as JSON", v.Type().TypeName())
}

func mapKey(k ref.Val) (string, error) {
	switch x := k.(type) {
	case types.String:
		return string(x), nil
	case types.Int, types.Uint, types.Bool:
		s := x.ConvertToType(types.StringType)
		if str, ok := s.(types.String); ok {
			return string(str), nil
		}
	}
	return "", fmt.Errorf("a map key of type %s cannot be a JSON object key", k.Type().TypeName())
}

// objectVal is a CEL map with string keys that iterates in sorted key
// order.
type objectVal struct {
	keys []string
	vals map[string]ref.Val
}

var (
	_ traits.Mapper = (*objectVal)(nil)
	_ traits.Sizer  = (*objectVal)(nil)
)

func (o *objectVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	m := make(map[ref.Val]ref.Val, len(o.vals))
	for k, v := range o.vals {
		m[types.String(k)] = v
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, m).ConvertToNative(typeDesc)
}

func (o *objectVal) ConvertToType(t ref.Type) ref.Val { return mapConvert(o, t) }

// mapConvert converts a CEL map to a type: only to map, itself.
func mapConvert(m ref.Val, t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

func (o *objectVal) Equal(other ref.Val) ref.Val {
	om, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if om.Size() != types.Int(len(o.keys)) {
		return types.False
	}
	for _, k := range o.keys {
		ov, found := om.Find(types.String(k))
		if !found {
			return types.False
		}
		if eq := o.vals[k].Equal(ov); eq != types.True {
			return eq
		}
	}
	return types.True
}

func (o *objectVal) Type() ref.Type { return types.MapType }

func (o *objectVal) Value() any { return o.vals }

func (o *objectVal) Contains(key ref.Val) ref.Val { return mapContains(o, key) }

func (o *objectVal) Get(key ref.Val) ref.Val { return mapGet(o, key) }

func (o *objectVal) Find(key ref.Val) (ref.Val, bool) {
	s, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	v, ok := o.vals[string(s)]
	return v, ok
}

// finder is a CEL map's lookup; mapContains and mapGet build the rest of
// traits.Mapper on it, for objectVal and stepsObject alike.
type finder interface {
	Find(key ref.Val) (ref.Val, bool)
}

func mapContains(m finder, key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

func mapGet(m finder, key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.ValOrErr(key, "no such key: %v", key)
	}
	return v
}

func (o *objectVal) Size() ref.Val { return types.Int(len(o.keys)) }

func (o *objectVal) Iterator() traits.Iterator { return &keyIterator{keys: o.keys} }

type keyIterator struct {
	keys []string
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return types.String(k)
}

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("iterator cannot be converted")
}

func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("iterator cannot be converted")
}

func (it *keyIterator) Equal(ref.Val) ref.Val { return types.False }

func (it *keyIterator) Type() ref.Type { return types.IteratorType }

func (it *keyIterator) Value() any { return nil }
