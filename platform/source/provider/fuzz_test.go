package provider

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// FuzzReceive: any body, correctly signed for each package, is either
// refused with a payload, size or authentication error or normalized
// into events that fit their schemas; nothing panics.
func FuzzReceive(f *testing.F) {
	f.Add([]byte(`{"type":"event_callback","team_id":"T1","event_id":"Ev1","event_time":1,"event":{"type":"message","channel":"C","user":"U","text":"t","ts":"1"}}`))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"P"},"messages":[{"id":"m","from":"f","timestamp":"1","type":"text"}]}}]}]}`))
	f.Add([]byte(`{"update_id":1,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"},"text":"hi"}}`))
	f.Add([]byte(`{"zen":"z","hook_id":1}`))
	f.Add([]byte(`[]`))
	now := time.Unix(1700000000, 0)
	secret := "fuzz-secret-123"
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range Builtin().All() {
			h := http.Header{}
			ts := strconv.FormatInt(now.Unix(), 10)
			h.Set("X-Slack-Request-Timestamp", ts)
			h.Set("X-Slack-Signature", "v0="+hmacHex(secret, "v0:"+ts+":"+string(body)))
			h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, string(body)))
			h.Set("X-Telegram-Bot-Api-Secret-Token", secret)
			h.Set("X-GitHub-Event", "push")
			h.Set("X-GitHub-Delivery", "d1")
			sec := map[string]string{}
			for _, k := range p.SecretKeys {
				sec[k] = secret
			}
			_, events, err := p.Receive(Inbound{Header: h, Body: body, Now: now}, sec)
			if err != nil {
				if !errors.Is(err, ErrPayload) && !errors.Is(err, ErrTooMany) {
					t.Fatalf("%s: unexpected error %v", p.Name, err)
				}
				continue
			}
			for _, e := range events {
				if !json.Valid(e.Payload) || p.check(e) != nil {
					t.Fatalf("%s: event %+v does not fit", p.Name, e)
				}
			}
		}
	})
}
