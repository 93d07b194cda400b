package verify

import (
	"crypto/sha256"
	"fmt"
	"net/http"
)

// Token verifies a shared secret sent verbatim in a header, as the
// Telegram Bot API sends the secret_token of setWebhook in
// X-Telegram-Bot-Api-Secret-Token. The comparison is of SHA-256 digests
// in constant time, so neither the length nor a prefix of a secret leaks.
type Token struct {
	header  string
	digests [][]byte
}

// NewToken returns a Token verifier for header.
func NewToken(header string, secrets ...string) (*Token, error) {
	s, err := secretsBytes(secrets)
	if err != nil {
		return nil, err
	}
	if header == "" {
		return nil, fmt.Errorf("verify: token: a header is required")
	}
	t := &Token{header: http.CanonicalHeaderKey(header)}
	for _, b := range s {
		d := sha256.Sum256(b)
		t.digests = append(t.digests, d[:])
	}
	return t, nil
}

// Verify implements Verifier.
func (t *Token) Verify(r Request) error {
	vs := r.Header.Values(t.header)
	if len(vs) == 0 || vs[0] == "" {
		return fail(ReasonMissingSignature, "no %s header", t.header)
	}
	if len(vs) > 1 {
		return fail(ReasonMalformedSignature, "%s is repeated", t.header)
	}
	d := sha256.Sum256([]byte(vs[0]))
	if !anyEqual(d[:], t.digests) {
		return fail(ReasonMismatch, "%s does not match", t.header)
	}
	return nil
}

// DeliveryID implements Verifier: the token names no delivery.
func (t *Token) DeliveryID(Request) string { return "" }

// Meta verifies the Graph API webhooks of Meta (WhatsApp Cloud API,
// Messenger): X-Hub-Signature-256 is "sha256=" + hex HMAC-SHA256 of the
// body keyed with the app secret, the scheme GitHub uses too; they carry
// no delivery id header.
type Meta struct{ g *GitHub }

// NewMeta returns a Meta verifier.
func NewMeta(secrets ...string) (*Meta, error) {
	g, err := NewGitHub(secrets...)
	if err != nil {
		return nil, err
	}
	return &Meta{g: g}, nil
}

// Verify implements Verifier.
func (m *Meta) Verify(r Request) error { return m.g.Verify(r) }

// DeliveryID implements Verifier: Meta names no delivery.
func (m *Meta) DeliveryID(Request) string { return "" }
