package provider

import (
	"encoding/json"

	"github.com/agentbridge/bridge/ingest/verify"
)

// github is the GitHub webhooks package: deliveries are signed with the
// webhook secret (X-Hub-Signature-256), named by X-GitHub-Event and
// identified by X-GitHub-Delivery. ping (sent when a hook is created) is
// a lifecycle event, ignored; push, issues, issue_comment and
// pull_request are dispatchable; other events are kind "unsupported".
// The account is the repository owner's (or organization's) login.
func github() *Package {
	repo := map[string]string{"account_id": "string", "repository": "string", "sender": "string"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range repo {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	return (&Package{
		Provider: "github", Name: "github-webhooks", Version: "1.0.0", AdapterVersion: "1", Title: "GitHub webhooks",
		ConfigKeys: []string{AccountKey}, SecretKeys: []string{"webhook_secret"},
		EventSchemas: map[string]json.RawMessage{
			"ping":          schema(map[string]string{"hook_id": "integer", "zen": "string"}, map[string]string{"account_id": "string"}),
			"push":          schema(with(map[string]string{"ref": "string", "after": "string"}), nil),
			"issues":        schema(with(map[string]string{"action": "string", "number": "integer", "title": "string"}), nil),
			"pull_request":  schema(with(map[string]string{"action": "string", "number": "integer", "title": "string"}), nil),
			"issue_comment": schema(with(map[string]string{"action": "string", "number": "integer", "body": "string"}), nil),
			"unsupported":   schema(map[string]string{"event_type": "string"}, map[string]string{"account_id": "string"}),
		},
		Dispatchable: []string{"push", "issues", "pull_request", "issue_comment"},
		AuthDoc:      "X-Hub-Signature-256: sha256= HMAC-SHA256 of the body keyed with the webhook_secret; X-GitHub-Delivery names the event",
		ChallengeDoc: "in band: ping is acknowledged and recorded as an ignored receipt",
		verifier: func(s map[string]string) (verify.Verifier, error) {
			return verify.NewGitHub(s["webhook_secret"])
		},
		parse: parseGitHub,
	}).finish()
}

func parseGitHub(in Inbound) (*Reply, []Event, error) {
	m, err := obj(in.Body)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Header.Values("X-GitHub-Event")) != 1 || len(in.Header.Values("X-GitHub-Delivery")) != 1 {
		return nil, nil, payloadErr("", "send exactly one X-GitHub-Event and one X-GitHub-Delivery header")
	}
	kind, id := in.Header.Get("X-GitHub-Event"), in.Header.Get("X-GitHub-Delivery")
	account := str(m, "repository", "owner", "login")
	if account == "" {
		account = str(m, "organization", "login")
	}
	base := map[string]any{"account_id": account, "repository": str(m, "repository", "full_name"), "sender": str(m, "sender", "login")}
	number := func(key string) any {
		var n json.Number
		if x, ok := m[key].(map[string]any); ok {
			n, _ = x["number"].(json.Number)
		}
		v, err := n.Int64()
		if err != nil {
			return nil
		}
		return v
	}
	var p map[string]any
	switch kind {
	case "ping":
		hook, _ := m["hook_id"].(json.Number)
		h, err := hook.Int64()
		if err != nil {
			return nil, nil, payloadErr("/hook_id", "ping has no integer hook_id")
		}
		return nil, []Event{{Kind: kind, ID: id, AccountID: account, Payload: encode(map[string]any{"hook_id": h, "zen": str(m, "zen"), "account_id": account}, "account_id")}}, nil
	case "push":
		p = base
		p["ref"], p["after"] = str(m, "ref"), str(m, "after")
	case "issues":
		p = base
		p["action"], p["number"], p["title"] = str(m, "action"), number("issue"), str(m, "issue", "title")
	case "pull_request":
		p = base
		p["action"], p["number"], p["title"] = str(m, "action"), number("pull_request"), str(m, "pull_request", "title")
	case "issue_comment":
		p = base
		p["action"], p["number"], p["body"] = str(m, "action"), number("issue"), str(m, "comment", "body")
	default:
		return nil, []Event{{Kind: "unsupported", ID: id, AccountID: account, Payload: encode(map[string]any{"event_type": kind, "account_id": account}, "account_id")}}, nil
	}
	if p["number"] == nil {
		delete(p, "number")
	}
	return nil, []Event{{Kind: kind, ID: id, AccountID: account, Payload: encode(p)}}, nil
}
