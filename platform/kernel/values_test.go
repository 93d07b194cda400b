package kernel

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/matryer/is"
)

func TestTypedEncoding(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"int", int64(5), `5`},
		{"integral double", 5.0, `5.0`},
		{"negative zero", math.Copysign(0, -1), `0.0`},
		{"fraction", 2.5, `2.5`},
		{"large", 1e21, `1e+21`},
		{"small", 1e-7, `1e-7`},
		{"object keys sorted", map[string]any{"b": int64(1), "a": []any{true, nil, "x"}}, `{"a":[true,null,"x"],"b":1}`},
		{"html escaped like encoding/json", "<a&b>\u2028", `"\u003ca\u0026b\u003e\u2028"`},
		{"controls", "a\nb\t\x01", `"a\nb\t\u0001"`},
		{"invalid utf8", "a\xffb", "\"a\ufffdb\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			raw, err := encodeValue(tc.v)
			is.NoErr(err)
			is.Equal(string(raw), tc.want)
			// Decoding keeps the int/double distinction.
			back, err := decodeTyped(raw)
			is.NoErr(err)
			again, err := encodeValue(back)
			is.NoErr(err)
			is.Equal(string(again), tc.want)
			// A state holding it survives encoding/json byte for byte.
			type holder struct {
				V json.RawMessage `json:"v"`
			}
			b, err := json.Marshal(holder{raw})
			is.NoErr(err)
			is.Equal(string(b), `{"v":`+tc.want+`}`)
		})
	}
	is := is.New(t)
	_, err := encodeValue(math.NaN())
	is.True(err != nil)
	_, err = encodeValue(math.Inf(1))
	is.True(err != nil)
	_, err = encodeValue(struct{}{})
	is.True(err != nil)
	var deep any = "x"
	for range maxValueDepth + 2 {
		deep = []any{deep}
	}
	_, err = encodeValue(deep)
	is.True(err != nil)
}

func TestDecodeExternalLimits(t *testing.T) {
	is := is.New(t)
	_, err := decodeExternal([]byte(`{"a":1} {}`))
	is.True(err != nil)
	big := make([]byte, MaxValueBytes+1)
	_, err = decodeExternal(big)
	is.True(err != nil)
	deep := ""
	for range maxValueDepth + 2 {
		deep += "["
	}
	_, err = decodeExternal([]byte(deep))
	is.True(err != nil)
}

// TestSchemaTyping mirrors the compiler's JSON Schema → CEL type mapping:
// numbers at integer positions are ints, all other numbers doubles.
func TestSchemaTyping(t *testing.T) {
	ss := newSchemaSet()
	if err := ss.addCatalog("t/count", json.RawMessage(`{"type":"integer"}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, schema, value, want string
	}{
		{"integer", `{"type":"integer"}`, `3`, `3`},
		{"integral number", `{"type":"number"}`, `3`, `3.0`},
		{"no schema", ``, `{"a":[1,2.5]}`, `{"a":[1.0,2.5]}`},
		{"nullable integer", `{"type":["integer","null"]}`, `7`, `7`},
		{"integer or number", `{"type":["integer","number"]}`, `7`, `7.0`},
		{"several types are dyn", `{"type":["integer","string"]}`, `7`, `7.0`},
		{"struct", `{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"}}}`, `{"n":1,"x":1,"extra":1}`, `{"extra":1.0,"n":1,"x":1.0}`},
		{"non-identifier properties make a map of dyn", `{"type":"object","properties":{"first-name":{"type":"integer"}}}`, `{"first-name":1}`, `{"first-name":1.0}`},
		{"map", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"a":1,"b":2}`, `{"a":1,"b":2}`},
		{"list", `{"type":"array","items":{"type":"integer"}}`, `[1,2]`, `[1,2]`},
		{"prefixItems are dyn", `{"type":"array","prefixItems":[{"type":"integer"}]}`, `[1]`, `[1.0]`},
		{"local ref", `{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}`, `{"n":4}`, `{"n":4}`},
		{"catalog ref", `{"type":"object","properties":{"n":{"$ref":"catalog:schemas/t/count"}}}`, `{"n":4}`, `{"n":4}`},
		{"enum of integers", `{"enum":[1,2]}`, `2`, `2`},
		{"single allOf", `{"allOf":[{"type":"integer"}]}`, `2`, `2`},
		{"anyOf is dyn", `{"anyOf":[{"type":"integer"}]}`, `2`, `2.0`},
		{"big integer", `{"type":"integer"}`, `9007199254740993`, `9007199254740993`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			s, err := ss.add(json.RawMessage(tc.schema), tc.name)
			is.NoErr(err)
			v, err := decodeExternal([]byte(tc.value))
			is.NoErr(err)
			raw, err := encodeValue(s.normalize(v))
			is.NoErr(err)
			is.Equal(string(raw), tc.want)
		})
	}
}

func TestSchemaValidationMessagesAreStable(t *testing.T) {
	is := is.New(t)
	ss := newSchemaSet()
	s, err := ss.add(json.RawMessage(`{"type":"object","required":["z","a","m"],"additionalProperties":false,"properties":{"a":{},"m":{},"z":{}}}`), "s")
	is.NoErr(err)
	v, _ := decodeExternal([]byte(`{"q":1,"b":2,"c":3}`))
	first := s.validate(v).Error()
	for range 20 {
		is.Equal(s.validate(v).Error(), first)
	}
	// Schemas are never loaded from outside.
	_, err = ss.add(json.RawMessage(`{"$ref":"file:///etc/passwd"}`), "evil")
	is.True(err != nil)
	_, err = ss.add(json.RawMessage(`{"$ref":"https://example.com/s.json"}`), "remote")
	is.True(err != nil)
}
