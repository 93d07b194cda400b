package ingest

import (
	"encoding/json"
	"strings"
	"testing"
)

// jsonSyntaxCases are bodies on both sides of every rule of the grammar;
// want is what encoding/json.Valid answers (checked too).
var jsonSyntaxCases = []struct {
	in   string
	want bool
}{
	// Whole values and whitespace.
	{``, false}, {` `, false}, {"\t\n\r ", false},
	{`null`, true}, {`true`, true}, {`false`, true}, {` true `, true}, {"\n\t\r true\r\n", true},
	{`nul`, false}, {`nulll`, false}, {`tru`, false}, {`True`, false}, {`falsey`, false}, {`NaN`, false}, {`Infinity`, false},
	{`1 2`, false}, {`{} {}`, false}, {`[]]`, false}, {`{}}`, false}, {`"a" "b"`, false}, {`true,`, false},
	{"\v1", false}, {"1\f", false}, {"\x00", false}, {"1\x00", false}, {"\xef\xbb\xbf{}", false}, // BOM
	// Numbers.
	{`0`, true}, {`-0`, true}, {`1`, true}, {`-1`, true}, {`1234567890`, true}, {`0.5`, true}, {`-0.0e-0`, true},
	{`1e5`, true}, {`1E5`, true}, {`1e+5`, true}, {`1e-5`, true}, {`1.25E+10`, true}, {`123456789012345678901234567890`, true},
	{`01`, false}, {`-01`, false}, {`00`, false}, {`-`, false}, {`+1`, false}, {`.5`, false}, {`1.`, false}, {`1.e5`, false},
	{`1e`, false}, {`1e+`, false}, {`1E-`, false}, {`1ee5`, false}, {`1.5.5`, false}, {`--1`, false}, {`-a`, false},
	{`0x10`, false}, {`1_000`, false}, {`1 .5`, false}, {`- 1`, false}, {`[1,]`, false}, {`[-]`, false}, {`[01]`, false},
	// Strings.
	{`""`, true}, {`"a"`, true}, {`"\"\\\/\b\f\n\r\t"`, true}, {`"\u0041\u00e9\uD83D\uDE00"`, true}, {`"\uABCD\uabcd"`, true},
	{`"\ud800"`, true},                                          // a lone surrogate: syntax only, as json.Valid
	{"\"\xff\xfe\"", true}, {"\"é\"", true}, {"\"\x7f\"", true}, // bytes ≥ 0x20 are not checked
	{`"`, false}, {`"abc`, false}, {`"\"`, false}, {`"\`, false}, {`"\a"`, false}, {`"\x41"`, false}, {`"\'"`, false},
	{`"\u"`, false}, {`"\u12"`, false}, {`"\u123"`, false}, {`"\u123g"`, false}, {`"\uGHIJ"`, false}, {`"\u1234`, false},
	{"\"a\nb\"", false}, {"\"\x00\"", false}, {"\"\x1f\"", false}, {"\"\t\"", false}, {`'a'`, false},
	// Arrays and objects.
	{`[]`, true}, {`[ ]`, true}, {`{}`, true}, {`{ }`, true}, {`[1]`, true}, {`[1,2, 3 ]`, true}, {`[[],[[]],{}]`, true},
	{`{"a":1}`, true}, {` { "a" : 1 , "b" : [ true , null ] } `, true}, {`{"a":{"b":{"c":[{"d":"e"}]}}}`, true},
	{`{"a":1,"a":2}`, true}, // duplicate names: syntax only
	{`{"":""}`, true},
	{`[`, false}, {`]`, false}, {`{`, false}, {`}`, false}, {`[1`, false}, {`[1,`, false}, {`[,1]`, false}, {`[1,,2]`, false},
	{`[1 2]`, false}, {`[1:2]`, false}, {`{"a"}`, false}, {`{"a":}`, false}, {`{"a" 1}`, false}, {`{a:1}`, false},
	{`{1:1}`, false}, {`{"a":1,}`, false}, {`{,"a":1}`, false}, {`{"a":1 "b":2}`, false}, {`{"a":1]`, false},
	{`[1}`, false}, {`{"a":[}`, false}, {`{"a":1;"b":2}`, false}, {`{"a"::1}`, false}, {`{"a":1,"b"}`, false},
	{`[{]`, false}, {`{[]}`, false}, {`[}`, false}, {`{]`, false}, {`{"a":1}x`, false}, {`[true false]`, false},
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range jsonSyntaxCases {
		if got := json.Valid([]byte(c.in)); got != c.want {
			t.Errorf("json.Valid(%q) = %v; the table says %v", c.in, got, c.want)
		}
		if got := validJSON([]byte(c.in)); got != c.want {
			t.Errorf("validJSON(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestValidJSONDepth: encoding/json refuses nesting deeper than 10,000;
// validJSON refuses exactly where it does, for arrays, objects and both.
func TestValidJSONDepth(t *testing.T) {
	nest := func(depth int, open, close string) string {
		return strings.Repeat(open, depth) + strings.Repeat(close, depth)
	}
	for _, depth := range []int{1, 63, 64, 65, 128, maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1, 2 * maxJSONDepth} {
		for _, in := range []string{
			nest(depth, "[", "]"),
			strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth),
			strings.Repeat(`[{"k":`, depth/2) + "0" + strings.Repeat("}]", depth/2),
		} {
			want := json.Valid([]byte(in))
			if got := validJSON([]byte(in)); got != want {
				t.Errorf("depth %d (%.12s...): validJSON = %v, json.Valid = %v", depth, in, got, want)
			}
		}
	}
	if !validJSON([]byte(nest(maxJSONDepth, "[", "]"))) || validJSON([]byte(nest(maxJSONDepth+1, "[", "]"))) {
		t.Error("the depth limit is not encoding/json's 10,000")
	}
	// A mismatched close deep inside is found at its depth.
	if validJSON([]byte(strings.Repeat("[", 100) + strings.Repeat("]", 99) + "}")) {
		t.Error("a ] closed by } was accepted")
	}
}

func TestValidJSONDoesNotAllocate(t *testing.T) {
	body := jsonBody(1024)
	if !validJSON(body) {
		t.Fatal("the benchmark body is not valid JSON")
	}
	if n := testing.AllocsPerRun(100, func() { validJSON(body) }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

// FuzzValidJSON: validJSON answers what encoding/json.Valid answers, for
// any input.
func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonSyntaxCases {
		f.Add([]byte(c.in))
	}
	f.Add(jsonBody(1024))
	f.Add([]byte(`{"action":"opened","number":[1,2.5e3,-0.1],"ok":true,"x":null,"s":"\u00e9\n"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	body := jsonBody(1024)
	b.SetBytes(int64(len(body)))
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(body)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
}
