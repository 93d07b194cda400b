package kernel

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/bridge/platform/lang"
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
const maxValueDepth = lang.MaxValueDepth

var errTooDeep = lang.ErrValueTooDeep

// decodeExternal decodes JSON from outside, keeping numbers as json.Number.
func decodeExternal(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > MaxValueBytes {
		return nil, fmt.Errorf("value of %d bytes is over the %d byte limit", len(raw), MaxValueBytes)
	}
	return lang.DecodeValue(raw)
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

// encodeValue writes a value as typed canonical JSON (lang.EncodeTyped).
func encodeValue(v any) (json.RawMessage, error) {
	b, err := lang.EncodeTyped(v)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxValueBytes {
		return nil, fmt.Errorf("value of %d bytes is over the %d byte limit", len(b), MaxValueBytes)
	}
	return json.RawMessage(b), nil
}

// mustEncode encodes values the kernel built itself from valid parts.
func mustEncode(v any) json.RawMessage {
	b, err := encodeValue(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
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
