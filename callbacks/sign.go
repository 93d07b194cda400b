package callbacks

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signature algorithms of the PLATFORM_HMAC scheme (signature.algorithm).
const (
	AlgHmacSHA256 = "HmacSHA256"
	AlgHmacSHA384 = "HmacSHA384"
	AlgHmacSHA512 = "HmacSHA512"
)

var algorithms = []string{AlgHmacSHA256, AlgHmacSHA384, AlgHmacSHA512}

func hashFor(alg string) (func() hash.Hash, bool) {
	switch alg {
	case AlgHmacSHA256:
		return sha256.New, true
	case AlgHmacSHA384:
		return sha512.New384, true
	case AlgHmacSHA512:
		return sha512.New, true
	}
	return nil, false
}

// sigLabel names an algorithm inside the signature header: "hmac-sha256".
func sigLabel(alg string) string {
	return "hmac-" + strings.ToLower(strings.TrimPrefix(alg, "Hmac"))
}

// Headers of every delivery.
const (
	HeaderEventID         = "X-Platform-Event-Id"
	HeaderEventType       = "X-Platform-Event-Type"
	HeaderDeliveryID      = "X-Platform-Delivery-Id"
	HeaderDeliveryAttempt = "X-Platform-Delivery-Attempt"
	HeaderWebhookID       = "webhook-id"
	HeaderWebhookTS       = "webhook-timestamp"
	HeaderWebhookSig      = "webhook-signature"
)

// reservedHeaders cannot carry the PLATFORM_HMAC signature.
var reservedHeaders = []string{
	"Host", "Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "User-Agent", "Authorization",
	"Cookie", "Expect", "Te", "Trailer", "Upgrade", "Proxy-Authorization",
	HeaderEventID, HeaderEventType, HeaderDeliveryID, HeaderDeliveryAttempt,
	HeaderWebhookID, HeaderWebhookTS, HeaderWebhookSig,
}

// validSignatureHeader checks a header name (an RFC 9110 token) that is not
// one the service sets itself.
func validSignatureHeader(name string) error {
	if name == "" || len(name) > maxHeaderNameLen {
		return fmt.Errorf("must be 1 to %d characters", maxHeaderNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return fmt.Errorf("must be an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)")
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(r, name) {
			return fmt.Errorf("%s is set by the service itself", r)
		}
	}
	return nil
}

// platformSignature computes the PLATFORM_HMAC header value:
//
//	t=<unix seconds>,hmac-sha256=<hex>[,hmac-sha256=<hex>]
//
// Each hex value is HMAC(secret, "<t>.<event id>.<body>") for one signing
// secret (two during a rotation grace period). The timestamp and the event id
// are signed with the body, so a captured delivery cannot be replayed later
// (receivers refuse old timestamps) nor as another event.
func platformSignature(alg string, secrets []secret, ts time.Time, eventID string, body []byte) string {
	newHash, ok := hashFor(alg)
	if !ok {
		newHash, alg = sha256.New, AlgHmacSHA256
	}
	t := strconv.FormatInt(ts.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + t)
	for _, sec := range secrets {
		m := hmac.New(newHash, sec)
		m.Write([]byte(t))
		m.Write([]byte{'.'})
		m.Write([]byte(eventID))
		m.Write([]byte{'.'})
		m.Write(body)
		b.WriteString("," + sigLabel(alg) + "=" + hex.EncodeToString(m.Sum(nil)))
	}
	return b.String()
}

// standardSignature computes the Standard Webhooks webhook-signature value:
// space-separated "v1,<base64 HMAC-SHA256(key, "<msg id>.<t>.<body>")>",
// where key is the base64 part of a whsec_ secret.
func standardSignature(keys [][]byte, msgID string, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	parts := make([]string, 0, len(keys))
	for _, key := range keys {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msgID))
		m.Write([]byte{'.'})
		m.Write([]byte(t))
		m.Write([]byte{'.'})
		m.Write(body)
		parts = append(parts, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(parts, " ")
}

// signRequest sets the signature headers of a delivery of cfg at ts.
func signRequest(h http.Header, s *Settings, cfg *Configuration, eventID string, ts time.Time, body []byte) {
	if !cfg.SignatureEnabled {
		return
	}
	secrets := cfg.signingSecrets(ts)
	if len(secrets) == 0 {
		return
	}
	if cfg.SignatureScheme == SchemeStandardWebhooks {
		keys := make([][]byte, len(secrets))
		for i, sec := range secrets {
			keys[i] = signingKey(SchemeStandardWebhooks, sec)
		}
		h.Set(HeaderWebhookID, eventID)
		h.Set(HeaderWebhookTS, strconv.FormatInt(ts.Unix(), 10))
		h.Set(HeaderWebhookSig, standardSignature(keys, eventID, ts, body))
		return
	}
	h.Set(cfg.header(s), platformSignature(s.Signature.Algorithm, secrets, ts, eventID, body))
}
