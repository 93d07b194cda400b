// Package verify authenticates inbound webhooks with the schemes providers
// publish: GitHub, Stripe, Slack, Shopify, Standard Webhooks and a generic
// HMAC. A Verifier never puts a secret or a computed signature into an error:
// errors carry a short reason code a log line or a DLQ entry can show safely.
package verify

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Request is what a verifier sees of a delivery: the provider's headers and
// the exact body bytes it signed.
type Request struct {
	Header http.Header
	Body   []byte
	// Now is the verification time; timestamped schemes compare against it.
	Now time.Time
}

// Verifier checks a delivery's signature and names its delivery id.
type Verifier interface {
	// Verify returns nil when the request is authentic, else an *Error.
	Verify(r Request) error
	// DeliveryID is the provider's id of the delivery (stable across its
	// retries), or "" when the request carries none.
	DeliveryID(r Request) string
}

// Reasons reported in Error.Reason.
const (
	ReasonMissingSignature   = "missing_signature"
	ReasonMalformedSignature = "malformed_signature"
	ReasonMismatch           = "signature_mismatch"
	ReasonMissingTimestamp   = "missing_timestamp"
	ReasonMalformedTimestamp = "malformed_timestamp"
	ReasonTimestampTolerance = "timestamp_outside_tolerance"
)

// Error is a verification failure. Detail names headers and limits only.
type Error struct {
	Reason string
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "verify: " + e.Reason
	}
	return "verify: " + e.Reason + ": " + e.Detail
}

// ReasonOf returns the reason code of a verification error, or "error".
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "error"
}

func fail(reason, format string, args ...any) error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// ErrNoSecret is returned by constructors given no usable secret.
var ErrNoSecret = errors.New("verify: at least one non-empty secret is required")

// secretsBytes converts secrets, refusing an empty set or an empty secret:
// an HMAC with an empty key would accept anything signed with one.
func secretsBytes(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecret
	}
	out := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		if s == "" {
			return nil, ErrNoSecret
		}
		out = append(out, []byte(s))
	}
	return out, nil
}

// anyEqual compares mac with every candidate in constant time per candidate.
func anyEqual(mac []byte, candidates [][]byte) bool {
	ok := false
	for _, c := range candidates {
		if hmac.Equal(mac, c) {
			ok = true
		}
	}
	return ok
}

// checkTimestamp parses Unix seconds and enforces |now - ts| <= tolerance.
func checkTimestamp(raw string, now time.Time, tolerance time.Duration) (int64, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return 0, fail(ReasonMissingTimestamp, "no timestamp")
	}
	ts, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || ts < 0 {
		return 0, fail(ReasonMalformedTimestamp, "timestamp is not Unix seconds")
	}
	if tolerance > 0 {
		d := now.Sub(time.Unix(ts, 0))
		if d < 0 {
			d = -d
		}
		if d > tolerance {
			return 0, fail(ReasonTimestampTolerance, "timestamp is more than %s away from now", tolerance)
		}
	}
	return ts, nil
}
