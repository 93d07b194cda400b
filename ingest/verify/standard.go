package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"time"
)

// StandardTolerance is the replay window of the Standard Webhooks reference
// libraries.
const StandardTolerance = 5 * time.Minute

// Standard verifies Standard Webhooks (standardwebhooks.com): webhook-id,
// webhook-timestamp and webhook-signature, a space-separated list of
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>". A sender rotating its
// secret signs with each; any v1 match verifies. Secrets are "whsec_" plus
// the base64 key. The delivery id is webhook-id.
type Standard struct {
	keys      [][]byte
	tolerance time.Duration
}

// NewStandard returns a Standard Webhooks verifier; tolerance <= 0 selects
// StandardTolerance. Each secret is "whsec_<base64>" (the prefix is optional).
func NewStandard(tolerance time.Duration, secrets ...string) (*Standard, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecret
	}
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		k, err := DecodeStandardSecret(s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if tolerance <= 0 {
		tolerance = StandardTolerance
	}
	return &Standard{keys: keys, tolerance: tolerance}, nil
}

// DecodeStandardSecret decodes a "whsec_<base64>" secret into the HMAC key.
func DecodeStandardSecret(s string) ([]byte, error) {
	b64 := strings.TrimPrefix(strings.TrimSpace(s), "whsec_")
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(k) == 0 {
		// The secret itself is never echoed.
		return nil, errors.New("verify: a Standard Webhooks secret must be whsec_ followed by base64")
	}
	return k, nil
}

// ParseStandardSignatures parses a webhook-signature value into its v1
// signatures; other versions (e.g. v1a) are ignored.
func ParseStandardSignatures(raw string) ([][]byte, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, fail(ReasonMissingSignature, "no webhook-signature header")
	}
	var sigs [][]byte
	for i, item := range strings.Fields(raw) {
		if i == maxSignatures {
			return nil, fail(ReasonMalformedSignature, "webhook-signature has more than %d signatures", maxSignatures)
		}
		version, sig, ok := strings.Cut(item, ",")
		if !ok {
			return nil, fail(ReasonMalformedSignature, "webhook-signature item is not version,signature")
		}
		if version != "v1" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(b) != sha256.Size {
			continue
		}
		sigs = append(sigs, b)
	}
	if len(sigs) == 0 {
		return nil, fail(ReasonMissingSignature, "webhook-signature has no valid v1 signature")
	}
	return sigs, nil
}

// Verify implements Verifier.
func (s *Standard) Verify(r Request) error {
	id := r.Header.Get("webhook-id")
	if id == "" {
		return fail(ReasonMalformedSignature, "no webhook-id header")
	}
	sigs, err := ParseStandardSignatures(r.Header.Get("webhook-signature"))
	if err != nil {
		return err
	}
	ts := strings.TrimSpace(r.Header.Get("webhook-timestamp"))
	if _, err := checkTimestamp(ts, r.Now, s.tolerance); err != nil {
		return err
	}
	for _, k := range s.keys {
		if anyEqual(SignStandard(k, id, ts, r.Body), sigs) {
			return nil
		}
	}
	return fail(ReasonMismatch, "no v1 signature of webhook-signature matches the body")
}

// SignStandard computes the raw v1 signature of id.timestamp.body.
func SignStandard(key []byte, id, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + timestamp + "."))
	m.Write(body)
	return m.Sum(nil)
}

// DeliveryID implements Verifier.
func (s *Standard) DeliveryID(r Request) string { return r.Header.Get("webhook-id") }
