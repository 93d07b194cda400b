package ingest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/ingest/verify"
)

// Issue 20, item 4: credential headers never reach the broker or the
// dead-letter index, and signatures are sealed in dead letters yet still
// verify when replayed.
func TestDeadLetterCredentialsStrippedAndSignaturesSealed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t, "PLATFORM_WEBHOOKS_SECURITY_CREDENTIAL_HEADERS", "X-Acme-*")
	body := []byte(`{"action":"closed"}`)
	sig := githubSig("an old secret", body)
	creds := map[string]string{
		"X-Api-Key":           "key-1234567",
		"X-Auth-Token":        "tok-4567890",
		"X-Acme-Session":      "sess-789012", // configured pattern
		"Cookie":              "c=cookie-345678",
		"Proxy-Client-Secret": "sec-7777777",
	}
	kv := []string{"Content-Type", jsonCT, "X-GitHub-Delivery", "d-77", "X-Hub-Signature-256", sig, "X-Custom", "keep-me"}
	for k, v := range creds {
		kv = append(kv, k, v)
	}
	ack := readAck(t, h.post("github", body, kv...)) // wrong secret: dead-lettered by the processor
	is.Equal(h.record(ack.EventID).Reason, verify.ReasonMismatch)
	// And one refused at ingestion (415).
	refused := h.post("github", body, append(kv[2:], "Content-Type", "text/plain")...)
	refused.Body.Close()
	is.Equal(refused.StatusCode, http.StatusUnsupportedMediaType)

	e := h.dlqEntry(ack.EventID)
	is.Equal(e.Headers["http-x-custom"], "keep-me")
	is.Equal(e.Headers["http-x-hub-signature-256"], "[sealed]") // the API shows no value
	is.Equal(e.Headers["http-x-github-delivery"], "d-77")
	var rejected []DLQEntry
	waitFor(t, "the 415 dead letter", func() bool {
		var err error
		rejected, err = h.svc.listDLQ(context.Background(), DLQFilter{}, nil, 10)
		return err == nil && len(rejected) == 2
	})

	// Nothing secret in the provider topic, the DLQ topic, or bridge.db.
	raw := h.read("github")
	is.True(len(raw) >= 1)
	is.Equal(raw[0].Headers["http-x-hub-signature-256"], sig) // the processor and consumers need it
	for _, m := range append(raw, h.read("webhooks.dlq")...) {
		for k, v := range m.Headers {
			for _, secret := range creds {
				is.True(!strings.Contains(v, secret)) // a credential reached the broker
			}
			if m.Topic == "webhooks.dlq" && k == "http-x-hub-signature-256" {
				is.True(strings.HasPrefix(v, sealedPrefix))
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(h.dir, "bridge.db*"))
	is.True(len(files) > 0)
	kept := false // the check below is not vacuous: forwarded headers are there
	for _, f := range files {
		data, err := os.ReadFile(f)
		is.NoErr(err)
		kept = kept || bytes.Contains(data, []byte("keep-me"))
		for _, secret := range append([]string{strings.TrimPrefix(sig, "sha256=")}, mapValues(creds)...) {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds %q", filepath.Base(f), secret)
			}
		}
	}
	is.True(kept)

	// The sealed signature is opened for a replay: with the old secret
	// accepted again, the replayed event verifies.
	v, err := verify.NewGitHub(testSecret, "an old secret")
	is.NoErr(err)
	h.svc.verifiers["github"] = v
	_, err = h.svc.Replay(context.Background(), ack.EventID)
	is.NoErr(err)
	waitFor(t, "verified after replay", func() bool {
		rec, _, _ := h.svc.Record(context.Background(), ack.EventID)
		return rec.Status == StatusVerified
	})
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestHeaderPolicy(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	p, err := newHeaderPolicy(Security{CredentialHeaders: []string{"X-Session", "X-Acme-*"}},
		map[string]ProcessorConfig{"acme": {SignatureHeader: "X-Acme-Token"}}, nil)
	is.NoErr(err)
	for name, want := range map[string]bool{
		"Authorization": true, "Cookie": true, "X-Api-Key": true, "X-Gitlab-Token": true, "X-Client-Secret": true,
		"X-Session": true, "X-Acme-Id": true,
		"X-Acme-Token":        false, // a processor reads it
		"X-Hub-Signature-256": false, "X-GitHub-Delivery": false, "Stripe-Signature": false, "X-Custom": false,
	} {
		is.Equal(p.isCredential(name), want)
	}
	for name, want := range map[string]bool{
		"X-Hub-Signature-256": true, "Stripe-Signature": true, "X-Shopify-Hmac-Sha256": true, "Webhook-Signature": true,
		"X-Acme-Token": true, "X-GitHub-Delivery": false,
	} {
		is.Equal(p.isSignature(name), want)
	}
	_, err = LoadConfig(mustParse(t, "platform:\n  webhooks:\n    security: {credential-headers: [\"X-[\"]}\n", nil))
	is.True(err != nil)

	// The remembered answers are the computed ones; client-chosen names
	// neither grow the cache past its bound nor keep long names.
	for _, name := range []string{"Authorization", "X-Acme-Id", "X-Acme-Token", "X-Custom", "x-session"} {
		is.Equal(p.isCredentialCached(name), p.isCredential(name)) // first use
		is.Equal(p.isCredentialCached(name), p.isCredential(name)) // remembered
	}
	long := "X-Acme-" + strings.Repeat("a", maxCachedHeaderName)
	is.True(p.isCredentialCached(long))
	_, kept := p.credOf[long]
	is.True(!kept) // too long to remember
	for i := range 3 * maxCachedHeaderNames {
		p.isCredentialCached(fmt.Sprintf("X-Junk-%d", i))
	}
	is.True(len(p.credOf) <= maxCachedHeaderNames)
	is.True(p.isCredentialCached("X-Acme-Id")) // still right after the cache started over
}
