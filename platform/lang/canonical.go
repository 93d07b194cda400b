package lang

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Two canonical JSON forms share one writer:
//
//   - the document form (CanonicalJSON): object keys sorted by their UTF-8
//     bytes, no insignificant whitespace, no HTML escaping, integers without
//     exponent, other numbers in shortest round-trip form. Digests of
//     compiled programs and catalog entries are taken over it.
//   - the typed form (EncodeTyped): what the kernel stores run values in.
//     Keys sorted, no whitespace, strings escaped exactly as encoding/json
//     writes them (HTML-safe), so a value embedded in a json.Marshal'ed
//     state reads back with the same bytes; integers without a fraction and
//     doubles always with one ("5.0") or an exponent, so an int stays an int
//     and a double a double across any number of restarts.
//
// The forms differ only in how they write scalars and how deep they nest,
// so each is a jsonForm over the same walk.

// MaxValueDepth bounds the nesting of run values (typed form).
const MaxValueDepth = 128

// ErrValueTooDeep: a run value nests deeper than MaxValueDepth.
var ErrValueTooDeep = errors.New("value nested too deeply")

// errTrailingData: a JSON text has more after its value.
var errTrailingData = errors.New("trailing data")

type jsonForm struct {
	maxDepth    int
	tooDeep     error
	unsupported string // message format for a value of another Go type
	str         func(b *bytes.Buffer, s string)
	double      func(f float64) (string, error)
	number      func(n json.Number) (string, error)
	documents   bool // also []string and json.RawMessage (compiled documents)
}

var (
	documentForm = &jsonForm{
		maxDepth:    512,
		tooDeep:     errors.New("canonical json: nesting too deep"),
		unsupported: "canonical json: unsupported type %T",
		str:         writeString,
		double:      formatFloat,
		number:      canonicalNumber,
		documents:   true,
	}
	typedForm = &jsonForm{
		maxDepth:    MaxValueDepth,
		tooDeep:     ErrValueTooDeep,
		unsupported: "unsupported value type %T",
		str:         writeHTMLString,
		double:      formatDouble,
		number:      verbatimNumber,
	}
)

// CanonicalJSON re-encodes a JSON document in the document form.
func CanonicalJSON(raw []byte) ([]byte, error) {
	v, err := decodeNumbers(raw)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return documentForm.encode(v)
}

// encodeCanonical encodes a value built from maps, slices and scalars in
// the document form.
func encodeCanonical(v any) ([]byte, error) { return documentForm.encode(v) }

// EncodeTyped writes a run value (nil, bool, string, int64, float64,
// json.Number, []any, map[string]any) in the typed form. json.Number is
// written as received: only values from outside keep it, and their
// consumer types them later.
func EncodeTyped(v any) ([]byte, error) { return typedForm.encode(v) }

// DecodeValue decodes a JSON value from outside, keeping its numbers as
// json.Number, and refuses trailing data and nesting deeper than
// MaxValueDepth.
func DecodeValue(raw []byte) (any, error) {
	v, err := decodeNumbers(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if err := checkDepth(v, 0); err != nil {
		return nil, err
	}
	return v, nil
}

func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailingData
	}
	return v, nil
}

func checkDepth(v any, depth int) error {
	if depth > MaxValueDepth {
		return ErrValueTooDeep
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

func (f *jsonForm) encode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := f.write(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (f *jsonForm) write(b *bytes.Buffer, v any, depth int) error {
	if depth > f.maxDepth {
		return f.tooDeep
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
		f.str(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		s, err := f.double(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case json.Number:
		s, err := f.number(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := f.write(b, e, depth+1); err != nil {
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
			f.str(b, k)
			b.WriteByte(':')
			if err := f.write(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []string:
		if !f.documents {
			return fmt.Errorf(f.unsupported, v)
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			f.str(b, e)
		}
		b.WriteByte(']')
	case json.RawMessage:
		if !f.documents {
			return fmt.Errorf(f.unsupported, v)
		}
		c, err := CanonicalJSON(x)
		if err != nil {
			return err
		}
		b.Write(c)
	default:
		return fmt.Errorf(f.unsupported, v)
	}
	return nil
}

// canonicalNumber writes integers as written and other numbers in their
// shortest round-trip form (document form).
func canonicalNumber(n json.Number) (string, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return s, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("canonical json: number %s: %w", s, err)
	}
	return formatFloat(f)
}

// verbatimNumber writes a number as received, checked for validity (typed
// form).
func verbatimNumber(n json.Number) (string, error) {
	if _, err := strconv.ParseFloat(string(n), 64); err != nil {
		return "", fmt.Errorf("invalid number %q", string(n))
	}
	return string(n), nil
}

func formatFloat(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("canonical json: %v is not representable", f)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if f == 0 {
			return "0", nil // also for -0
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	// Go writes e+07; drop the exponent's leading zeros (1e+7, 1e-7).
	if i := strings.IndexAny(s, "e"); i >= 0 {
		mant, exp := s[:i+1], s[i+1:]
		sign := ""
		if exp[0] == '+' || exp[0] == '-' {
			sign, exp = exp[:1], exp[1:]
		}
		exp = strings.TrimLeft(exp, "0")
		s = mant + sign + exp
	}
	return s, nil
}

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// formatDouble writes a double so that it reads back as a double (typed
// form): like encoding/json, plus ".0" on integral values.
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

// writeHTMLString escapes like encoding/json with HTML escaping on (typed
// form).
func writeHTMLString(b *bytes.Buffer, s string) {
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
