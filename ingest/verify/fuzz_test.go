package verify

import (
	"net/http"
	"testing"
	"time"
)

// The header parsers take attacker-controlled input: they must never panic,
// and anything they accept must have the shape the verifiers rely on.

func FuzzParseStripeHeader(f *testing.F) {
	f.Add("t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=6ffbb59b")
	f.Add("t=,v1=")
	f.Add(",,,=")
	f.Fuzz(func(t *testing.T, raw string) {
		h, err := ParseStripeHeader(raw)
		if err != nil {
			return
		}
		if h.Timestamp == "" || len(h.V1) == 0 || len(h.V1) > maxSignatures {
			t.Fatalf("accepted header without timestamp or signatures: %q", raw)
		}
		for _, s := range h.V1 {
			if len(s) != 32 {
				t.Fatalf("accepted a %d-byte signature", len(s))
			}
		}
	})
}

func FuzzParseStandardSignatures(f *testing.F) {
	f.Add("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1a,abc")
	f.Add("v1,")
	f.Add(" , ,, ")
	f.Fuzz(func(t *testing.T, raw string) {
		sigs, err := ParseStandardSignatures(raw)
		if err != nil {
			return
		}
		if len(sigs) == 0 || len(sigs) > maxSignatures {
			t.Fatalf("accepted %d signatures from %q", len(sigs), raw)
		}
		for _, s := range sigs {
			if len(s) != 32 {
				t.Fatalf("accepted a %d-byte signature", len(s))
			}
		}
	})
}

// Every verifier must reject (never panic on, never accept) random headers
// over a fixed body.
func FuzzVerifiers(f *testing.F) {
	f.Add("sha256=00", "1531420618", "v1,AAAA", "t=1,v1=00")
	f.Fuzz(func(t *testing.T, sig, ts, std, stripe string) {
		gh, _ := NewGitHub("s")
		sl, _ := NewSlack(0, "s")
		sh, _ := NewShopify("s")
		st, _ := NewStandard(0, "whsec_c2VjcmV0")
		sp, _ := NewStripe(0, "s")
		hm, _ := NewHMAC(HMACOptions{Header: "X-Sig", Prefix: "sha256="}, "s")
		h := http.Header{}
		h.Set("X-Hub-Signature-256", sig)
		h.Set("X-Slack-Signature", sig)
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Shopify-Hmac-Sha256", sig)
		h.Set("X-Sig", sig)
		h.Set("webhook-id", "msg_1")
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", std)
		h.Set("Stripe-Signature", stripe)
		r := Request{Header: h, Body: []byte(`{"id":"evt_1"}`), Now: time.Unix(1531420618, 0)}
		for _, v := range []Verifier{gh, sl, sh, st, sp, hm} {
			if v.Verify(r) == nil {
				t.Fatalf("%T accepted a random signature", v)
			}
			_ = v.DeliveryID(r)
		}
	})
}
