package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// GitHub verifies X-Hub-Signature-256: "sha256=" + hex HMAC-SHA256 of the
// body. The delivery id is X-GitHub-Delivery. Several secrets may be given
// while one is rotated; any of them verifies.
type GitHub struct{ secrets [][]byte }

// NewGitHub returns a GitHub verifier.
func NewGitHub(secrets ...string) (*GitHub, error) {
	s, err := secretsBytes(secrets)
	if err != nil {
		return nil, err
	}
	return &GitHub{secrets: s}, nil
}

// Verify implements Verifier.
func (g *GitHub) Verify(r Request) error {
	raw := r.Header.Get("X-Hub-Signature-256")
	if raw == "" {
		return fail(ReasonMissingSignature, "no X-Hub-Signature-256 header")
	}
	sig, err := parsePrefixedHex(raw, "sha256=", sha256.Size)
	if err != nil {
		return err
	}
	for _, s := range g.secrets {
		m := hmac.New(sha256.New, s)
		m.Write(r.Body)
		if hmac.Equal(m.Sum(nil), sig) {
			return nil
		}
	}
	return fail(ReasonMismatch, "X-Hub-Signature-256 does not match the body")
}

// DeliveryID implements Verifier.
func (g *GitHub) DeliveryID(r Request) string { return r.Header.Get("X-GitHub-Delivery") }

// parsePrefixedHex decodes "prefix" + hex of exactly size bytes.
func parsePrefixedHex(raw, prefix string, size int) ([]byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(raw), prefix)
	if !ok {
		return nil, fail(ReasonMalformedSignature, "signature does not start with %q", prefix)
	}
	if len(rest) != hex.EncodedLen(size) {
		return nil, fail(ReasonMalformedSignature, "signature is not %d hex digits", hex.EncodedLen(size))
	}
	b, err := hex.DecodeString(rest)
	if err != nil {
		return nil, fail(ReasonMalformedSignature, "signature is not hexadecimal")
	}
	return b, nil
}
