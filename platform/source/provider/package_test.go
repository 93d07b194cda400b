package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// Slack's published signing example (api.slack.com/authentication/
// verifying-requests-from-slack): the signature verifies, so the refusal
// is of the body (a slash command form, not an Events API request), never
// of the authentication. One byte changed is a 401.
func TestSlackPublishedVector(t *testing.T) {
	is := is.New(t)
	p := slack()
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", "1531420618")
	h.Set("X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503")
	secrets := map[string]string{"signing_secret": "8f742231b10e8888abcd99yyyzzz85a5"}
	_, _, err := p.Receive(Inbound{Header: h, Body: []byte(body), Now: time.Unix(1531420618, 0)}, secrets)
	is.True(errors.Is(err, ErrPayload))
	_, _, err = p.Receive(Inbound{Header: h, Body: []byte(body + "x"), Now: time.Unix(1531420618, 0)}, secrets)
	is.True(errors.Is(err, ErrAuth))
	// Outside the five minute tolerance: refused as authentication.
	_, _, err = p.Receive(Inbound{Header: h, Body: []byte(body), Now: time.Unix(1531420618+301, 0)}, secrets)
	is.True(errors.Is(err, ErrAuth))
}

// GitHub's published example (docs.github.com, "Validating webhook
// deliveries"): secret "It's a Secret to Everybody", payload "Hello,
// World!".
func TestGitHubPublishedVector(t *testing.T) {
	is := is.New(t)
	p := github()
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	h.Set("X-GitHub-Event", "ping")
	h.Set("X-GitHub-Delivery", "d1")
	secrets := map[string]string{"webhook_secret": "It's a Secret to Everybody"}
	_, _, err := p.Receive(Inbound{Header: h, Body: []byte("Hello, World!")}, secrets)
	is.True(errors.Is(err, ErrPayload)) // authenticated; not JSON
	_, _, err = p.Receive(Inbound{Header: h, Body: []byte("Hello, World?")}, secrets)
	is.True(errors.Is(err, ErrAuth))
}

func TestSlackNormalizes(t *testing.T) {
	is := is.New(t)
	p := slack()
	secret := "s3cr3t-signing"
	sign := func(body string, at time.Time) http.Header {
		ts := strconv.FormatInt(at.Unix(), 10)
		h := http.Header{}
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", "v0="+hmacHex(secret, "v0:"+ts+":"+body))
		return h
	}
	now := time.Now()
	sec := map[string]string{"signing_secret": secret}
	body := `{"type":"url_verification","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","token":"x"}`
	r, ev, err := p.Receive(Inbound{Header: sign(body, now), Body: []byte(body), Now: now}, sec)
	is.NoErr(err)
	is.Equal(len(ev), 0)
	is.Equal(string(r.Body), `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`)

	body = `{"type":"event_callback","team_id":"T1","event_id":"Ev1","event_time":1700000000,"event":{"type":"message","channel":"C1","user":"U1","text":"hello","ts":"1.2"}}`
	_, ev, err = p.Receive(Inbound{Header: sign(body, now), Body: []byte(body), Now: now}, sec)
	is.NoErr(err)
	is.Equal(len(ev), 1)
	is.Equal(ev[0].Kind, "message")
	is.Equal(ev[0].ID, "Ev1")
	is.Equal(ev[0].AccountID, "T1")
	is.Equal(string(ev[0].Payload), `{"channel":"C1","event_time":1700000000,"team_id":"T1","text":"hello","ts":"1.2","user":"U1"}`)

	body = `{"type":"event_callback","team_id":"T1","event_id":"Ev2","event_time":1700000000,"event":{"type":"reaction_added","user":"U1"}}`
	_, ev, err = p.Receive(Inbound{Header: sign(body, now), Body: []byte(body), Now: now}, sec)
	is.NoErr(err)
	is.Equal(ev[0].Kind, "unsupported")
	is.True(!p.Dispatches("unsupported"))
}

func TestWhatsAppChallengeAndBatch(t *testing.T) {
	is := is.New(t)
	p := whatsapp()
	sec := map[string]string{"app_secret": "app-secret-1", "verify_token": "verify-me"}
	q := url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {"verify-me"}, "hub.challenge": {"1158201444"}}
	r, err := p.Challenge(Inbound{Query: q}, sec)
	is.NoErr(err)
	is.Equal(string(r.Body), "1158201444")
	q.Set("hub.verify_token", "wrong")
	_, err = p.Challenge(Inbound{Query: q}, sec)
	is.True(errors.Is(err, ErrAuth))

	msgs := make([]string, 101)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"from":"4915","id":"wamid.%d","timestamp":"1700000000","type":"text","text":{"body":"hi"}}`, i)
	}
	body := `{"object":"whatsapp_business_account","entry":[{"id":"W1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"P1"},"messages":[` + strings.Join(msgs, ",") + `]}}]}]}`
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256="+hmacHex("app-secret-1", body))
	_, _, err = p.Receive(Inbound{Header: h, Body: []byte(body)}, sec)
	is.True(errors.Is(err, ErrTooMany))
}

func TestTelegramToken(t *testing.T) {
	is := is.New(t)
	p := telegram()
	sec := map[string]string{"secret_token": "tg-secret-token"}
	body := `{"update_id":10,"message":{"message_id":5,"date":1700000000,"chat":{"id":-42,"type":"group"},"from":{"id":7,"username":"ann"},"text":"hi"}}`
	h := http.Header{}
	h.Set("X-Telegram-Bot-Api-Secret-Token", "tg-secret-token")
	_, ev, err := p.Receive(Inbound{Header: h, Body: []byte(body)}, sec)
	is.NoErr(err)
	is.Equal(ev[0].ID, "10")
	var m map[string]any
	is.NoErr(json.Unmarshal(ev[0].Payload, &m))
	is.Equal(m["chat_id"], float64(-42))
	h.Set("X-Telegram-Bot-Api-Secret-Token", "tg-secret-tokeN")
	_, _, err = p.Receive(Inbound{Header: h, Body: []byte(body)}, sec)
	is.True(errors.Is(err, ErrAuth))
}

// The digest is computed as documented: SHA-256 over the canonical JSON
// of the event schemas, then the canonical JSON of the sorted kinds.
func TestDigest(t *testing.T) {
	is := is.New(t)
	d, err := Digest(map[string]json.RawMessage{"b": json.RawMessage(`{"type": "object"}`), "a": json.RawMessage(`true`)}, []string{"b", "a"})
	is.NoErr(err)
	sum := sha256.Sum256([]byte(`{"a":true,"b":{"type":"object"}}["a","b"]`))
	is.Equal(d, hex.EncodeToString(sum[:]))
	for _, p := range Builtin().All() {
		is.Equal(len(p.SchemaDigest), 64)
		for _, k := range p.Dispatchable {
			_, ok := p.EventSchemas[k]
			is.True(ok)
		}
	}
}
