package httpx

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// ErrBadCursor is returned for a cursor that is malformed, forged, or was
// issued for another list or other filters.
var ErrBadCursor = errors.New("invalid cursor")

// Cursors signs and opens opaque page cursors. A cursor is the JSON of a
// position plus the filters it was issued for, authenticated with HMAC, so a
// client can neither forge a position nor reuse a cursor with other filters.
type Cursors struct{ key []byte }

// NewCursors returns a signer with key (at least 32 random bytes).
func NewCursors(key []byte) *Cursors { return &Cursors{key: append([]byte(nil), key...)} }

// maxCursorLen bounds what Open parses.
const maxCursorLen = 2048

func (c *Cursors) mac(scope string, payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// Sign encodes v for scope (the collection and its filters, e.g.
// "jobs|client=a|order=desc").
func (c *Cursors) Sign(scope string, v any) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(c.mac(scope, payload)), nil
}

// Open decodes a cursor signed for the same scope into v.
func (c *Cursors) Open(scope, cursor string, v any) error {
	if len(cursor) == 0 || len(cursor) > maxCursorLen {
		return ErrBadCursor
	}
	p, s, ok := strings.Cut(cursor, ".")
	if !ok {
		return ErrBadCursor
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sig, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, c.mac(scope, payload)) {
		return ErrBadCursor
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return ErrBadCursor
	}
	return nil
}
