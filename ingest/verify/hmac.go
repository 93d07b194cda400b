package verify

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"strings"
)

// HMACOptions configure the generic verifier for providers without a
// built-in scheme: Header carries Prefix + encoded HMAC of the body.
type HMACOptions struct {
	Header           string // required, e.g. "X-Signature"
	Algorithm        string // sha1, sha256 (default) or sha512
	Encoding         string // hex (default) or base64
	Prefix           string // e.g. "sha256="; "" for none
	DeliveryIDHeader string // header naming the delivery, "" for none
}

// HMAC is the generic verifier.
type HMAC struct {
	opts    HMACOptions
	newHash func() hash.Hash
	size    int
	secrets [][]byte
}

// NewHMAC returns a generic HMAC verifier.
func NewHMAC(o HMACOptions, secrets ...string) (*HMAC, error) {
	s, err := secretsBytes(secrets)
	if err != nil {
		return nil, err
	}
	if o.Header == "" {
		return nil, fmt.Errorf("verify: hmac: a signature header is required")
	}
	h := &HMAC{opts: o, secrets: s}
	switch strings.ToLower(o.Algorithm) {
	case "sha1":
		h.newHash, h.size = sha1.New, sha1.Size
	case "", "sha256":
		h.newHash, h.size = sha256.New, sha256.Size
	case "sha512":
		h.newHash, h.size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("verify: hmac: algorithm %q is not sha1, sha256 or sha512", o.Algorithm)
	}
	switch strings.ToLower(o.Encoding) {
	case "", "hex":
		h.opts.Encoding = "hex"
	case "base64":
		h.opts.Encoding = "base64"
	default:
		return nil, fmt.Errorf("verify: hmac: encoding %q is not hex or base64", o.Encoding)
	}
	h.opts.Header = http.CanonicalHeaderKey(o.Header)
	return h, nil
}

// Verify implements Verifier.
func (h *HMAC) Verify(r Request) error {
	raw := strings.TrimSpace(r.Header.Get(h.opts.Header))
	if raw == "" {
		return fail(ReasonMissingSignature, "no %s header", h.opts.Header)
	}
	rest, ok := strings.CutPrefix(raw, h.opts.Prefix)
	if !ok {
		return fail(ReasonMalformedSignature, "%s does not start with %q", h.opts.Header, h.opts.Prefix)
	}
	var sig []byte
	var err error
	if h.opts.Encoding == "base64" {
		sig, err = base64.StdEncoding.DecodeString(rest)
	} else {
		sig, err = hex.DecodeString(rest)
	}
	if err != nil || len(sig) != h.size {
		return fail(ReasonMalformedSignature, "%s is not a %s-encoded %d-byte HMAC", h.opts.Header, h.opts.Encoding, h.size)
	}
	for _, secret := range h.secrets {
		m := hmac.New(h.newHash, secret)
		m.Write(r.Body)
		if hmac.Equal(m.Sum(nil), sig) {
			return nil
		}
	}
	return fail(ReasonMismatch, "%s does not match the body", h.opts.Header)
}

// DeliveryID implements Verifier.
func (h *HMAC) DeliveryID(r Request) string {
	if h.opts.DeliveryIDHeader == "" {
		return ""
	}
	return r.Header.Get(h.opts.DeliveryIDHeader)
}
