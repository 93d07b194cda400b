package provider

import (
	"encoding/json"

	"github.com/agentbridge/bridge/ingest/verify"
)

// slack is the Slack Events API package: requests are signed with the
// app's signing secret (X-Slack-Signature "v0=" HMAC over
// "v0:<X-Slack-Request-Timestamp>:<body>", five minutes of tolerance);
// url_verification is answered in band with its challenge once signed.
// An event_callback holds one event: message (without subtype) and
// app_mention are dispatchable; any other event is kind "unsupported".
func slack() *Package {
	common := map[string]string{"team_id": "string", "channel": "string", "user": "string", "text": "string", "ts": "string", "event_time": "integer"}
	optional := map[string]string{"thread_ts": "string", "channel_type": "string"}
	return (&Package{
		Provider: "slack", Name: "slack-events", Version: "1.0.0", AdapterVersion: "1", Title: "Slack Events API",
		ConfigKeys: []string{AccountKey, "api_app_id"}, SecretKeys: []string{"signing_secret"},
		EventSchemas: map[string]json.RawMessage{
			"message":     schema(common, optional),
			"app_mention": schema(common, optional),
			"unsupported": schema(map[string]string{"team_id": "string", "event_type": "string", "event_time": "integer"}, nil),
		},
		Dispatchable: []string{"message", "app_mention"},
		AuthDoc:      "X-Slack-Signature: v0= HMAC-SHA256 of v0:<X-Slack-Request-Timestamp>:<body> keyed with the signing_secret; the timestamp within 5 minutes",
		ChallengeDoc: "in band: a signed url_verification request is answered {\"challenge\": <challenge>}",
		verifier: func(s map[string]string) (verify.Verifier, error) {
			return verify.NewSlack(verify.SlackTolerance, s["signing_secret"])
		},
		parse: parseSlack,
	}).finish()
}

func parseSlack(in Inbound) (*Reply, []Event, error) {
	m, err := obj(in.Body)
	if err != nil {
		return nil, nil, err
	}
	switch str(m, "type") {
	case "url_verification":
		c := str(m, "challenge")
		if c == "" {
			return nil, nil, payloadErr("/challenge", "url_verification has no challenge")
		}
		b, _ := json.Marshal(map[string]string{"challenge": c})
		return &Reply{ContentType: "application/json", Body: b}, nil, nil
	case "event_callback":
	default:
		return nil, nil, payloadErr("/type", "the Slack request type is neither url_verification nor event_callback")
	}
	ev, ok := m["event"].(map[string]any)
	if !ok {
		return nil, nil, payloadErr("/event", "event_callback has no event object")
	}
	team := str(m, "team_id")
	at, _ := m["event_time"].(json.Number)
	t, err := at.Int64()
	if err != nil {
		return nil, nil, payloadErr("/event_time", "event_callback has no integer event_time")
	}
	kind, typ := str(ev, "type"), str(ev, "type")
	if (kind != "message" && kind != "app_mention") || str(ev, "subtype") != "" {
		if sub := str(ev, "subtype"); sub != "" {
			typ += "/" + sub
		}
		return nil, []Event{{Kind: "unsupported", ID: str(m, "event_id"), AccountID: team,
			Payload: encode(map[string]any{"team_id": team, "event_type": typ, "event_time": t})}}, nil
	}
	p := map[string]any{"team_id": team, "channel": str(ev, "channel"), "user": str(ev, "user"), "text": str(ev, "text"),
		"ts": str(ev, "ts"), "event_time": t, "thread_ts": str(ev, "thread_ts"), "channel_type": str(ev, "channel_type")}
	for _, k := range []string{"channel", "user", "ts"} {
		if p[k] == "" {
			return nil, nil, payloadErr("/event/"+k, "the %s event has no %s", kind, k)
		}
	}
	return nil, []Event{{Kind: kind, ID: str(m, "event_id"), AccountID: team, Payload: encode(p, "thread_ts", "channel_type")}}, nil
}
