package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/url"
	"strings"
	"time"
)

// SlackTolerance is the replay window Slack's documentation recommends.
const SlackTolerance = 5 * time.Minute

// Slack verifies X-Slack-Signature: "v0=" + hex HMAC-SHA256 of
// "v0:<X-Slack-Request-Timestamp>:<body>" keyed with the signing secret.
// The delivery id is the Events API "event_id", else an interaction's
// "trigger_id" (form bodies), else "".
type Slack struct {
	secrets   [][]byte
	tolerance time.Duration
}

// NewSlack returns a Slack verifier; tolerance <= 0 selects SlackTolerance.
func NewSlack(tolerance time.Duration, secrets ...string) (*Slack, error) {
	s, err := secretsBytes(secrets)
	if err != nil {
		return nil, err
	}
	if tolerance <= 0 {
		tolerance = SlackTolerance
	}
	return &Slack{secrets: s, tolerance: tolerance}, nil
}

// Verify implements Verifier.
func (s *Slack) Verify(r Request) error {
	raw := r.Header.Get("X-Slack-Signature")
	if raw == "" {
		return fail(ReasonMissingSignature, "no X-Slack-Signature header")
	}
	sig, err := parsePrefixedHex(raw, "v0=", sha256.Size)
	if err != nil {
		return err
	}
	ts := strings.TrimSpace(r.Header.Get("X-Slack-Request-Timestamp"))
	if _, err := checkTimestamp(ts, r.Now, s.tolerance); err != nil {
		return err
	}
	for _, secret := range s.secrets {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("v0:" + ts + ":"))
		m.Write(r.Body)
		if hmac.Equal(m.Sum(nil), sig) {
			return nil
		}
	}
	return fail(ReasonMismatch, "X-Slack-Signature does not match the body")
}

// DeliveryID implements Verifier.
func (s *Slack) DeliveryID(r Request) string {
	if id := jsonStringField(r.Body, "event_id"); id != "" {
		return id
	}
	if q, err := url.ParseQuery(string(r.Body)); err == nil {
		return q.Get("trigger_id")
	}
	return ""
}
