package verify

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func reason(t *testing.T, err error) string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *verify.Error, got %v", err)
	}
	return e.Reason
}

// GitHub's documented example ("Validating webhook deliveries").
func TestGitHubDocumentedVector(t *testing.T) {
	is := is.New(t)
	v, err := NewGitHub("It's a Secret to Everybody")
	is.NoErr(err)
	req := Request{
		Header: hdr("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
			"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
		Body: []byte("Hello, World!"),
	}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "72d3162e-cc78-11e3-81ab-4c9367dc0958")

	req.Body = []byte("Hello, World?")
	is.Equal(reason(t, v.Verify(req)), ReasonMismatch)
}

func TestGitHubRotationAndMalformed(t *testing.T) {
	is := is.New(t)
	v, err := NewGitHub("new-secret", "It's a Secret to Everybody")
	is.NoErr(err)
	body := []byte("Hello, World!")
	good := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	is.NoErr(v.Verify(Request{Header: hdr("X-Hub-Signature-256", good), Body: body}))
	for name, tc := range map[string]struct{ h, want string }{
		"missing":    {"", ReasonMissingSignature},
		"sha1":       {"sha1=757107ea0eb2509fc211221cce984b8a37570b6d", ReasonMalformedSignature},
		"short":      {good[:len(good)-2], ReasonMalformedSignature},
		"long":       {good + "00", ReasonMalformedSignature},
		"not hex":    {"sha256=" + string(make([]byte, 64)), ReasonMalformedSignature},
		"other body": {"sha256=" + "00000000000000000000000000000000000000000000000000000000000000ff", ReasonMismatch},
	} {
		h := http.Header{}
		if tc.h != "" {
			h.Set("X-Hub-Signature-256", tc.h)
		}
		if got := reason(t, v.Verify(Request{Header: h, Body: body})); got != tc.want {
			t.Errorf("%s: reason %q, want %q", name, got, tc.want)
		}
	}
}

func TestSecretsRequired(t *testing.T) {
	is := is.New(t)
	_, err := NewGitHub()
	is.True(errors.Is(err, ErrNoSecret))
	_, err = NewGitHub("")
	is.True(errors.Is(err, ErrNoSecret))
	_, err = NewStripe(0)
	is.True(errors.Is(err, ErrNoSecret))
	_, err = NewSlack(0, "")
	is.True(errors.Is(err, ErrNoSecret))
	_, err = NewShopify()
	is.True(errors.Is(err, ErrNoSecret))
	_, err = NewStandard(0)
	is.True(errors.Is(err, ErrNoSecret))
	_, err = NewHMAC(HMACOptions{Header: "X-Sig"})
	is.True(errors.Is(err, ErrNoSecret))
}

// The example of Slack's "Verifying requests from Slack" guide.
func TestSlackDocumentedVector(t *testing.T) {
	is := is.New(t)
	v, err := NewSlack(0, "8f742231b10e8888abcd99yyyzzz85a5")
	is.NoErr(err)
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	ts := time.Unix(1531420618, 0)
	req := Request{
		Header: hdr("X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
			"X-Slack-Request-Timestamp", "1531420618"),
		Body: []byte(body),
		Now:  ts.Add(SlackTolerance),
	}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")

	// One second past the five-minute window, either way.
	req.Now = ts.Add(SlackTolerance + time.Second)
	is.Equal(reason(t, v.Verify(req)), ReasonTimestampTolerance)
	req.Now = ts.Add(-SlackTolerance - time.Second)
	is.Equal(reason(t, v.Verify(req)), ReasonTimestampTolerance)

	req.Now = ts
	req.Header.Set("X-Slack-Request-Timestamp", "1531420619")
	is.Equal(reason(t, v.Verify(req)), ReasonMismatch)
	req.Header.Del("X-Slack-Request-Timestamp")
	is.Equal(reason(t, v.Verify(req)), ReasonMissingTimestamp)
	req.Header.Set("X-Slack-Request-Timestamp", "soon")
	is.Equal(reason(t, v.Verify(req)), ReasonMalformedTimestamp)

	is.Equal(v.DeliveryID(Request{Body: []byte(`{"event_id":"Ev123","type":"event_callback"}`)}), "Ev123")
}

// Stripe's scheme; the signature was computed independently with
// `printf '%s' '1492774577.{...}' | openssl dgst -sha256 -hmac whsec_test_secret`.
func TestStripeScheme(t *testing.T) {
	is := is.New(t)
	body := []byte(`{"id":"evt_test_webhook","object":"event"}`)
	const sig = "88a022085c6bdb887b02cb26ff76dd681234d9675c0f22844059f55552a8883a"
	ts := time.Unix(1492774577, 0)
	v, err := NewStripe(0, "whsec_test_secret")
	is.NoErr(err)
	req := Request{Header: hdr("Stripe-Signature", "t=1492774577,v1="+sig), Body: body, Now: ts.Add(300 * time.Second)}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "evt_test_webhook")

	// During a secret roll Stripe sends one v1 per secret, plus v0 test values.
	req.Header.Set("Stripe-Signature", "t=1492774577,v1="+sig[:62]+"00,v1="+sig+",v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39")
	is.NoErr(v.Verify(req))

	req.Now = ts.Add(301 * time.Second)
	is.Equal(reason(t, v.Verify(req)), ReasonTimestampTolerance)
	req.Now = ts

	for name, tc := range map[string]struct{ h, want string }{
		"missing":      {"", ReasonMissingSignature},
		"no t":         {"v1=" + sig, ReasonMissingTimestamp},
		"no v1":        {"t=1492774577,v0=" + sig, ReasonMissingSignature},
		"two t":        {"t=1,t=2,v1=" + sig, ReasonMalformedSignature},
		"not kv":       {"t=1492774577,garbage", ReasonMalformedSignature},
		"other t":      {"t=1492774578,v1=" + sig, ReasonMismatch},
		"bad t":        {"t=x,v1=" + sig, ReasonMalformedTimestamp},
		"wrong secret": {"t=1492774577,v1=" + sig[:63] + "0", ReasonMismatch},
	} {
		req.Header.Set("Stripe-Signature", tc.h)
		if got := reason(t, v.Verify(req)); got != tc.want {
			t.Errorf("%s: reason %q, want %q", name, got, tc.want)
		}
	}
}

// Computed independently with openssl (base64 of the binary HMAC).
func TestShopifyScheme(t *testing.T) {
	is := is.New(t)
	v, err := NewShopify("shpss_test")
	is.NoErr(err)
	req := Request{
		Header: hdr("X-Shopify-Hmac-Sha256", "aOyBiUUfH9SRX+ADJ7X4tNuns357TO16V/n4AghC3go=", "X-Shopify-Webhook-Id", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"),
		Body:   []byte(`{"id":1,"email":"a@example.com"}`),
	}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043")
	req.Header.Set("X-Shopify-Hmac-Sha256", "aOyBiUUfH9SRX+ADJ7X4tNuns357TO16V/n4AghC3go")
	is.Equal(reason(t, v.Verify(req)), ReasonMalformedSignature)
	req.Header.Set("X-Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(make([]byte, 32)))
	is.Equal(reason(t, v.Verify(req)), ReasonMismatch)
	req.Header.Del("X-Shopify-Webhook-Id")
	req.Header.Set("X-Shopify-Event-Id", "evt-1")
	is.Equal(v.DeliveryID(req), "evt-1")
}

// The reference test vector of the Standard Webhooks libraries.
func TestStandardWebhooksReferenceVector(t *testing.T) {
	is := is.New(t)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	body := []byte(`{"test": 2432232314}`)
	key, err := DecodeStandardSecret(secret)
	is.NoErr(err)
	is.Equal("v1,"+base64.StdEncoding.EncodeToString(SignStandard(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body)), want)

	v, err := NewStandard(0, "whsec_c29tZSBvdGhlciBrZXk=", secret)
	is.NoErr(err)
	now := time.Unix(1614265330, 0)
	req := Request{
		Header: hdr("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp", "1614265330",
			// During rotation the sender signs with each secret.
			"webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/rCaQstGuD0HM1jTQ= v1a,ignored "+want),
		Body: body, Now: now,
	}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "msg_p5jXN8AQM9LWM0D4loKWxJek")

	req.Body = []byte(`{"test": 2432232315}`)
	is.Equal(reason(t, v.Verify(req)), ReasonMismatch)
	req.Body = body
	req.Now = now.Add(StandardTolerance + time.Second)
	is.Equal(reason(t, v.Verify(req)), ReasonTimestampTolerance)
	req.Now = now.Add(StandardTolerance)
	is.NoErr(v.Verify(req))
	req.Header.Set("webhook-id", "msg_other")
	is.Equal(reason(t, v.Verify(req)), ReasonMismatch)
	req.Header.Del("webhook-id")
	is.Equal(reason(t, v.Verify(req)), ReasonMalformedSignature)

	_, err = NewStandard(0, "whsec_not base64!")
	is.True(err != nil)
	is.True(!strings.Contains(err.Error(), "not base64!")) // the secret is never echoed
}

// Vectors computed independently with openssl.
func TestGenericHMAC(t *testing.T) {
	is := is.New(t)
	body := []byte(`{"ok":true}`)
	v, err := NewHMAC(HMACOptions{Header: "x-signature", Algorithm: "sha512", DeliveryIDHeader: "X-Delivery"}, "generic-secret")
	is.NoErr(err)
	req := Request{Header: hdr("X-Signature", "0db8b804d6086ce18dbae5b505513360cff58c637e6ac557771007ec86c12a42c38d50170d011f11c4d17330aabcbb2c88d63127a2291706dd927f67feef7dbc", "X-Delivery", "d-1"), Body: body}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "d-1")

	v, err = NewHMAC(HMACOptions{Header: "X-Sig", Algorithm: "sha1", Encoding: "base64", Prefix: "sha1="}, "generic-secret")
	is.NoErr(err)
	req = Request{Header: hdr("X-Sig", "sha1=xRgi/DjPKR6xn/UDtJztGs6F57s="), Body: body}
	is.NoErr(v.Verify(req))
	is.Equal(v.DeliveryID(req), "")
	req.Header.Set("X-Sig", "xRgi/DjPKR6xn/UDtJztGs6F57s=")
	is.Equal(reason(t, v.Verify(req)), ReasonMalformedSignature)
	req.Header.Set("X-Sig", "sha1=yRgi/DjPKR6xn/UDtJztGs6F57s=")
	is.Equal(reason(t, v.Verify(req)), ReasonMismatch)

	_, err = NewHMAC(HMACOptions{Header: "X-Sig", Algorithm: "md5"}, "s")
	is.True(err != nil)
	_, err = NewHMAC(HMACOptions{Header: "X-Sig", Encoding: "base32"}, "s")
	is.True(err != nil)
	_, err = NewHMAC(HMACOptions{}, "s")
	is.True(err != nil)
}

func TestReasonOf(t *testing.T) {
	is := is.New(t)
	is.Equal(ReasonOf(fail(ReasonMismatch, "x")), ReasonMismatch)
	is.Equal(ReasonOf(errors.New("other")), "error")
}
