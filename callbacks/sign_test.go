package callbacks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/callbacks/verify"
)

// TestStandardWebhooksVector reproduces the signature published with the
// Standard Webhooks reference libraries: what they verify, we produce.
func TestStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	sec := secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	is.Equal(checkSecret(SchemeStandardWebhooks, string(sec)), "")
	got := standardSignature([][]byte{signingKey(SchemeStandardWebhooks, sec)}, "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	is.Equal(got, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
}

func TestPlatformSignatureVerifies(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"a":1}`)
	id := "0b7e2f0e-6b8f-4a4e-9d0b-0c2a3b4c5d6e"
	hdr := platformSignature(AlgHmacSHA256, []secret{secret(testSecret)}, now, id, body)
	is.True(strings.HasPrefix(hdr, "t=1700000000,hmac-sha256="))
	is.NoErr(verify.Platform(testSecret, hdr, id, body, 5*time.Minute, now.Add(time.Minute)))

	// Anything changed breaks it.
	is.True(verify.Platform(testSecret, hdr, id, []byte(`{"a":2}`), 5*time.Minute, now) != nil)                                    // body
	is.True(verify.Platform(testSecret, hdr, uuid.NewString(), body, 5*time.Minute, now) != nil)                                   // another event
	is.True(verify.Platform("another-secret-value", hdr, id, body, 5*time.Minute, now) != nil)                                     // secret
	is.True(verify.Platform(testSecret, hdr, id, body, 5*time.Minute, now.Add(6*time.Minute)) != nil)                              // replayed later
	is.True(verify.Platform(testSecret, strings.Replace(hdr, "t=1700000000", "t=1700000300", 1), id, body, time.Hour, now) != nil) // timestamp forged
	is.True(verify.Platform(testSecret, "garbage", id, body, time.Hour, now) != nil)

	// Rotation: two signatures, either secret verifies.
	two := platformSignature(AlgHmacSHA256, []secret{secret("new-secret-0123456789"), secret(testSecret)}, now, id, body)
	is.Equal(strings.Count(two, "hmac-sha256="), 2)
	is.NoErr(verify.Platform(testSecret, two, id, body, time.Minute, now))
	is.NoErr(verify.Platform("new-secret-0123456789", two, id, body, time.Minute, now))

	// Other algorithms label themselves.
	is.True(strings.Contains(platformSignature(AlgHmacSHA512, []secret{secret(testSecret)}, now, id, body), ",hmac-sha512="))
	is.True(strings.Contains(platformSignature(AlgHmacSHA384, []secret{secret(testSecret)}, now, id, body), ",hmac-sha384="))
}

// TestReadmeSnippetsAreTheTestedCode: the Go snippet of README.md is
// verify/verify.go verbatim (which the end-to-end test runs), and the shell
// snippet is executed against a real signature.
func TestReadmeSnippetsAreTheTestedCode(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	readme, err := os.ReadFile("README.md")
	is.NoErr(err)
	goSnippet := snippet(t, string(readme), "go", "verify/verify.go")
	src, err := os.ReadFile("verify/verify.go")
	is.NoErr(err)
	is.Equal(strings.TrimSpace(goSnippet), strings.TrimSpace(string(src)))

	sh := snippet(t, string(readme), "sh", "verify.sh")
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed: the shell snippet is not run")
	}
	dir := t.TempDir()
	body := []byte(`{"ref":"refs/heads/main","n":42}`)
	is.NoErr(os.WriteFile(dir+"/body.json", body, 0o600))
	id := uuid.NewString()
	run := func(sig string) (string, error) {
		cmd := exec.Command("sh", "-c", sh)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SECRET="+testSecret, "EVENT_ID="+id, "SIG="+sig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(platformSignature(AlgHmacSHA256, []secret{secret(testSecret)}, time.Now(), id, body))
	is.NoErr(err)
	is.Equal(strings.TrimSpace(out), "verified")
	_, err = run(platformSignature(AlgHmacSHA256, []secret{secret("some-other-secret-xx")}, time.Now(), id, body))
	is.True(err != nil) // a wrong signature fails
	_, err = run(platformSignature(AlgHmacSHA256, []secret{secret(testSecret)}, time.Now().Add(-time.Hour), id, body))
	is.True(err != nil) // a stale timestamp fails
}

// snippet returns the fenced code block that follows "<!-- snippet: name -->".
func snippet(t *testing.T, doc, lang, name string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)<!-- snippet: " + regexp.QuoteMeta(name) + " -->\\s*```" + lang + "\n(.*?)```")
	m := re.FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("README.md has no %s snippet %s", lang, name)
	}
	return m[1]
}

func TestSignatureHeaderNames(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"X-Platform-Signature": true, "X-Acme-Sig": true, "": false, "Has Space": false, "Content-Type": false,
		"content-length": false, "webhook-signature": false, "X-Platform-Event-Id": false, "Ünicode": false,
		strings.Repeat("a", 100): true, strings.Repeat("a", 101): false,
	} {
		if err := validSignatureHeader(name); (err == nil) != ok {
			t.Errorf("%q: err = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestSignatureSettingsHonoured: CALLBACK_SIGNATURE_HEADER and
// CALLBACK_SIGNATURE_ALGORITHM change what receivers get; a configuration's
// signatureHeader overrides the service-wide name.
func TestSignatureSettingsHonoured(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	h := newHarness(t, fastYAML, map[string]string{
		"CALLBACK_SIGNATURE_HEADER":    "X-Acme-Signature",
		"CALLBACK_SIGNATURE_ALGORITHM": "HmacSHA512",
	})
	rc := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	a := h.createConfig(map[string]any{"name": "a", "url": rc.URL, "subscribedEventTypes": []string{"x"}, "signatureEnabled": true, "secret": testSecret})
	b := h.createConfig(map[string]any{"name": "b", "url": rc.URL, "subscribedEventTypes": []string{"x"}, "signatureEnabled": true, "secret": testSecret, "signatureHeader": "X-Own"})
	for _, c := range []Configuration{a, b} {
		n := rc.count() // before Dispatch: the delivery may arrive before Dispatch returns
		_, err := h.svc.Dispatch(t.Context(), c.ID, "x", uuid.NewString(), json.RawMessage(`{}`))
		is.NoErr(err)
		waitFor(t, 15*time.Second, "delivery", func() bool { return rc.count() > n })
	}
	waitFor(t, 15*time.Second, "both", func() bool { return rc.count() == 2 })
	var acme, own int
	for _, d := range rc.deliveries() {
		if v := d.header.Get("X-Acme-Signature"); v != "" {
			acme++
			is.True(strings.Contains(v, ",hmac-sha512="))
		}
		if v := d.header.Get("X-Own"); v != "" {
			own++
		}
		is.Equal(d.header.Get("X-Platform-Signature"), "")
	}
	is.Equal(acme, 1)
	is.Equal(own, 1)
}

func TestSigningSkippedWithoutSignature(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	s := DefaultSettings()
	h := http.Header{}
	signRequest(h, &s, &Configuration{SignatureEnabled: false, secret: secret(testSecret)}, "id", time.Now(), []byte("{}"))
	is.Equal(len(h), 0)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 24))
	signRequest(h, &s, &Configuration{SignatureEnabled: true, SignatureScheme: SchemeStandardWebhooks, secret: secret("whsec_" + key)}, "id", time.Unix(5, 0), []byte("{}"))
	is.Equal(h.Get("webhook-id"), "id")
	is.Equal(h.Get("webhook-timestamp"), strconv.Itoa(5))
	is.True(strings.HasPrefix(h.Get("webhook-signature"), "v1,"))
}
