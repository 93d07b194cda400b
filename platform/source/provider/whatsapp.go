package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"

	"github.com/agentbridge/bridge/ingest/verify"
)

// whatsapp is the WhatsApp Cloud API package (Meta Graph API webhooks):
// deliveries are signed with the app secret (X-Hub-Signature-256,
// "sha256=" HMAC of the body); the GET verification request
// (hub.mode=subscribe, hub.verify_token, hub.challenge) is answered with
// the challenge when the verify token matches. One delivery may hold
// several entries and changes: each message is kind "message"
// (dispatchable), each status update kind "status" (a lifecycle event,
// ignored). The account is the receiving phone_number_id.
func whatsapp() *Package {
	return (&Package{
		Provider: "whatsapp", Name: "whatsapp-cloud", Version: "1.0.0", AdapterVersion: "1", Title: "WhatsApp Cloud API",
		ConfigKeys: []string{AccountKey, "business_account_id"}, SecretKeys: []string{"app_secret", "verify_token"},
		EventSchemas: map[string]json.RawMessage{
			"message": schema(map[string]string{"account_id": "string", "message_id": "string", "from": "string", "timestamp": "string", "type": "string"},
				map[string]string{"text": "string", "contact_name": "string"}),
			"status": schema(map[string]string{"account_id": "string", "message_id": "string", "status": "string", "timestamp": "string"},
				map[string]string{"recipient_id": "string"}),
		},
		Dispatchable: []string{"message"},
		AuthDoc:      "X-Hub-Signature-256: sha256= HMAC-SHA256 of the body keyed with the app_secret",
		ChallengeDoc: "GET with hub.mode=subscribe and hub.verify_token equal to the verify_token secret is answered with hub.challenge (text/plain)",
		verifier: func(s map[string]string) (verify.Verifier, error) {
			return verify.NewMeta(s["app_secret"])
		},
		parse: parseWhatsApp,
		get: func(in Inbound, s map[string]string) (*Reply, error) {
			want := sha256.Sum256([]byte(s["verify_token"]))
			got := sha256.Sum256([]byte(in.Query.Get("hub.verify_token")))
			if in.Query.Get("hub.mode") != "subscribe" || s["verify_token"] == "" || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
				return nil, &AuthError{Reason: verify.ReasonMismatch, Detail: "hub.mode is not subscribe or hub.verify_token does not match"}
			}
			c := in.Query.Get("hub.challenge")
			if c == "" || len(c) > 200 {
				return nil, payloadErr("", "hub.challenge has 1 to 200 characters")
			}
			return &Reply{ContentType: "text/plain; charset=utf-8", Body: []byte(c)}, nil
		},
	}).finish()
}

func parseWhatsApp(in Inbound) (*Reply, []Event, error) {
	m, err := obj(in.Body)
	if err != nil {
		return nil, nil, err
	}
	if str(m, "object") != "whatsapp_business_account" {
		return nil, nil, payloadErr("/object", "object is not whatsapp_business_account")
	}
	entries, _ := m["entry"].([]any)
	if len(entries) == 0 {
		return nil, nil, payloadErr("/entry", "the delivery has no entry")
	}
	var out []Event
	for _, e := range entries {
		em, _ := e.(map[string]any)
		changes, _ := em["changes"].([]any)
		for _, c := range changes {
			cm, _ := c.(map[string]any)
			if str(cm, "field") != "messages" {
				continue
			}
			v, _ := cm["value"].(map[string]any)
			account := str(v, "metadata", "phone_number_id")
			names := map[string]string{}
			contacts, _ := v["contacts"].([]any)
			for _, ct := range contacts {
				cm, _ := ct.(map[string]any)
				names[str(cm, "wa_id")] = str(cm, "profile", "name")
			}
			msgs, _ := v["messages"].([]any)
			for _, x := range msgs {
				xm, _ := x.(map[string]any)
				from := str(xm, "from")
				out = append(out, Event{Kind: "message", ID: str(xm, "id"), AccountID: account, Payload: encode(map[string]any{
					"account_id": account, "message_id": str(xm, "id"), "from": from, "timestamp": str(xm, "timestamp"),
					"type": str(xm, "type"), "text": str(xm, "text", "body"), "contact_name": names[from]}, "text", "contact_name")})
				if len(out) > MaxEvents {
					return nil, out, nil
				}
			}
			sts, _ := v["statuses"].([]any)
			for _, x := range sts {
				xm, _ := x.(map[string]any)
				id := str(xm, "id")
				out = append(out, Event{Kind: "status", ID: id + ":" + str(xm, "status"), AccountID: account, Payload: encode(map[string]any{
					"account_id": account, "message_id": id, "status": str(xm, "status"), "timestamp": str(xm, "timestamp"),
					"recipient_id": str(xm, "recipient_id")}, "recipient_id")})
				if len(out) > MaxEvents {
					return nil, out, nil
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, nil, payloadErr("/entry", "the delivery holds no message or status")
	}
	return nil, out, nil
}
