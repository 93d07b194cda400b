package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// StripeTolerance is the default window Stripe's libraries allow between the
// signed timestamp and now.
const StripeTolerance = 300 * time.Second

// Stripe verifies Stripe-Signature: "t=<unix>,v1=<hex>[,v1=<hex>...]" where
// each v1 is hex HMAC-SHA256 of "<t>.<body>" keyed with the endpoint secret
// (the whole "whsec_..." string). Stripe sends several v1 values while a
// secret is rolled; any match verifies. The delivery id is the event's "id".
type Stripe struct {
	secrets   [][]byte
	tolerance time.Duration
}

// NewStripe returns a Stripe verifier; tolerance <= 0 selects StripeTolerance.
func NewStripe(tolerance time.Duration, secrets ...string) (*Stripe, error) {
	s, err := secretsBytes(secrets)
	if err != nil {
		return nil, err
	}
	if tolerance <= 0 {
		tolerance = StripeTolerance
	}
	return &Stripe{secrets: s, tolerance: tolerance}, nil
}

// StripeHeader is a parsed Stripe-Signature header.
type StripeHeader struct {
	Timestamp string
	V1        [][]byte
}

// maxSignatures bounds how many signatures one header may carry, so a
// crafted header cannot make verification quadratic.
const maxSignatures = 16

// ParseStripeHeader parses a Stripe-Signature value. Unknown schemes (v0,
// future ones) are ignored, as Stripe's libraries do.
func ParseStripeHeader(raw string) (StripeHeader, error) {
	var h StripeHeader
	if strings.TrimSpace(raw) == "" {
		return h, fail(ReasonMissingSignature, "no Stripe-Signature header")
	}
	for _, part := range strings.Split(raw, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return StripeHeader{}, fail(ReasonMalformedSignature, "Stripe-Signature item is not key=value")
		}
		switch k {
		case "t":
			if h.Timestamp != "" {
				return StripeHeader{}, fail(ReasonMalformedSignature, "Stripe-Signature has more than one t")
			}
			h.Timestamp = v
		case "v1":
			if len(h.V1) == maxSignatures {
				return StripeHeader{}, fail(ReasonMalformedSignature, "Stripe-Signature has more than %d v1 values", maxSignatures)
			}
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				// A malformed value among good ones is skipped, not fatal.
				continue
			}
			h.V1 = append(h.V1, b)
		}
	}
	if h.Timestamp == "" {
		return StripeHeader{}, fail(ReasonMissingTimestamp, "Stripe-Signature has no t")
	}
	if len(h.V1) == 0 {
		return StripeHeader{}, fail(ReasonMissingSignature, "Stripe-Signature has no valid v1 signature")
	}
	return h, nil
}

// Verify implements Verifier.
func (s *Stripe) Verify(r Request) error {
	h, err := ParseStripeHeader(r.Header.Get("Stripe-Signature"))
	if err != nil {
		return err
	}
	if _, err := checkTimestamp(h.Timestamp, r.Now, s.tolerance); err != nil {
		return err
	}
	// Sign exactly the digits Stripe sent.
	prefix := h.Timestamp + "."
	for _, secret := range s.secrets {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(prefix))
		m.Write(r.Body)
		if anyEqual(m.Sum(nil), h.V1) {
			return nil
		}
	}
	return fail(ReasonMismatch, "no v1 signature of Stripe-Signature matches the body")
}

// DeliveryID implements Verifier: the event id ("evt_...") of the body.
func (s *Stripe) DeliveryID(r Request) string { return jsonStringField(r.Body, "id") }

// jsonStringField reads a top-level string property of a JSON object body, or "".
func jsonStringField(body []byte, name string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(obj[name], &s) != nil {
		return ""
	}
	return s
}
