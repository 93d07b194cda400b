package provider

import (
	"encoding/json"
	"strconv"

	"github.com/agentbridge/bridge/ingest/verify"
)

// telegram is the Telegram Bot API package: setWebhook's secret_token
// comes back in X-Telegram-Bot-Api-Secret-Token on every update. One
// delivery is one Update, identified by update_id; a message with text
// is kind "message" (dispatchable), any other update kind "unsupported".
// Telegram names no account in updates, so a connection has no
// account_id.
func telegram() *Package {
	return (&Package{
		Provider: "telegram", Name: "telegram-bot", Version: "1.0.0", AdapterVersion: "1", Title: "Telegram Bot API",
		ConfigKeys: []string{"bot_username"}, SecretKeys: []string{"secret_token"},
		EventSchemas: map[string]json.RawMessage{
			"message": schema(map[string]string{"update_id": "integer", "message_id": "integer", "chat_id": "integer", "chat_type": "string",
				"date": "integer", "text": "string"}, map[string]string{"from_id": "integer", "from_username": "string"}),
			"unsupported": schema(map[string]string{"update_id": "integer", "update_type": "string"}, nil),
		},
		Dispatchable: []string{"message"},
		AuthDoc:      "X-Telegram-Bot-Api-Secret-Token equal to the secret_token secret given to setWebhook",
		ChallengeDoc: "none",
		verifier: func(s map[string]string) (verify.Verifier, error) {
			return verify.NewToken("X-Telegram-Bot-Api-Secret-Token", s["secret_token"])
		},
		parse: parseTelegram,
	}).finish()
}

func parseTelegram(in Inbound) (*Reply, []Event, error) {
	m, err := obj(in.Body)
	if err != nil {
		return nil, nil, err
	}
	uid, err := strconv.ParseInt(num(m, "update_id"), 10, 64)
	if err != nil {
		return nil, nil, payloadErr("/update_id", "the update has no integer update_id")
	}
	id := strconv.FormatInt(uid, 10)
	msg, ok := m["message"].(map[string]any)
	if !ok || str(msg, "text") == "" {
		typ := "unknown"
		for k := range m {
			if k != "update_id" {
				typ = k
				break
			}
		}
		return nil, []Event{{Kind: "unsupported", ID: id, Payload: encode(map[string]any{"update_id": uid, "update_type": typ})}}, nil
	}
	p := map[string]any{"update_id": uid, "text": str(msg, "text"), "chat_type": str(msg, "chat", "type")}
	for key, path := range map[string][]string{"message_id": {"message_id"}, "chat_id": {"chat", "id"}, "date": {"date"}, "from_id": {"from", "id"}} {
		n, err := strconv.ParseInt(num(msg, path...), 10, 64)
		if err != nil {
			if key == "from_id" {
				continue
			}
			return nil, nil, payloadErr("/message/"+path[0], "the message has no integer %s", key)
		}
		p[key] = n
	}
	if u := str(msg, "from", "username"); u != "" {
		p["from_username"] = u
	}
	return nil, []Event{{Kind: "message", ID: id, Payload: encode(p)}}, nil
}
