package ingest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/ingest/verify"
)

const processorsYAML = `platform:
  webhooks:
    processors:
      github:
        secret: "It's a Secret to Everybody"
      stripe:
        secret-env: STRIPE_SECRET
      hooks:
        type: standard-webhooks
        secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
      plain:
        type: none
`

func processorHarness(t *testing.T, extra ...string) *harness {
	env := map[string]string{"STRIPE_SECRET": "whsec_stripe"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return newHarness(t, harnessOpt{yaml: processorsYAML, env: env})
}

// The end-to-end path: signed GitHub webhook → 202 → published → verified
// by the processor → recorded; the sink sees the exact payload.
func TestEndToEndGitHubVerified(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	var mu sync.Mutex
	var seen []Event
	h.svc.OnEvent("github", func(_ context.Context, ev Event) error {
		mu.Lock()
		seen = append(seen, ev)
		mu.Unlock()
		return nil
	})
	body := []byte(`{"action":"opened","number":1}`)
	ack := readAck(t, h.post("github", body, "Content-Type", jsonCT,
		"X-GitHub-Delivery", "delivery-1", "X-Hub-Signature-256", githubSig(testSecret, body)))
	rec := h.record(ack.EventID)
	is.Equal(rec.Status, StatusVerified)
	is.Equal(rec.DeliveryID, "delivery-1")
	is.Equal(rec.Topic, "github")
	is.Equal(rec.Provider, "github")
	mu.Lock()
	is.Equal(len(seen), 1)
	is.Equal(seen[0].Payload, body)
	is.True(seen[0].Verified)
	mu.Unlock()

	// The provider retries the same delivery: a new event, recorded duplicate.
	ack2 := readAck(t, h.post("github", body, "Content-Type", jsonCT,
		"X-GitHub-Delivery", "delivery-1", "X-Hub-Signature-256", githubSig(testSecret, body)))
	rec2 := h.record(ack2.EventID)
	is.Equal(rec2.Status, StatusDuplicate)
	mu.Lock()
	is.Equal(len(seen), 1) // the sink is not called again
	mu.Unlock()
}

func TestBadSignatureRecordedAndDeadLettered(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	body := []byte(`{"action":"opened"}`)
	// Ingestion accepts (it does not verify); the processor rejects.
	ack := readAck(t, h.post("github", body, "Content-Type", jsonCT,
		"X-GitHub-Delivery", "delivery-2", "X-Hub-Signature-256", githubSig("wrong secret", body)))
	rec := h.record(ack.EventID)
	is.Equal(rec.Status, StatusFailed)
	is.Equal(rec.Reason, verify.ReasonMismatch)
	e := h.dlqEntry(ack.EventID)
	is.Equal(e.Stage, StageProcess)
	is.Equal(e.Reason, verify.ReasonMismatch)
	is.True(e.Replayable)
	is.Equal(e.Topic, "github")
	is.Equal(e.Payload, body)

	// Missing signature is a different reason.
	ack = readAck(t, h.post("github", body, "Content-Type", jsonCT))
	is.Equal(h.record(ack.EventID).Reason, verify.ReasonMissingSignature)

	// The delivery id of a failed event is not claimed: a correctly signed
	// retry of the same delivery is verified.
	ack = readAck(t, h.post("github", body, "Content-Type", jsonCT,
		"X-GitHub-Delivery", "delivery-2", "X-Hub-Signature-256", githubSig(testSecret, body)))
	is.Equal(h.record(ack.EventID).Status, StatusVerified)
}

// A secret fixed after failures: replaying the dead letter verifies it.
func TestReplayAfterSecretFix(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	body := []byte(`{"n":1}`)
	ack := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-Hub-Signature-256", githubSig("rotated", body)))
	is.Equal(h.record(ack.EventID).Status, StatusFailed)
	h.dlqEntry(ack.EventID)
	// Operator adds the new secret (simulated by swapping the verifier).
	v, err := verify.NewGitHub(testSecret, "rotated")
	is.NoErr(err)
	h.svc.verifiers["github"] = v
	_, err = h.svc.Replay(context.Background(), ack.EventID)
	is.NoErr(err)
	waitFor(t, "verified after replay", func() bool {
		rec, _, _ := h.svc.Record(context.Background(), ack.EventID)
		return rec.Status == StatusVerified && rec.Attempts == 2
	})
	e, err := h.svc.DeadLetter(context.Background(), ack.EventID)
	is.NoErr(err)
	is.Equal(e.Replays, 1)
	is.True(e.ReplayedAt != nil)
}

func TestStripeAndStandardThroughProcessor(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	body := []byte(`{"id":"evt_123","type":"charge.succeeded"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte("whsec_stripe"))
	m.Write([]byte(ts + "."))
	m.Write(body)
	sig := "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
	ack := readAck(t, h.post("stripe", body, "Content-Type", jsonCT, "Stripe-Signature", sig))
	rec := h.record(ack.EventID)
	is.Equal(rec.Status, StatusVerified)
	is.Equal(rec.DeliveryID, "evt_123")

	// Standard Webhooks, type chosen explicitly for provider "hooks".
	key, _ := verify.DecodeStandardSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	std := "v1," + base64.StdEncoding.EncodeToString(verify.SignStandard(key, "msg_1", ts, body))
	ack = readAck(t, h.post("hooks", body, "Content-Type", jsonCT, "webhook-id", "msg_1", "webhook-timestamp", ts, "webhook-signature", std))
	rec = h.record(ack.EventID)
	is.Equal(rec.Status, StatusVerified)
	is.Equal(rec.DeliveryID, "msg_1")

	// Type none records events as unverified; unconfigured providers are
	// published but not consumed by the processor.
	ack = readAck(t, h.post("plain", body, "Content-Type", jsonCT))
	is.Equal(h.record(ack.EventID).Status, StatusUnverified)
	ack = readAck(t, h.post("unconfigured", body, "Content-Type", jsonCT))
	time.Sleep(50 * time.Millisecond)
	_, ok, err := h.svc.Record(context.Background(), ack.EventID)
	is.NoErr(err)
	is.True(!ok)
}

// A sink failure redelivers the event; it is recorded once the sink succeeds.
func TestSinkErrorRedelivers(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	var mu sync.Mutex
	calls := 0
	h.svc.OnEvent("", func(_ context.Context, ev Event) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return errors.New("downstream busy")
		}
		return nil
	})
	body := []byte(`{}`)
	ack := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-GitHub-Delivery", "d-sink", "X-Hub-Signature-256", githubSig(testSecret, body)))
	is.Equal(h.record(ack.EventID).Status, StatusVerified)
	mu.Lock()
	is.Equal(calls, 2)
	mu.Unlock()
}

// Compressed envelopes are inflated before verification.
func TestProcessorWithCompression(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"GZIP", "ZSTD", "LZ4"} {
		t.Run(alg, func(t *testing.T) {
			is := is.New(t)
			h := processorHarness(t, "PLATFORM_WEBHOOKS_COMPRESSION_ENABLED", "true",
				"PLATFORM_WEBHOOKS_COMPRESSION_ALGORITHM", alg, "PLATFORM_WEBHOOKS_COMPRESSION_MIN_SIZE", "16")
			body := []byte(fmt.Sprintf(`{"data":"%0512d"}`, 7))
			ack := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-Hub-Signature-256", githubSig(testSecret, body)))
			m := h.read("github")[0]
			is.True(m.Headers[hEncoding] != "")
			is.True(len(m.Value) < len(body))
			is.Equal(h.record(ack.EventID).Status, StatusVerified)
		})
	}
}

func TestDedupeWindowAndPurge(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	ctx := context.Background()
	now := time.Now()
	d := h.svc.dedupe
	claim := func(eventID string, at time.Time) bool {
		var ok bool
		is.NoErr(h.db.Write(ctx, func(tx *sqlTx) error {
			var err error
			ok, err = d.claim(tx, "github", "dup", eventID, at)
			return err
		}))
		return ok
	}
	is.True(claim("e1", now))
	is.True(claim("e1", now))  // the same event again (redelivery)
	is.True(!claim("e2", now)) // another event within the window
	first, err := d.claimOrFirst(ctx, "github", "dup", "e2", now)
	is.NoErr(err)
	is.Equal(first, "e1")
	first, err = d.claimOrFirst(ctx, "github", "dup", "e1", now)
	is.NoErr(err)
	is.Equal(first, "") // the claiming event itself
	// Just inside and just past the window.
	is.True(!claim("e2", now.Add(d.window-time.Millisecond)))
	is.True(claim("e2", now.Add(d.window)))
	// Purge removes expired claims.
	is.NoErr(d.purge(ctx, now.Add(3*d.window), time.Hour))
	var n int
	is.NoErr(h.db.Reader().QueryRow(`SELECT count(*) FROM ingest_idempotency`).Scan(&n))
	is.Equal(n, 0)
}

func TestMalformedEnvelopeDeadLettered(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	is.NoErr(h.broker.Publish(context.Background(), brokerMessage("github", map[string]string{hID: "bogus-1", hProvider: "github"}, []byte("x"))))
	rec := h.record("bogus-1")
	is.Equal(rec.Status, StatusFailed)
	is.Equal(rec.Reason, "malformed_envelope")
	is.Equal(h.dlqEntry("bogus-1").Stage, StageProcess)
}

func TestProcessorConfigErrors(t *testing.T) {
	t.Parallel()
	for name, yaml := range map[string]string{
		"no secret":      "platform:\n  webhooks:\n    processors:\n      github: {}\n",
		"unknown type":   "platform:\n  webhooks:\n    processors:\n      x:\n        type: md5\n        secret: s\n",
		"hmac header":    "platform:\n  webhooks:\n    processors:\n      x:\n        type: hmac\n        secret: s\n",
		"missing env":    "platform:\n  webhooks:\n    processors:\n      github:\n        secret-env: NOPE\n",
		"bad std secret": "platform:\n  webhooks:\n    processors:\n      x:\n        type: standard-webhooks\n        secret: 'whsec_!!!supersecret'\n",
	} {
		f := mustParse(t, yaml, nil)
		_, err := New(depsFor(t, f))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if containsAny(err.Error(), "supersecret") {
			t.Errorf("%s: error leaks the secret: %v", name, err)
		}
	}
	_ = http.StatusOK
}
