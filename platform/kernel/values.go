package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Values inside the kernel are plain Go JSON values ("IR"): nil, bool,
// string, int64, float64, []any and map[string]any. The state stores them
// as *typed canonical JSON*: keys sorted, no whitespace, HTML-safe escapes
// exactly as encoding/json writes them (so a state survives json.Marshal and
// json.Unmarshal byte for byte), integers without a fraction and doubles
// always with one ("5.0") or an exponent. That way CEL sees an int as an
// int and a double as a double after any number of restarts, without the
// schemas being consulted again.
//
// Values that enter from outside (run input, task outputs, signal payloads,
// human data, reconciled results) carry no such distinction: they are
// decoded with json.Number and typed by their schema (normalize), following
// the language's rule: a number at an integer position is an int, any other
// number a double.

// MaxValueBytes bounds one value: an event payload, a step output, a
// variable or an evaluated input (the platform's 1 MiB payload limit).
const MaxValueBytes = 1 << 20

// maxValueDepth bounds nesting of values the kernel converts.
const maxValueDepth = 128

var errTooDeep = errors.New("value nested too deeply")

// decodeExternal decodes JSON from outside, keeping numbers as json.Number.
func decodeExternal(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > MaxValueBytes {
		return nil, fmt.Errorf("value of %d bytes is over the %d byte limit", len(raw), MaxValueBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: trailing data")
	}
	if err := checkDepth(v, 0); err != nil {
		return nil, err
	}
	return v, nil
}

func checkDepth(v any, depth int) error {
	if depth > maxValueDepth {
		return errTooDeep
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if err := checkDepth(e, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range x {
			if err := checkDepth(e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeTyped decodes typed canonical JSON written by encodeValue.
func decodeTyped(raw []byte) (any, error) {
	v, err := decodeExternal(raw)
	if err != nil {
		return nil, err
	}
	return typeNumbers(v), nil
}

// typeNumbers turns json.Number into int64 (no fraction or exponent) or
// float64, building new containers.
func typeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return typedNumber(string(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = typeNumbers(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = typeNumbers(e)
		}
		return out
	}
	return v
}

func typedNumber(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN() // unreachable for valid JSON; rejected when encoded
	}
	return f
}

// encodeValue writes a value as typed canonical JSON.
func encodeValue(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeValue(&b, v, 0); err != nil {
		return nil, err
	}
	if b.Len() > MaxValueBytes {
		return nil, fmt.Errorf("value of %d bytes is over the %d byte limit", b.Len(), MaxValueBytes)
	}
	return json.RawMessage(b.Bytes()), nil
}

// mustEncode encodes values the kernel built itself from valid parts.
func mustEncode(v any) json.RawMessage {
	b, err := encodeValue(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func writeValue(b *bytes.Buffer, v any, depth int) error {
	if depth > maxValueDepth {
		return errTooDeep
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeString(b, x)
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		s, err := formatDouble(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case json.Number:
		// Only external values keep json.Number (buffered signals); they are
		// written as received, re-checked for validity.
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return fmt.Errorf("invalid number %q", string(x))
		}
		b.WriteString(string(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeValue(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeValue(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}

// formatDouble writes a double so that it reads back as a double: like
// encoding/json, plus ".0" on integral values.
func formatDouble(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%v is not representable in JSON", f)
	}
	if f == 0 {
		return "0.0", nil // also -0
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json does.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
		return s, nil
	}
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s, nil
}

// writeString escapes like encoding/json with HTML escaping on, so that a
// value embedded in a json.Marshal'ed state reads back with the same bytes.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError) // canonical: decodes and encodes the same
		case r == '\u2028' || r == '\u2029':
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// canonicalExternal re-encodes an external JSON value canonically, keeping
// its numbers as written (they are typed later, by the consumer's schema).
func canonicalExternal(raw []byte) (json.RawMessage, any, error) {
	v, err := decodeExternal(raw)
	if err != nil {
		return nil, nil, err
	}
	b, err := encodeValue(v)
	if err != nil {
		return nil, nil, err
	}
	return b, v, nil
}

// fromGo converts values produced by Go libraries (the decision evaluator)
// into IR.
func fromGo(v any, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, errTooDeep
	}
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		return typedNumber(string(x)), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := fromGo(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := fromGo(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case fmt.Stringer:
		return x.String(), nil
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// asDouble makes every number of an IR value a double: decision tables
// return numbers as float64, and their output schema says number.
func asDouble(v any) any {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = asDouble(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = asDouble(e)
		}
		return out
	}
	return v
}
