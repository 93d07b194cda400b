package httpx

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
)

// IdempotencyID is the primary key of a compact idempotency record: the
// first 16 bytes of the SHA-256 of owner, scope and key, each followed by a
// newline (keys are printable ASCII and owners are ids, so no two triples
// share the text). Migration 0034 computes the same in SQL:
// substr(bridge_sha256(owner || char(10) || scope || char(10) || key || char(10)), 1, 16).
func IdempotencyID(owner, scope, key string) []byte {
	sum := sha256.Sum256([]byte(owner + "\n" + scope + "\n" + key + "\n"))
	return sum[:16]
}

// A compact answer starts with answerMark and refers to the strings of
// answerRefs by one byte each: refBase+i stands for refs[i]. JSON text and
// the JSON of headers never hold raw bytes below 0x20, so neither the mark
// nor a reference can be mistaken for the answer's own text; an answer
// that holds such bytes anyway is stored as it is.
const (
	answerMark = 0x1f
	refBase    = 0x01
	maxRefs    = answerMark - refBase
	// minRef: shorter strings are not worth a reference.
	minRef = 8
)

// answerRefs are the strings an answer under (owner, scope) is likely to
// repeat: the scope's path (a Location header), the owner (a created_by)
// and the path's long segments (ids), the whole path first.
func answerRefs(owner, scope string) []string {
	_, path, _ := strings.Cut(scope, " ")
	refs := []string{path, owner}
	for seg := range strings.SplitSeq(path, "/") {
		if len(refs) == maxRefs {
			break
		}
		refs = append(refs, seg)
	}
	return refs
}

// usableRef: a reference string must be long enough and hold no byte a
// reference could be confused with.
func usableRef(s string) bool {
	if len(s) < minRef {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= answerMark {
			return false
		}
	}
	return true
}

// compactAnswer replaces refs in v by their references; v comes back
// unchanged when nothing was replaced or v holds bytes below 0x20.
func compactAnswer(v []byte, refs []string) []byte {
	if len(refs) == 0 || bytes.IndexFunc(v, func(r rune) bool { return r <= answerMark }) >= 0 {
		return v
	}
	out := v
	replaced := false
	for i, ref := range refs {
		if !usableRef(ref) || !bytes.Contains(out, []byte(ref)) {
			continue
		}
		out = bytes.ReplaceAll(out, []byte(ref), []byte{byte(refBase + i)})
		replaced = true
	}
	if !replaced {
		return v
	}
	return append([]byte{answerMark}, out...)
}

// expandAnswer reverses compactAnswer; a value without the mark (stored
// before compact records, or with nothing to replace) is returned as is.
func expandAnswer(v []byte, refs []string) ([]byte, error) {
	// Only a table with compact answers (refs != nil) stores the mark; in
	// another a body that happens to start with that byte is the body.
	if refs == nil || len(v) == 0 || v[0] != answerMark {
		return v, nil
	}
	var b bytes.Buffer
	b.Grow(len(v) * 2)
	for _, c := range v[1:] {
		if c > answerMark || c < refBase {
			b.WriteByte(c)
			continue
		}
		i := int(c - refBase)
		if i >= len(refs) || !usableRef(refs[i]) {
			return nil, fmt.Errorf("stored answer refers to string %d, which its scope does not have", i)
		}
		b.WriteString(refs[i])
	}
	return b.Bytes(), nil
}
