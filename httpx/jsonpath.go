package httpx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// pathFrame is an object or array being walked.
type pathFrame struct {
	path  string
	start int64        // offset before the opening delimiter
	t     reflect.Type // unknownFieldPath: the Go type decoded into, nil when not checked
	obj   bool
	key   string // object: the last key read
	isKey bool   // object: the next string token is a key
	index int    // array: the index of the next element
}

// pathStack tracks where a token walk over JSON is.
type pathStack []*pathFrame

func (s pathStack) top() *pathFrame {
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

// child is the path of the value about to be read.
func (s pathStack) child() string {
	f := s.top()
	switch {
	case f == nil:
		return ""
	case !f.obj:
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	case f.path == "":
		return f.key
	}
	return f.path + "." + f.key
}

// done moves the enclosing frame past the value just read.
func (s pathStack) done() {
	if f := s.top(); f != nil {
		if f.obj {
			f.isKey = true
		} else {
			f.index++
		}
	}
}

// key records tok as the current key when one is expected.
func (s pathStack) key(tok json.Token) bool {
	f := s.top()
	if f == nil || !f.obj || !f.isKey {
		return false
	}
	k, ok := tok.(string)
	if ok {
		f.key, f.isKey = k, false
	}
	return ok
}

// pathAt names the innermost value of data that contains byte offset, as
// a.b[2].c: where a json.UnmarshalTypeError happened. The error's own Field
// names struct fields only, so a wrong value inside a map or array was
// blamed on the map or array itself ("metadata" for {"metadata":{"k":1}}).
// It returns "" when data cannot be walked to offset.
func pathAt(data []byte, offset int64) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack pathStack
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		after := dec.InputOffset()
		if stack.key(tok) {
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, &pathFrame{path: stack.child(), start: before, obj: tok == json.Delim('{'), isKey: true})
		case json.Delim('}'), json.Delim(']'):
			f := stack.top()
			stack = stack[:len(stack)-1]
			if f.start < offset && offset <= after {
				return f.path
			}
			stack.done()
		default:
			if before < offset && offset <= after {
				return stack.child()
			}
			stack.done()
		}
	}
}

// unknownFieldPath names the first property of data, in document order,
// that dst's type does not declare and that is called name: encoding/json
// reports an unknown field by its name alone, so a nested one
// ({"filters":[{"bogus":1}]}) was named as if it were at the top. It
// returns "" when there is no such property.
func unknownFieldPath(data []byte, dst any, name string) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack pathStack
	childType := func() reflect.Type {
		f := stack.top()
		switch {
		case f == nil:
			return reflect.TypeOf(dst)
		case f.t == nil:
			return nil
		case f.t.Kind() == reflect.Struct:
			t, _ := structFields(f.t).get(f.key)
			return t
		case f.t.Kind() == reflect.Map, f.t.Kind() == reflect.Slice, f.t.Kind() == reflect.Array:
			return f.t.Elem()
		}
		return nil
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if stack.key(tok) {
			if f := stack.top(); f.key == name && f.t != nil && f.t.Kind() == reflect.Struct {
				if _, known := structFields(f.t).get(name); !known {
					return stack.child()
				}
			}
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, &pathFrame{path: stack.child(), t: checked(childType()), obj: tok == json.Delim('{'), isKey: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			stack.done()
		default:
			stack.done()
		}
	}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checked returns the type whose properties encoding/json checks, nil for
// one it does not look into (an interface, a json.Unmarshaler).
func checked(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		if t.Implements(unmarshalerType) {
			return nil
		}
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// structFields maps the JSON names of t's fields, embedded structs'
// included, to their types. Names match case-insensitively, as in
// encoding/json, so each is stored as written and the lookup folds.
func structFields(t reflect.Type) foldMap {
	out := foldMap{}
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
				for k, v := range structFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
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
		out[name] = sf.Type
	}
	return out
}

// foldMap is a map of JSON names whose lookups fold case.
type foldMap map[string]reflect.Type

func (m foldMap) get(k string) (reflect.Type, bool) {
	if t, ok := m[k]; ok {
		return t, true
	}
	for n, t := range m {
		if strings.EqualFold(n, k) {
			return t, true
		}
	}
	return nil, false
}
