package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The parsed form of a JSON body that the decoder and the idempotency
// hash share: one token walk that keeps key order, where each value stands
// and, on a problem, its place as a JSON Pointer.

// loc is where a value stands in the body: a chain from the value to the
// root, rendered only when a problem is reported.
type loc struct {
	parent *loc
	key    string // an object member's key
	index  int    // an array element's index, when !member
	member bool
}

func (l *loc) child(key string) *loc { return &loc{parent: l, key: key, member: true} }
func (l *loc) elem(i int) *loc       { return &loc{parent: l, index: i} }

// pointer renders l as a JSON Pointer (RFC 6901): /a/b/2/c.
func (l *loc) pointer() string {
	if l == nil {
		return ""
	}
	if !l.member {
		return l.parent.pointer() + "/" + strconv.Itoa(l.index)
	}
	return l.parent.pointer() + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(l.key)
}

// field renders l as the toolkit names fields: a.b[2].c.
func (l *loc) field() string {
	switch {
	case l == nil:
		return ""
	case !l.member:
		return l.parent.field() + "[" + strconv.Itoa(l.index) + "]"
	case l.parent == nil:
		return l.key
	}
	return l.parent.field() + "." + l.key
}

// jnode is a parsed JSON value that keeps object keys in order and where
// the value stands in the body.
type jnode struct {
	kind       byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys       []string
	vals       []*jnode // object values, or array elements
	str        string
	num        json.Number
	b          bool
	start, end int64 // the value's bytes in the body
}

type parser struct {
	data     []byte
	dec      *json.Decoder
	maxDepth int
}

// parseJSON reads exactly one JSON value from data. A problem (syntax,
// a duplicate key, nesting deeper than maxDepth, data after the value) is
// returned as the one diagnostic of the body: what follows it is not read.
func parseJSON(data []byte, maxDepth int) (*jnode, *BodyDiagnostic) {
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), maxDepth: maxDepth}
	p.dec.UseNumber()
	n, d := p.value(0, nil)
	if d != nil {
		return nil, d
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, &BodyDiagnostic{Code: BodyTrailing, Offset: n.end, Message: "the body has data after its JSON value", summary: "request body has data after the JSON value"}
	}
	return n, nil
}

// syntax words a syntax error: the pointer form from the token walk, the
// toolkit's as encoding/json reports the body.
func (p *parser) syntax(err error) *BodyDiagnostic {
	d := &BodyDiagnostic{Code: BodySyntax, Message: "malformed JSON"}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		d.Offset, d.Message = se.Offset, fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		d.Offset, d.Message = int64(len(p.data)), "truncated JSON"
	}
	d.summary = "malformed JSON body"
	switch err := json.NewDecoder(bytes.NewReader(p.data)).Decode(new(json.RawMessage)); {
	case errors.As(err, &se):
		d.summary = fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		d.summary = "truncated JSON body"
	}
	return d
}

// start is where the value whose token begins after offset off stands:
// past the whitespace and separator before it.
func (p *parser) start(off int64) int64 {
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (p *parser) value(depth int, at *loc) (*jnode, *BodyDiagnostic) {
	if depth > p.maxDepth {
		return nil, &BodyDiagnostic{Code: BodyDepth, Pointer: at.pointer(), Field: at.field(), Offset: p.dec.InputOffset(),
			Message: fmt.Sprintf("nesting deeper than %d levels", p.maxDepth), summary: fmt.Sprintf("request body nests deeper than %d levels", p.maxDepth)}
	}
	off := p.dec.InputOffset()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(err)
	}
	n := &jnode{start: p.start(off)}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = 'o'
			var seen map[string]struct{}
			for p.dec.More() {
				koff := p.dec.InputOffset()
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.syntax(err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, &BodyDiagnostic{Code: BodySyntax, Pointer: at.pointer(), Message: "object keys must be strings", summary: "malformed JSON body"}
				}
				child := at.child(key)
				if _, dup := seen[key]; dup {
					// The offset and reason the toolkit has always reported
					// (CheckJSON), the pointer the platform's.
					je := &JSONError{Offset: koff, Reason: fmt.Sprintf("duplicate key %q", key)}
					return nil, &BodyDiagnostic{Code: BodyDuplicateKey, Pointer: child.pointer(), Field: child.field(), Offset: koff,
						Message: "the key appears more than once", summary: je.Error(), cause: je}
				}
				if seen == nil {
					seen = map[string]struct{}{}
				}
				seen[key] = struct{}{}
				v, d := p.value(depth+1, child)
				if d != nil {
					return nil, d
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
		case '[':
			n.kind = 'a'
			for i := 0; p.dec.More(); i++ {
				v, d := p.value(depth+1, at.elem(i))
				if d != nil {
					return nil, d
				}
				n.vals = append(n.vals, v)
			}
		default:
			return nil, &BodyDiagnostic{Code: BodySyntax, Pointer: at.pointer(), Message: "unexpected delimiter", summary: "malformed JSON body"}
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, p.syntax(err)
		}
	case string:
		n.kind, n.str = 's', t
	case json.Number:
		n.kind, n.num = 'n', t
	case bool:
		n.kind, n.b = 'b', t
	case nil:
		n.kind = 'z'
	}
	n.end = p.dec.InputOffset()
	return n, nil
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

// CanonicalJSON is the canonical form of a JSON body used to compare
// idempotent retries: object keys sorted, insignificant whitespace
// removed, numbers and strings as sent. A body that is not acceptable
// JSON is returned as is, and an empty one as nil.
func CanonicalJSON(data []byte) []byte {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	n, d := parseJSON(data, MaxDecodeDepth)
	if d != nil {
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
