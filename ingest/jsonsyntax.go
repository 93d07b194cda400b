package ingest

// Checking a JSON body's syntax
//
// validJSON answers exactly what encoding/json.Valid answers (a fuzz test
// compares them) without its per-byte state machine: the webhook ingest
// acknowledgement checks every JSON body, and json.Valid was the largest
// piece of the handler's own CPU time (BENCHMARKS.md, "The chat turn and
// the ingest acknowledgement"). Like json.Valid it checks syntax only:
// bytes of a string are not checked to be UTF-8, a \u escape is not
// checked to be a whole surrogate pair, and nesting deeper than
// encoding/json's limit is refused.

// maxJSONDepth is encoding/json's nesting limit (scanner.go,
// maxNestingDepth): json.Valid refuses deeper input.
const maxJSONDepth = 10000

// validJSON reports whether b is one JSON value with optional surrounding
// whitespace. It does not allocate: the open containers are a bit stack on
// the goroutine's stack (1 = object, 0 = array).
func validJSON(b []byte) bool {
	var stack [(maxJSONDepth + 63) / 64]uint64
	depth := 0
	i := 0
	for {
		// A value starts at i, after optional whitespace.
		i = skipJSONSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxJSONDepth {
				return false
			}
			bit := uint64(1) << (depth % 64)
			if c == '{' {
				stack[depth/64] |= bit
			} else {
				stack[depth/64] &^= bit
			}
			depth++
			i = skipJSONSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '{'+2 is '}', '['+2 is ']'
				depth--
				i++
				break // an empty container is a whole value
			}
			if c == '{' {
				if i = jsonMemberName(b, i); i < 0 {
					return false
				}
			}
			continue // the first element's value
		case c == '"':
			if i = jsonStringEnd(b, i); i < 0 {
				return false
			}
		case c == 't':
			if i = jsonLiteralEnd(b, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = jsonLiteralEnd(b, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = jsonLiteralEnd(b, i, "null"); i < 0 {
				return false
			}
		case c == '-' || ('0' <= c && c <= '9'):
			if i = jsonNumberEnd(b, i); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: close containers until the next element.
	next:
		for {
			i = skipJSONSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			inObject := stack[(depth-1)/64]&(uint64(1)<<((depth-1)%64)) != 0
			switch c := b[i]; {
			case c == ',':
				i++
				if inObject {
					if i = jsonMemberName(b, skipJSONSpace(b, i)); i < 0 {
						return false
					}
				}
				break next
			case (c == '}' && inObject) || (c == ']' && !inObject):
				depth--
				i++
			default:
				return false
			}
		}
	}
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// jsonMemberName checks an object member's name and its colon, starting
// at i; it returns the index after the colon, or -1.
func jsonMemberName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = jsonStringEnd(b, i); i < 0 {
		return -1
	}
	i = skipJSONSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// jsonStringEnd checks the string whose quote is at i and returns the
// index after its closing quote, or -1.
func jsonStringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHexDigit(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		case c < 0x20:
			return -1
		}
	}
	return -1
}

func isHexDigit(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func jsonLiteralEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// jsonNumberEnd checks the number starting at i (RFC 8259: -?int frac?
// exp?) and returns the index after it, or -1. What follows is checked by
// the caller: "01" is the number 0 followed by a stray 1.
func jsonNumberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = jsonDigitsEnd(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return -1
		}
		i = jsonDigitsEnd(b, i+2)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = jsonDigitsEnd(b, i+1)
	}
	return i
}

func jsonDigitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
