package httpx

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Assigning a parsed body to a Go value by reflection, with encoding/json's
// rules for names, tags, embedded structs and the Unmarshaler interfaces,
// collecting a diagnostic for each value that does not fit.

// assigner sets a Go value from a parsed body, collecting diagnostics.
type assigner struct {
	o     DecodeOptions
	diags []BodyDiagnostic
}

func (a *assigner) add(d BodyDiagnostic) {
	if len(a.diags) < maxDiagnostics {
		a.diags = append(a.diags, d)
	}
}

// typeProblem is why a value does not fit its target.
type typeProblem int

const (
	wrongKind   typeProblem = iota // a value of another JSON type
	outOfRange                     // the right JSON type, not representable
	invalid                        // refused by the type's own decoder
	unsupported                    // a target the decoder cannot fill
)

// typeError reports a value at at that does not fit t. The message names
// what the target takes; the toolkit's wording is encoding/json's.
func (a *assigner) typeError(at *loc, t reflect.Type, why typeProblem) {
	msg := "unsupported target type"
	switch {
	case why == invalid:
		msg = "invalid value"
	case why == unsupported:
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		msg = "must be a base64 string"
	default:
		if want := platformKind(t.Kind()); want != "" {
			msg = "must be " + want
			if why == outOfRange {
				msg += " within range"
			}
		}
	}
	field := at.field()
	summary := fmt.Sprintf("field %q must be %s", field, toolkitKind(t.Kind()))
	if why == invalid {
		summary = fmt.Sprintf("field %q has an invalid value", field)
	}
	a.add(BodyDiagnostic{Code: BodyType, Pointer: at.pointer(), Field: field, Message: msg, summary: summary})
}

func platformKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return ""
}

// toolkitKind is what the toolkit's surfaces have always said a target
// takes (as they named encoding/json's UnmarshalTypeError.Type).
func toolkitKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Float64:
		return "a number"
	}
	return "of another type"
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// raw is what a json.Unmarshaler receives: the bytes as sent, or with
// Exact the value re-encoded compactly.
func (a *assigner) raw(n *jnode, data []byte) []byte {
	if a.o.Exact {
		return encodeNode(n)
	}
	return data[n.start:n.end]
}

func (a *assigner) assign(n *jnode, data []byte, v reflect.Value, at *loc) {
	if v.Kind() != reflect.Pointer && v.CanAddr() {
		pv := v.Addr()
		if pv.Type().Implements(unmarshalerType) {
			if err := pv.Interface().(json.Unmarshaler).UnmarshalJSON(a.raw(n, data)); err != nil {
				a.typeError(at, v.Type(), invalid)
			}
			return
		}
		if n.kind == 's' && pv.Type().Implements(textUnmarshalerType) {
			if err := pv.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.str)); err != nil {
				a.typeError(at, v.Type(), invalid)
			}
			return
		}
	}
	if n.kind == 'z' {
		a.assignNull(v, at)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		a.assign(n, data, v.Elem(), at)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			a.typeError(at, v.Type(), unsupported)
			return
		}
		x, ok := toAny(n)
		if !ok {
			a.typeError(at, reflect.TypeFor[float64](), outOfRange)
			return
		}
		v.Set(reflect.ValueOf(x))
	case reflect.Struct:
		a.assignStruct(n, data, v, at)
	case reflect.String:
		if n.kind != 's' {
			a.typeError(at, v.Type(), wrongKind)
			return
		}
		v.SetString(n.str)
	case reflect.Bool:
		if n.kind != 'b' {
			a.typeError(at, v.Type(), wrongKind)
			return
		}
		v.SetBool(n.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		a.assignNumber(n, v, at)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 && (n.kind == 's' || a.o.Exact) {
			if n.kind != 's' {
				a.typeError(at, v.Type(), wrongKind)
				return
			}
			b, err := base64.StdEncoding.DecodeString(n.str)
			if err != nil {
				a.typeError(at, v.Type(), outOfRange)
				return
			}
			v.SetBytes(b)
			return
		}
		if n.kind != 'a' {
			a.typeError(at, v.Type(), wrongKind)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.vals), len(n.vals))
		for i, e := range n.vals {
			a.assign(e, data, s.Index(i), at.elem(i))
		}
		v.Set(s)
	case reflect.Array:
		if n.kind != 'a' {
			a.typeError(at, v.Type(), wrongKind)
			return
		}
		for i := range v.Len() {
			if i < len(n.vals) {
				a.assign(n.vals[i], data, v.Index(i), at.elem(i))
			} else {
				v.Index(i).SetZero()
			}
		}
	case reflect.Map:
		a.assignMap(n, data, v, at)
	default:
		a.typeError(at, v.Type(), unsupported)
	}
}

// assignNumber sets an integer or float: a JSON number that the type
// represents (no fraction or exponent for an integer, within range).
func (a *assigner) assignNumber(n *jnode, v reflect.Value, at *loc) {
	if n.kind != 'n' {
		a.typeError(at, v.Type(), wrongKind)
		return
	}
	s, ok := n.num.String(), false
	switch {
	case v.CanInt():
		i, err := strconv.ParseInt(s, 10, 64)
		if ok = err == nil && !v.OverflowInt(i); ok {
			v.SetInt(i)
		}
	case v.CanUint():
		u, err := strconv.ParseUint(s, 10, 64)
		if ok = err == nil && !v.OverflowUint(u); ok {
			v.SetUint(u)
		}
	default:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if ok = err == nil; ok {
			v.SetFloat(f)
		}
	}
	if !ok {
		a.typeError(at, v.Type(), outOfRange)
	}
}

// assignNull applies null to v: a pointer or interface becomes nil. With
// Exact anything else refuses it; otherwise, as encoding/json does, a map
// or slice becomes nil and any other value is left as it is.
func (a *assigner) assignNull(v reflect.Value, at *loc) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		v.SetZero()
	case reflect.Map, reflect.Slice:
		if a.o.Exact {
			a.typeError(at, v.Type(), wrongKind)
			return
		}
		v.SetZero()
	default:
		if a.o.Exact {
			a.typeError(at, v.Type(), wrongKind)
		}
	}
}

func (a *assigner) assignMap(n *jnode, data []byte, v reflect.Value, at *loc) {
	kt := v.Type().Key()
	textKey := reflect.PointerTo(kt).Implements(textUnmarshalerType)
	switch kt.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		if !textKey {
			a.typeError(at, v.Type(), unsupported)
			return
		}
	}
	if n.kind != 'o' {
		a.typeError(at, v.Type(), wrongKind)
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(n.keys)))
	}
	for i, k := range n.keys {
		child := at.child(k)
		key, ok := mapKey(kt, k, textKey)
		if !ok {
			a.typeError(child, kt, outOfRange)
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		a.assign(n.vals[i], data, e, child)
		v.SetMapIndex(key, e)
	}
}

// mapKey converts an object key to a map's key type, as encoding/json
// does: a string kind as is, a TextUnmarshaler by its text, an integer by
// its decimal form.
func mapKey(kt reflect.Type, k string, textKey bool) (reflect.Value, bool) {
	switch {
	case kt.Kind() == reflect.String && !textKey:
		return reflect.ValueOf(k).Convert(kt), true
	case textKey:
		kv := reflect.New(kt)
		if err := kv.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(k)); err != nil {
			return reflect.Value{}, false
		}
		return kv.Elem(), true
	}
	kv := reflect.New(kt).Elem()
	switch kt.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(k, 10, 64)
		if err != nil || kv.OverflowInt(i) {
			return reflect.Value{}, false
		}
		kv.SetInt(i)
	default:
		u, err := strconv.ParseUint(k, 10, 64)
		if err != nil || kv.OverflowUint(u) {
			return reflect.Value{}, false
		}
		kv.SetUint(u)
	}
	return kv, true
}

// field is a decodable struct field.
type field struct {
	name     string
	index    []int
	typ      reflect.Type
	required bool
}

// structFields lists the JSON fields of t: exported, not tagged "-",
// the fields of untagged embedded structs promoted (a shallower field
// hides a deeper one of the same name, as in encoding/json).
func structFields(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	fs, _ := fieldCache.LoadOrStore(t, listFields(t))
	return fs.([]field)
}

// fieldCache holds structFields' answer per type: it depends on the type
// alone, and a request decodes the same few types again and again.
var fieldCache sync.Map // reflect.Type -> []field

func listFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for _, f := range listFields(ft) {
					f.index = append([]int{i}, f.index...)
					out = append(out, f)
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, field{name: name, index: []int{i}, typ: sf.Type, required: hasTagOption(sf.Tag.Get("api"), "required")})
	}
	// Keep the shallowest field of each name, in declaration order.
	keep := out[:0]
	for _, f := range out {
		if j := slices.IndexFunc(keep, func(k field) bool { return k.name == f.name }); j >= 0 {
			if len(f.index) < len(keep[j].index) {
				keep[j] = f
			}
			continue
		}
		keep = append(keep, f)
	}
	return keep
}

func hasTagOption(tag, opt string) bool {
	return slices.Contains(strings.Split(tag, ","), opt)
}

// lookup finds the field named k: exactly, or without Exact also by
// case-folded name as encoding/json matches.
func (a *assigner) lookup(fields []field, k string) *field {
	for i := range fields {
		if fields[i].name == k {
			return &fields[i]
		}
	}
	if !a.o.Exact {
		for i := range fields {
			if strings.EqualFold(fields[i].name, k) {
				return &fields[i]
			}
		}
	}
	return nil
}

// fieldByIndex is v's field at index, allocating embedded struct
// pointers on the way; ok is false when one cannot be set (an unexported
// embedded pointer).
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

func (a *assigner) assignStruct(n *jnode, data []byte, v reflect.Value, at *loc) {
	if n.kind != 'o' {
		a.typeError(at, v.Type(), wrongKind)
		return
	}
	fields := structFields(v.Type())
	var present map[string]bool // of the required fields, when any
	for i, k := range n.keys {
		child := at.child(k)
		f := a.lookup(fields, k)
		if f == nil {
			if !a.o.AllowUnknown {
				a.add(BodyDiagnostic{Code: BodyUnknownField, Pointer: child.pointer(), Field: child.field(),
					Message: fmt.Sprintf("unknown property %q", k), summary: fmt.Sprintf("unknown field %q", child.field())})
			}
			continue
		}
		if f.required {
			if present == nil {
				present = map[string]bool{}
			}
			present[f.name] = true
		}
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			a.typeError(child, f.typ, unsupported)
			continue
		}
		a.assign(n.vals[i], data, fv, child)
	}
	for _, f := range fields {
		if f.required && !present[f.name] {
			child := at.child(f.name)
			a.add(BodyDiagnostic{Code: BodyRequired, Pointer: child.pointer(), Field: child.field(),
				Message: "is required", summary: fmt.Sprintf("field %q is required", child.field())})
		}
	}
}

// toAny converts a node the way encoding/json fills an interface{};
// ok is false for a number beyond float64.
func toAny(n *jnode) (any, bool) {
	switch n.kind {
	case 'o':
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			v, ok := toAny(n.vals[i])
			if !ok {
				return nil, false
			}
			m[k] = v
		}
		return m, true
	case 'a':
		s := make([]any, len(n.vals))
		for i, e := range n.vals {
			v, ok := toAny(e)
			if !ok {
				return nil, false
			}
			s[i] = v
		}
		return s, true
	case 's':
		return n.str, true
	case 'n':
		f, err := n.num.Float64()
		return f, err == nil
	case 'b':
		return n.b, true
	}
	return nil, true
}
