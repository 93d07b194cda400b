// Package verify checks the signature of an Agent Bridge callback delivery
// signed with the PLATFORM_HMAC scheme. It is the snippet of callbacks/README.md
// (a test keeps the two identical); receivers may copy it or import it.
package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Platform verifies a delivery. header is the X-Platform-Signature value
// ("t=<unix>,hmac-sha256=<hex>[,hmac-sha256=<hex>]"), eventID the
// X-Platform-Event-Id header and body the raw request body. The signed
// content is "<t>.<eventID>.<body>". A timestamp further than tolerance from
// now is refused, so a captured delivery cannot be replayed later; remember
// the event ids you have processed to refuse replays within the tolerance.
func Platform(secret, header, eventID string, body []byte, tolerance time.Duration, now time.Time) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "hmac-sha256":
			sigs = append(sigs, v)
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("malformed signature header")
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return errors.New("signature timestamp outside the tolerance")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + eventID + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range sigs {
		got, err := hex.DecodeString(s)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no valid signature")
}
