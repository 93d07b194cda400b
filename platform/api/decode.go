package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbridge/bridge/httpx"
)

// Limits of DecodeStrict.
const (
	maxDecodeDepth       = 64
	maxDecodeDiagnostics = 20
)

// DecodeStrict decodes a JSON body into dst (a pointer) by the platform's
// rules: exactly one JSON value in valid UTF-8 without lone surrogate
// escapes, no duplicate object keys, no property the
// target does not declare (names match exactly, not case-insensitively),
// every value of the declared type (no null except for pointers and any),
// integers within range, and every field tagged `api:"required"` present.
// Failures are 422 PF-VALIDATION whose diagnostics carry the JSON Pointer
// (RFC 6901) of each offending field; a syntax error is reported alone.
//
// Types implementing json.Unmarshaler receive their raw value.
func DecodeStrict(data []byte, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("api: DecodeStrict needs a non-nil pointer, got %T", dst)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return bodyInvalid(Diagnostic{Code: "empty", Path: "", Message: "a JSON request body is required"})
	}
	root, err := parseJSON(data)
	if err != nil {
		return err
	}
	// What encoding/json would silently replace with U+FFFD is refused
	// (docs/platform-api.md, "Shared rules"); duplicate keys were refused
	// above, with their JSON Pointer.
	if err := httpx.CheckJSON(data); err != nil {
		var je *httpx.JSONError
		if !errors.As(err, &je) {
			return err
		}
		return bodyInvalid(Diagnostic{Code: "encoding", Message: fmt.Sprintf("%s at byte %d", je.Reason, je.Offset)})
	}
	d := &decoder{}
	d.assign(root, rv.Elem(), "")
	if len(d.diags) > 0 {
		return bodyInvalid(d.diags...)
	}
	return nil
}

func bodyInvalid(diags ...Diagnostic) *Error {
	return &Error{Code: CodeValidation, Message: "the request body does not match the contract", Diagnostics: diags}
}

// jnode is a parsed JSON value that keeps object keys in order.
type jnode struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*jnode // object values, or array elements
	str  string
	num  json.Number
	b    bool
}

type parser struct{ dec *json.Decoder }

func parseJSON(data []byte) (*jnode, error) {
	p := &parser{dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	n, err := p.value(0, "")
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, bodyInvalid(Diagnostic{Code: "trailing", Message: "the body has data after its JSON value"})
	}
	return n, nil
}

func syntaxError(err error) *Error {
	var se *json.SyntaxError
	msg := "malformed JSON"
	if errors.As(err, &se) {
		msg = fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "truncated JSON"
	}
	return bodyInvalid(Diagnostic{Code: "syntax", Message: msg})
}

func (p *parser) value(depth int, path string) (*jnode, error) {
	if depth > maxDecodeDepth {
		return nil, bodyInvalid(Diagnostic{Code: "depth", Path: path, Message: fmt.Sprintf("nesting deeper than %d levels", maxDecodeDepth)})
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &jnode{kind: 'o'}
			seen := map[string]bool{}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, syntaxError(err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, bodyInvalid(Diagnostic{Code: "syntax", Path: path, Message: "object keys must be strings"})
				}
				child := path + "/" + escapePointer(key)
				if seen[key] {
					return nil, bodyInvalid(Diagnostic{Code: "duplicate_key", Path: child, Message: "the key appears more than once"})
				}
				seen[key] = true
				v, err := p.value(depth+1, child)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, syntaxError(err)
			}
			return n, nil
		case '[':
			n := &jnode{kind: 'a'}
			for i := 0; p.dec.More(); i++ {
				v, err := p.value(depth+1, path+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, syntaxError(err)
			}
			return n, nil
		}
		return nil, bodyInvalid(Diagnostic{Code: "syntax", Path: path, Message: "unexpected delimiter"})
	case string:
		return &jnode{kind: 's', str: t}, nil
	case json.Number:
		return &jnode{kind: 'n', num: t}, nil
	case bool:
		return &jnode{kind: 'b', b: t}, nil
	case nil:
		return &jnode{kind: 'z'}, nil
	}
	return nil, bodyInvalid(Diagnostic{Code: "syntax", Path: path, Message: "unexpected token"})
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

type decoder struct{ diags []Diagnostic }

func (d *decoder) fail(code, path, format string, args ...any) {
	if len(d.diags) < maxDecodeDiagnostics {
		d.diags = append(d.diags, Diagnostic{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
	}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func (d *decoder) assign(n *jnode, v reflect.Value, path string) {
	if v.CanAddr() && v.Kind() != reflect.Pointer && v.Addr().Type().Implements(unmarshalerType) {
		raw := encodeNode(n)
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			d.fail("type", path, "invalid value")
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.kind == 'z' {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.assign(n, v.Elem(), path)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			d.fail("type", path, "unsupported target type")
			return
		}
		if n.kind == 'z' {
			v.SetZero()
			return
		}
		v.Set(reflect.ValueOf(toAny(n)))
	case reflect.Struct:
		d.assignStruct(n, v, path)
	case reflect.String:
		if n.kind != 's' {
			d.fail("type", path, "must be a string")
			return
		}
		v.SetString(n.str)
	case reflect.Bool:
		if n.kind != 'b' {
			d.fail("type", path, "must be a boolean")
			return
		}
		v.SetBool(n.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.kind != 'n' {
			d.fail("type", path, "must be an integer")
			return
		}
		i, err := strconv.ParseInt(n.num.String(), 10, 64)
		if err != nil || v.OverflowInt(i) {
			d.fail("type", path, "must be an integer within range")
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.kind != 'n' {
			d.fail("type", path, "must be a non-negative integer")
			return
		}
		u, err := strconv.ParseUint(n.num.String(), 10, 64)
		if err != nil || v.OverflowUint(u) {
			d.fail("type", path, "must be a non-negative integer within range")
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		if n.kind != 'n' {
			d.fail("type", path, "must be a number")
			return
		}
		f, err := strconv.ParseFloat(n.num.String(), v.Type().Bits())
		if err != nil {
			d.fail("type", path, "must be a number within range")
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if n.kind != 's' {
				d.fail("type", path, "must be a base64 string")
				return
			}
			b, err := base64.StdEncoding.DecodeString(n.str)
			if err != nil {
				d.fail("type", path, "must be a base64 string")
				return
			}
			v.SetBytes(b)
			return
		}
		if n.kind != 'a' {
			d.fail("type", path, "must be an array")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.vals), len(n.vals))
		for i, e := range n.vals {
			d.assign(e, s.Index(i), path+"/"+strconv.Itoa(i))
		}
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			d.fail("type", path, "unsupported target type")
			return
		}
		if n.kind != 'o' {
			d.fail("type", path, "must be an object")
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.keys))
		for i, k := range n.keys {
			e := reflect.New(v.Type().Elem()).Elem()
			d.assign(n.vals[i], e, path+"/"+escapePointer(k))
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	default:
		d.fail("type", path, "unsupported target type")
	}
}

// field is a decodable struct field.
type field struct {
	name     string
	index    []int
	required bool
}

// structFields lists the JSON fields of t (exported, not tagged "-";
// anonymous structs without a name are flattened).
func structFields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			for _, f := range structFields(sf.Type) {
				f.index = append([]int{i}, f.index...)
				out = append(out, f)
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, field{name: name, index: []int{i}, required: hasTagOption(sf.Tag.Get("api"), "required")})
	}
	return out
}

func hasTagOption(tag, opt string) bool {
	for _, o := range strings.Split(tag, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

func (d *decoder) assignStruct(n *jnode, v reflect.Value, path string) {
	if n.kind != 'o' {
		d.fail("type", path, "must be an object")
		return
	}
	fields := structFields(v.Type())
	present := make(map[string]bool, len(n.keys))
	for i, k := range n.keys {
		child := path + "/" + escapePointer(k)
		var f *field
		for j := range fields {
			if fields[j].name == k {
				f = &fields[j]
				break
			}
		}
		if f == nil {
			d.fail("unknown_field", child, "unknown property %q", k)
			continue
		}
		present[k] = true
		d.assign(n.vals[i], v.FieldByIndex(f.index), child)
	}
	for _, f := range fields {
		if f.required && !present[f.name] {
			d.fail("required", path+"/"+escapePointer(f.name), "is required")
		}
	}
}

// toAny converts a node the way encoding/json fills an interface{}.
func toAny(n *jnode) any {
	switch n.kind {
	case 'o':
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = toAny(n.vals[i])
		}
		return m
	case 'a':
		s := make([]any, len(n.vals))
		for i, e := range n.vals {
			s[i] = toAny(e)
		}
		return s
	case 's':
		return n.str
	case 'n':
		f, _ := n.num.Float64()
		return f
	case 'b':
		return n.b
	}
	return nil
}

// encodeNode re-encodes a node compactly, keeping key order.
func encodeNode(n *jnode) []byte {
	var b bytes.Buffer
	writeNode(&b, n)
	return b.Bytes()
}

func writeNode(b *bytes.Buffer, n *jnode) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeNode(b, n.vals[i])
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			writeNode(b, e)
		}
		b.WriteByte(']')
	case 's':
		writeString(b, n.str)
	case 'n':
		b.WriteString(n.num.String())
	case 'b':
		b.WriteString(strconv.FormatBool(n.b))
	default:
		b.WriteString("null")
	}
}

func writeString(b *bytes.Buffer, s string) {
	data, _ := json.Marshal(s)
	b.Write(data)
}

// canonicalBody is the canonical form of a JSON body used to compare
// idempotent retries: object keys sorted, insignificant whitespace removed,
// numbers and strings as sent. A body that is not JSON is used as is.
func canonicalBody(data []byte) []byte {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	n, err := parseJSON(data)
	if err != nil {
		return data
	}
	sortNode(n)
	return encodeNode(n)
}

func sortNode(n *jnode) {
	for _, v := range n.vals {
		sortNode(v)
	}
	if n.kind != 'o' {
		return
	}
	type member struct {
		key string
		val *jnode
	}
	ms := make([]member, len(n.keys))
	for i, k := range n.keys {
		ms[i] = member{k, n.vals[i]}
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for i, m := range ms {
		n.keys[i], n.vals[i] = m.key, m.val
	}
}
