package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Shopify verifies X-Shopify-Hmac-Sha256: base64 HMAC-SHA256 of the body
// keyed with the app's client secret. The delivery id is X-Shopify-Webhook-Id
// (falling back to X-Shopify-Event-Id).
type Shopify struct{ secrets [][]byte }

// NewShopify returns a Shopify verifier.
func NewShopify(secrets ...string) (*Shopify, error) {
	s, err := secretsBytes(secrets)
	if err != nil {
		return nil, err
	}
	return &Shopify{secrets: s}, nil
}

// Verify implements Verifier.
func (s *Shopify) Verify(r Request) error {
	raw := strings.TrimSpace(r.Header.Get("X-Shopify-Hmac-Sha256"))
	if raw == "" {
		return fail(ReasonMissingSignature, "no X-Shopify-Hmac-Sha256 header")
	}
	sig, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(sig) != sha256.Size {
		return fail(ReasonMalformedSignature, "X-Shopify-Hmac-Sha256 is not a base64 SHA-256 HMAC")
	}
	for _, secret := range s.secrets {
		m := hmac.New(sha256.New, secret)
		m.Write(r.Body)
		if hmac.Equal(m.Sum(nil), sig) {
			return nil
		}
	}
	return fail(ReasonMismatch, "X-Shopify-Hmac-Sha256 does not match the body")
}

// DeliveryID implements Verifier.
func (s *Shopify) DeliveryID(r Request) string {
	if id := r.Header.Get("X-Shopify-Webhook-Id"); id != "" {
		return id
	}
	return r.Header.Get("X-Shopify-Event-Id")
}
