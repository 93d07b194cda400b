package ingest

import (
	"testing"

	"github.com/matryer/is"
)

// Issue 20, item 5: the raw provider topic carries every accepted webhook,
// marked unverified; the verified topic carries only events whose signature
// verified, once per delivery id.
func TestVerifiedTopicCarriesVerifiedDeduplicatedEvents(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	body := []byte(`{"action":"opened","number":7}`)
	good := func(delivery string) Ack {
		return readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-GitHub-Event", "pull_request",
			"X-GitHub-Delivery", delivery, "X-Hub-Signature-256", githubSig(testSecret, body)))
	}
	first := good("d-1")
	is.Equal(h.record(first.EventID).Status, StatusVerified)
	dup := good("d-1") // the provider's retry of the same delivery
	is.Equal(h.record(dup.EventID).Status, StatusDuplicate)
	forged := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-GitHub-Event", "pull_request",
		"X-GitHub-Delivery", "d-2", "X-Hub-Signature-256", githubSig("not the secret", body)))
	is.Equal(h.record(forged.EventID).Status, StatusFailed)
	unsigned := readAck(t, h.post("plain", body, "Content-Type", jsonCT)) // type none
	is.Equal(h.record(unsigned.EventID).Status, StatusUnverified)

	raw := h.read("github")
	is.Equal(len(raw), 3) // the raw topic is as before: everything accepted
	for _, m := range raw {
		is.Equal(m.Headers[hVerification], Unverified)
		is.Equal(m.Headers[hType], EventType)
	}
	verified := h.read("github.verified")
	is.Equal(len(verified), 1) // neither the duplicate nor the forgery
	m := verified[0]
	is.Equal(m.Key, first.EventID)
	is.Equal(m.Headers[hID], first.EventID)
	is.Equal(m.Headers[hType], VerifiedEventType)
	is.Equal(m.Headers[hVerification], Verified)
	is.Equal(m.Headers[hDeliveryID], "d-1")
	is.Equal(m.Headers["http-x-github-event"], "pull_request") // what callbacks read the type from
	is.Equal(m.Value, body)
	env, err := ParseEnvelope(m)
	is.NoErr(err)
	is.Equal(env.ID, first.EventID)
	is.Equal(env.DeliveryID, "d-1")
	is.Equal(env.Verification, Verified)
	rawEnv, err := ParseEnvelope(raw[0])
	is.NoErr(err)
	is.Equal(rawEnv.Verification, Unverified)

	// A type-none provider's events are not verified: none on its verified topic.
	is.Equal(len(h.read("plain.verified")), 0)
	is.Equal(h.read("plain")[0].Headers[hVerification], Unverified)
}

// An empty verified-suffix turns the verified topic off; a suffix that
// provider topics already end with is refused.
func TestVerifiedSuffixConfig(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{yaml: processorsYAML + "    topic: {verified-suffix: \"\"}\n", env: map[string]string{"STRIPE_SECRET": "whsec_stripe"}})
	body := []byte(`{}`)
	ack := readAck(t, h.post("github", body, "Content-Type", jsonCT,
		"X-GitHub-Delivery", "d-9", "X-Hub-Signature-256", githubSig(testSecret, body)))
	is.Equal(h.record(ack.EventID).Status, StatusVerified)
	is.Equal(len(h.read("github.verified")), 0)

	_, err := LoadConfig(mustParse(t, "platform:\n  webhooks:\n    topic: {suffix: .verified}\n", nil))
	is.True(err != nil)
}
