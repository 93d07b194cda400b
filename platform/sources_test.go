package platform_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/engine"
	"github.com/agentbridge/bridge/platform/source"
	"github.com/agentbridge/bridge/platform/source/provider"
)

// chatWorkflow waits for chat.reply, whose payload needs from.
const chatWorkflow = `kind: workflow
id: acme/chat
version: 1
steps:
  - id: reply
    signal: chat.reply
    deadline: 1h
    schema:
      type: object
      required: [from]
      properties:
        from: {type: string}
        text: {type: string}
  - id: done
    succeed:
      result: {}
`

func connectionsPath(h *harness) string { return ePath(h) + "/connections" }
func sourcesPath(h *harness) string     { return ePath(h) + "/provider-sources" }
func receiptsPath(h *harness) string    { return ePath(h) + "/provider-receipts" }

func (h *harness) mustConnection(tok string, body map[string]any) source.Connection {
	h.t.Helper()
	var c source.Connection
	h.must(201, h.post(connectionsPath(h), tok, body), &c)
	return c
}

// pkg answers the built-in declaration of provider as GET
// P/provider-packages shows it.
func (h *harness) pkg(tok, prov string) provider.Package {
	h.t.Helper()
	var list struct {
		Items []provider.Package `json:"items"`
	}
	h.must(200, h.get("/api/v1/tenants/"+h.ws.TenantID+"/projects/"+h.ws.ProjectID+"/provider-packages", tok), &list)
	for _, p := range list.Items {
		if p.Provider == prov {
			return p
		}
	}
	h.t.Fatalf("no package for %s", prov)
	return provider.Package{}
}

// sourceBody is a valid source request for the connection c.
func (h *harness) sourceBody(tok string, c source.Connection, extra map[string]any) map[string]any {
	p := h.pkg(tok, c.Provider)
	b := map[string]any{"name": "src", "provider": c.Provider, "package": p.Name, "package_version": p.Version,
		"schema_digest": p.SchemaDigest, "connection_revision_id": c.ID, "policy": c.Config}
	for k, v := range extra {
		if v == nil {
			delete(b, k)
			continue
		}
		b[k] = v
	}
	return b
}

func (h *harness) mustSource(tok string, body map[string]any) source.Source {
	h.t.Helper()
	var s source.Source
	h.must(201, h.post(sourcesPath(h), tok, body), &s)
	return s
}

// ingest posts body to a source's ingress with hdr.
func (h *harness) ingest(src source.Source, body []byte, hdr map[string]string) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: src.IngressURL, body: body, hdr: hdr})
}

// waitReceipt polls a receipt until it leaves pending (10 s at most).
func (h *harness) waitReceipt(tok, id string) source.Receipt {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r source.Receipt
		h.must(200, h.get(receiptsPath(h)+"/"+id, tok), &r)
		if r.Status != source.StatusPending || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) receipts(tok, query string) []source.Receipt {
	h.t.Helper()
	var page struct {
		Items []source.Receipt `json:"items"`
	}
	h.must(200, h.get(receiptsPath(h)+"?limit=100"+query, tok), &page)
	return page.Items
}

func hexHMAC(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// slackSigned signs body as Slack does (v0 signing secret).
func slackSigned(secret, body string, at time.Time) map[string]string {
	ts := strconv.FormatInt(at.Unix(), 10)
	return map[string]string{"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts,
		"X-Slack-Signature": "v0=" + hexHMAC(secret, "v0:"+ts+":"+body)}
}

func slackMessage(eventID, team, text string) string {
	return fmt.Sprintf(`{"token":"legacy","team_id":%q,"api_app_id":"A1","type":"event_callback","event_id":%q,"event_time":1700000000,"event":{"type":"message","channel":"C1","user":"U1","text":%q,"ts":"1700000000.000100","channel_type":"channel"}}`, team, eventID, text)
}

const slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"

func TestConnections(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	valid := func() map[string]any {
		return map[string]any{"name": "workspace", "provider": "slack", "config": map[string]string{"account_id": "T1"},
			"secrets": map[string]string{"signing_secret": slackSecret}}
	}
	res := h.post(connectionsPath(h), op, valid())
	var c source.Connection
	h.must(201, res, &c)
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.True(strings.HasSuffix(res.header.Get("Location"), "/connections/"+c.ID))
	is.Equal(c.Revision, int64(1))
	is.Equal(c.SecretKeys, []string{"signing_secret"})
	is.True(!strings.Contains(string(res.body), slackSecret))
	var stored string
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT secrets FROM platform_connections WHERE id = ?`, c.ID).Scan(&stored))
	is.True(!strings.Contains(stored, slackSecret))

	// Bounds and bad input, each refused with the field's pointer and nothing stored.
	bad := []struct {
		mod  func(m map[string]any)
		path string
	}{
		{func(m map[string]any) { m["name"] = "" }, "/name"},
		{func(m map[string]any) { m["name"] = strings.Repeat("n", 201) }, "/name"},
		{func(m map[string]any) { m["provider"] = "irc" }, "/provider"},
		{func(m map[string]any) { m["secrets"] = map[string]string{} }, "/secrets/signing_secret"},
		{func(m map[string]any) { m["secrets"] = map[string]string{"signing_secret": "x", "other": "y"} }, "/secrets/other"},
		{func(m map[string]any) { m["secrets"] = map[string]string{"signing_secret": strings.Repeat("s", 1025)} }, "/secrets/signing_secret"},
		{func(m map[string]any) { m["config"] = map[string]string{"region": "eu"} }, "/config/region"},
		{func(m map[string]any) { m["config"] = map[string]string{"account_id": strings.Repeat("a", 501)} }, "/config/account_id"},
		{func(m map[string]any) { m["config"] = map[string]string{"account_id": ""} }, "/config/account_id"},
		{func(m map[string]any) { m["extra"] = true }, "/extra"},
	}
	for _, b := range bad {
		body := valid()
		b.mod(body)
		p := h.problem(422, "PF-VALIDATION", h.post(connectionsPath(h), op, body))
		is.Equal(p.Diagnostics[0].Path, b.path)
	}
	ok := valid()
	ok["name"] = strings.Repeat("n", 200)
	ok["secrets"] = map[string]string{"signing_secret": strings.Repeat("s", 1024)}
	ok["config"] = map[string]string{"account_id": strings.Repeat("a", 500)}
	h.must(201, h.post(connectionsPath(h), op, ok), nil)

	// Optional Idempotency-Key: same key and body answer the committed
	// revision; another body answers 409.
	key := map[string]string{"Idempotency-Key": "conn-1"}
	var k1, k2 source.Connection
	h.must(201, h.do(req{method: "POST", path: connectionsPath(h), token: op, body: valid(), hdr: key}), &k1)
	h.must(201, h.do(req{method: "POST", path: connectionsPath(h), token: op, body: valid(), hdr: key}), &k2)
	is.Equal(k1.ID, k2.ID)
	other := valid()
	other["name"] = "other"
	h.problem(409, "PF-IDEMPOTENCY-CONFLICT", h.do(req{method: "POST", path: connectionsPath(h), token: op, body: other, hdr: key}))

	// A new revision: new id, revision 2, same connection; the provider stays.
	rev := valid()
	rev["config"] = map[string]string{"account_id": "T2"}
	var c2 source.Connection
	h.must(201, h.post(connectionsPath(h)+"/"+c.ConnectionID+"/revisions", op, rev), &c2)
	is.Equal(c2.Revision, int64(2))
	is.Equal(c2.ConnectionID, c.ConnectionID)
	is.True(c2.ID != c.ID)
	moved := valid()
	moved["provider"] = "github"
	moved["secrets"] = map[string]string{"webhook_secret": "w"}
	h.problem(422, "PF-VALIDATION", h.post(connectionsPath(h)+"/"+c.ConnectionID+"/revisions", op, moved))
	h.problem(404, "PF-NOT-FOUND", h.post(connectionsPath(h)+"/01900000-0000-7000-8000-000000000000/revisions", op, valid()))

	var got source.Connection
	h.must(200, h.get(connectionsPath(h)+"/"+c.ID, op), &got)
	is.Equal(got.Config["account_id"], "T1") // the revision itself never changed
	h.must(200, h.get(connectionsPath(h)+"/"+c.ConnectionID, op), &got)
	is.Equal(got.ID, c2.ID)
	var page struct {
		Items []source.Connection `json:"items"`
	}
	h.must(200, h.get(connectionsPath(h)+"?limit=100", op), &page)
	for _, x := range page.Items {
		if x.ConnectionID == c.ConnectionID {
			is.Equal(x.Revision, int64(2))
		}
	}
	h.problem(404, "PF-NOT-FOUND", h.get(connectionsPath(h)+"/01900000-0000-7000-8000-000000000000", op))

	// Capabilities: a viewer neither creates, lists nor reads; a deployer
	// (connection.bind) reads one revision but cannot list or create.
	_, viewer := h.user("viewer-1", "viewer", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.post(connectionsPath(h), viewer, valid()))
	h.problem(403, "PF-FORBIDDEN", h.get(connectionsPath(h), viewer))
	h.problem(403, "PF-FORBIDDEN", h.get(connectionsPath(h)+"/"+c.ID, viewer))
	_, deployer := h.user("deployer-1", "deployer", h.localScope())
	h.must(200, h.get(connectionsPath(h)+"/"+c.ID, deployer), nil)
	h.problem(403, "PF-FORBIDDEN", h.get(connectionsPath(h), deployer))
}

func TestProviderSources(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "config": map[string]string{"account_id": "T1"},
		"secrets": map[string]string{"signing_secret": slackSecret}})
	gh := h.mustConnection(op, map[string]any{"name": "gh", "provider": "github", "secrets": map[string]string{"webhook_secret": "w"}})
	run := map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}
	body := h.sourceBody(op, conn, run)

	bad := []struct {
		mod  map[string]any
		path string
	}{
		{map[string]any{"name": ""}, "/name"},
		{map[string]any{"name": strings.Repeat("n", 201)}, "/name"},
		{map[string]any{"provider": "irc"}, "/provider"},
		{map[string]any{"package": "slack-rtm"}, "/package"},
		{map[string]any{"package_version": "9.9.9"}, "/package"},
		{map[string]any{"adapter_version": "2"}, "/adapter_version"},
		{map[string]any{"schema_digest": strings.Repeat("0", 64)}, "/schema_digest"},
		{map[string]any{"connection_revision_id": "nope"}, "/connection_revision_id"},
		{map[string]any{"connection_revision_id": "01900000-0000-7000-8000-000000000000"}, "/connection_revision_id"},
		{map[string]any{"connection_revision_id": gh.ID}, "/connection_revision_id"},
		{map[string]any{"policy": map[string]string{}}, "/policy/account_id"},
		{map[string]any{"policy": map[string]string{"account_id": ""}}, "/policy/account_id"},
		{map[string]any{"policy": map[string]string{"account_id": "T9"}}, "/policy/account_id"},
		{map[string]any{"policy": map[string]string{"account_id": "T1", "api_app_id": "A1"}}, "/policy/api_app_id"},
		{map[string]any{"kind": "poll"}, "/kind"},
		{map[string]any{"activation_id": nil}, "/activation_id"},
		{map[string]any{"run_id": act}, "/run_id"},
		{map[string]any{"mapping": strings.Repeat(" ", 4097)}, "/mapping"},
		{map[string]any{"mapping": `{"name": input.event.text`}, "/mapping"},
		// Static containment, located at /mapping: an optional property
		// where the input requires one, a missing required property, a
		// wrong type, an undeclared event property.
		{map[string]any{"mapping": `{"name": input.event.thread_ts}`}, "/mapping"},
		{map[string]any{"mapping": `{"nom": input.event.text}`}, "/mapping"},
		{map[string]any{"mapping": `{"name": input.event.event_time}`}, "/mapping"},
		{map[string]any{"mapping": `{"name": input.event.missing}`}, "/mapping"},
		{map[string]any{"mapping": nil}, "/mapping"}, // the event itself has no name
	}
	for _, b := range bad {
		x := h.sourceBody(op, conn, run)
		for k, v := range b.mod {
			if v == nil {
				delete(x, k)
			} else {
				x[k] = v
			}
		}
		p := h.problem(422, "PF-VALIDATION", h.post(sourcesPath(h), op, x))
		if p.Diagnostics[0].Path != b.path {
			t.Errorf("%v: diagnostic at %s, want %s: %s", b.mod, p.Diagnostics[0].Path, b.path, p.Diagnostics[0].Message)
		}
	}
	// The bounds' valid sides: 200 characters of name, 4096 of mapping.
	edge := h.sourceBody(op, conn, run)
	edge["name"] = strings.Repeat("n", 200)
	edge["mapping"] = `{"name": input.event.text}` + strings.Repeat(" ", 4096-len(`{"name": input.event.text}`))
	h.must(201, h.post(sourcesPath(h), op, edge), nil)

	res := h.post(sourcesPath(h), op, body)
	var s source.Source
	h.must(201, res, &s)
	is.True(strings.HasSuffix(res.header.Get("Location"), "/provider-sources/"+s.ID))
	is.Equal(s.AdapterVersion, "1") // the one declaration matching
	is.Equal(s.Kind, "run")
	is.Equal(*s.ActivationID, act)
	is.Equal(s.Policy, map[string]string{"account_id": "T1"})
	is.Equal(s.Scope.EnvironmentID, h.ws.EnvironmentID)
	is.Equal(s.PrincipalID, h.principalOf(op))
	is.True(s.BindingID != "")
	is.Equal(s.Disabled, false)
	is.Equal(s.IngressURL, "/provider-ingress/"+s.ID)

	// Capabilities: trigger.manage (route), connection.manage and
	// connection.bind, and the target's run.start.
	_, deployer := h.user("deployer-1", "deployer", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.post(sourcesPath(h), deployer, body))
	_, operator := h.user("operator-1", "operator", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.post(sourcesPath(h), operator, body))
	_, viewer := h.user("viewer-1", "viewer", h.localScope())
	h.must(200, h.get(sourcesPath(h)+"/"+s.ID, viewer), nil)
	h.problem(403, "PF-FORBIDDEN", h.post(sourcesPath(h)+"/"+s.ID+"/disable", viewer, nil))

	var page struct {
		Items []source.Source `json:"items"`
	}
	h.must(200, h.get(sourcesPath(h)+"?limit=1", op), &page)
	is.Equal(len(page.Items), 1)
	h.problem(404, "PF-NOT-FOUND", h.get(sourcesPath(h)+"/01900000-0000-7000-8000-000000000000", op))

	// Disable is irreversible: again answers 409, the ingress 404.
	var d source.Source
	h.must(200, h.post(sourcesPath(h)+"/"+s.ID+"/disable", op, nil), &d)
	is.Equal(d.Disabled, true)
	is.True(d.DisabledAt != nil)
	h.problem(409, "PF-CONFLICT", h.post(sourcesPath(h)+"/"+s.ID+"/disable", op, nil))
	msg := slackMessage("Ev1", "T1", "hi")
	h.problem(404, "PF-NOT-FOUND", h.ingest(s, []byte(msg), slackSigned(slackSecret, msg, time.Now())))
}

// A Slack message, signed as Slack signs it, starts a run with the mapped
// input; a replay, a bad or stale signature, another workspace, a
// conflicting payload, an oversized body and a repeated header change
// nothing.
func TestSlackMessageStartsRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "config": map[string]string{"account_id": "T1"},
		"secrets": map[string]string{"signing_secret": slackSecret}})
	src := h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))

	// url_verification, signed, is answered with its challenge.
	ch := `{"token":"legacy","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	res := h.ingest(src, []byte(ch), slackSigned(slackSecret, ch, time.Now()))
	is.Equal(res.status, 200)
	is.Equal(strings.TrimSpace(string(res.body)), `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`)
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(ch), map[string]string{"Content-Type": "application/json"}))

	msg := slackMessage("Ev0001", "T1", "Ada")
	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), &ack)
	is.Equal(len(ack.Events), 1)
	is.Equal(ack.Events[0].EventKind, "message")
	is.Equal(ack.Events[0].EventID, "Ev0001")
	r := h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusDispatched)
	is.Equal(r.Attempts, 1)
	is.Equal(r.AccountID, "T1")
	run := h.waitRun(op, *r.RunID, "succeeded")
	var in map[string]any
	is.NoErr(json.Unmarshal(run.State.Input, &in))
	is.Equal(in["name"], "Ada")
	is.Equal(run.Activation.ID, act)

	count := func() int {
		var n int
		is.NoErr(h.d.DB.Reader().QueryRow(`SELECT count(*) FROM platform_provider_receipts`).Scan(&n))
		return n
	}
	// A replay (Slack retries with the same event) is acknowledged as a duplicate.
	var again source.IngressAck
	h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), &again)
	is.Equal(again.Events[0].Duplicate, true)
	is.Equal(again.Events[0].ReceiptID, r.ID)
	is.Equal(count(), 1)
	// The same identity with another payload: 409, the batch refused.
	changed := slackMessage("Ev0001", "T1", "Eve")
	h.problem(409, "PF-PROVIDER-CONFLICT", h.ingest(src, []byte(changed), slackSigned(slackSecret, changed, time.Now())))
	// Bad signature, stale timestamp, no signature: 401.
	other := slackMessage("Ev0002", "T1", "x")
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(other), slackSigned("wrong-secret", other, time.Now())))
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(other), slackSigned(slackSecret, other, time.Now().Add(-6*time.Minute))))
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(other), map[string]string{"Content-Type": "application/json"}))
	// Another workspace than the pinned account_id: 422.
	foreign := slackMessage("Ev0003", "T9", "x")
	p := h.problem(422, "PF-PROVIDER-PAYLOAD", h.ingest(src, []byte(foreign), slackSigned(slackSecret, foreign, time.Now())))
	is.Equal(p.Diagnostics[0].Code, "account_mismatch")
	// A message without its user does not fit the schema: 422.
	nouser := strings.Replace(slackMessage("Ev0004", "T1", "x"), `"user":"U1",`, "", 1)
	h.problem(422, "PF-PROVIDER-PAYLOAD", h.ingest(src, []byte(nouser), slackSigned(slackSecret, nouser, time.Now())))
	// A payload carrying the connection's secret is not stored.
	leak := slackMessage("Ev0005", "T1", "my secret is "+slackSecret)
	p = h.problem(422, "PF-PROVIDER-PAYLOAD", h.ingest(src, []byte(leak), slackSigned(slackSecret, leak, time.Now())))
	is.Equal(p.Diagnostics[0].Code, "secret_value")
	// 1 MiB of body is read; one byte more is 413.
	pad := func(n int) string {
		base := slackMessage("Ev0006", "T1", "")
		return strings.Replace(base, `"text":""`, `"text":"`+strings.Repeat("a", n-len(base))+`"`, 1)
	}
	big := pad(provider.MaxBody + 1)
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.ingest(src, []byte(big), slackSigned(slackSecret, big, time.Now())))
	fits := pad(provider.MaxBody)
	h.must(200, h.ingest(src, []byte(fits), slackSigned(slackSecret, fits, time.Now())), nil)
	// A repeated header is refused.
	hdr := slackSigned(slackSecret, other, time.Now())
	res = h.do(req{method: "POST", path: src.IngressURL, body: []byte(other), hdr: hdr,
		hdrs: map[string][]string{"X-Slack-Signature": {hdr["X-Slack-Signature"], hdr["X-Slack-Signature"]}}})
	p = h.problem(422, "PF-PROVIDER-PAYLOAD", res)
	is.Equal(p.Diagnostics[0].Code, "duplicate_header")
	is.Equal(count(), 2) // Ev0001 and the 1 MiB one
	is.Equal(len(h.receipts(op, "&status=dispatched")), 1)

	// An unsupported event is stored and ignored with its reason.
	react := `{"team_id":"T1","type":"event_callback","event_id":"Ev0007","event_time":1700000000,"event":{"type":"reaction_added","user":"U1"}}`
	h.must(200, h.ingest(src, []byte(react), slackSigned(slackSecret, react, time.Now())), &ack)
	r = h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusIgnored)
	is.Equal(*r.Reason, source.ReasonUnsupported)

	// Receipt reads: filters, never the payload.
	list := h.get(receiptsPath(h)+"?source_id="+src.ID, op)
	h.must(200, list, nil)
	is.True(!strings.Contains(string(list.body), "Ada"))
	is.Equal(len(h.receipts(op, "&status=ignored")), 1)
	h.problem(422, "PF-VALIDATION", h.get(receiptsPath(h)+"?status=lost", op))
	h.problem(422, "PF-VALIDATION", h.get(receiptsPath(h)+"?source_id=x", op))
	h.problem(404, "PF-NOT-FOUND", h.get(receiptsPath(h)+"/01900000-0000-7000-8000-000000000000", op))
	h.problem(409, "PF-CONFLICT", h.post(receiptsPath(h)+"/"+ack.Events[0].ReceiptID+"/retry", op, nil))
}

func waMessages(n int, kind string) string {
	items := make([]string, n)
	for i := range items {
		if kind == "statuses" {
			items[i] = fmt.Sprintf(`{"id":"wamid.S%d","status":"delivered","timestamp":"1700000000","recipient_id":"4915"}`, i)
		} else {
			items[i] = fmt.Sprintf(`{"from":"4915","id":"wamid.M%d","timestamp":"1700000000","type":"text","text":{"body":"yes"}}`, i)
		}
	}
	return `{"object":"whatsapp_business_account","entry":[{"id":"W1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550001","phone_number_id":"P1"},"contacts":[{"profile":{"name":"Ann"},"wa_id":"4915"}],"` + kind + `":[` + strings.Join(items, ",") + `]}}]}]}`
}

func metaSigned(secret, body string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": "sha256=" + hexHMAC(secret, body)}
}

// A WhatsApp message signals a waiting run; the GET challenge; the batch
// bound (100 events accepted, 101 refused whole).
func TestWhatsAppMessageSignalsRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	wf := h.mustPublish(op, "workflows", chatWorkflow, "chat-workflow").ID
	act := h.mustActivate(ePath(h), op, map[string]any{"published_version_id": wf}, "chat-activation", "").ID
	waiting := h.startWaiting(op, act, "chat-1")
	conn := h.mustConnection(op, map[string]any{"name": "wa", "provider": "whatsapp", "config": map[string]string{"account_id": "P1"},
		"secrets": map[string]string{"app_secret": "meta-app-secret", "verify_token": "verify-me-please"}})
	sig := map[string]any{"kind": "signal", "run_id": waiting.ID, "signal": "chat.reply"}
	// Containment: text is optional in a message, from is required by the signal.
	bad := h.sourceBody(op, conn, map[string]any{"kind": "signal", "run_id": waiting.ID, "signal": "chat.reply", "mapping": `{"from": input.event.text}`})
	p := h.problem(422, "PF-VALIDATION", h.post(sourcesPath(h), op, bad))
	is.Equal(p.Diagnostics[0].Path, "/mapping")
	unknown := h.sourceBody(op, conn, map[string]any{"kind": "signal", "run_id": waiting.ID, "signal": "chat.other"})
	h.problem(422, "PF-VALIDATION", h.post(sourcesPath(h), op, unknown))
	src := h.mustSource(op, h.sourceBody(op, conn, sig))

	// GET challenge.
	res := h.get(src.IngressURL+"?hub.mode=subscribe&hub.verify_token=verify-me-please&hub.challenge=1158201444", "")
	is.Equal(res.status, 200)
	is.Equal(string(res.body), "1158201444")
	is.True(strings.HasPrefix(res.header.Get("Content-Type"), "text/plain"))
	h.problem(401, "PF-UNAUTHENTICATED", h.get(src.IngressURL+"?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1", ""))

	// 101 events: 413 and nothing stored; a bad signature: 401.
	over := waMessages(101, "statuses")
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.ingest(src, []byte(over), metaSigned("meta-app-secret", over)))
	one := waMessages(1, "messages")
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(one), metaSigned("other-secret", one)))
	is.Equal(len(h.receipts(op, "")), 0)

	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(one), metaSigned("meta-app-secret", one)), &ack)
	r := h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusDispatched)
	is.Equal(*r.RunID, waiting.ID)
	is.True(r.SignalID != nil)
	h.waitRun(op, waiting.ID, "succeeded")

	// Exactly 100 status updates: accepted, each ignored as a lifecycle event.
	full := waMessages(100, "statuses")
	h.must(200, h.ingest(src, []byte(full), metaSigned("meta-app-secret", full)), &ack)
	is.Equal(len(ack.Events), 100)
	last := h.waitReceipt(op, ack.Events[99].ReceiptID)
	is.Equal(last.Status, source.StatusIgnored)
	is.Equal(*last.Reason, source.ReasonLifecycle)

	// The run has ended: a later message fails (target finished); retry
	// re-evaluates it with the same identity.
	later := strings.Replace(one, "wamid.M0", "wamid.M9", 1)
	h.must(200, h.ingest(src, []byte(later), metaSigned("meta-app-secret", later)), &ack)
	r = h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusFailed)
	is.Equal(*r.Reason, source.ReasonTargetFinished)
	_, viewer := h.user("viewer-1", "viewer", h.localScope())
	h.problem(403, "PF-FORBIDDEN", h.post(receiptsPath(h)+"/"+r.ID+"/retry", viewer, nil))
	var retried source.Receipt
	h.must(200, h.post(receiptsPath(h)+"/"+r.ID+"/retry", op, nil), &retried)
	is.Equal(retried.EventID, "wamid.M9")
	r = h.waitReceipt(op, r.ID)
	is.Equal(r.Status, source.StatusFailed)
	is.Equal(r.Attempts, 2)
	// A disabled source's receipts are not retried.
	h.must(200, h.post(sourcesPath(h)+"/"+src.ID+"/disable", op, nil), nil)
	h.problem(409, "PF-CONFLICT", h.post(receiptsPath(h)+"/"+r.ID+"/retry", op, nil))
}

// A Telegram update with the setWebhook secret token starts a run.
func TestTelegramMessageStartsRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "bot", "provider": "telegram", "config": map[string]string{"bot_username": "acme_bot"},
		"secrets": map[string]string{"secret_token": "tg-secret-token-1"}})
	src := h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))
	h.problem(404, "PF-NOT-FOUND", h.get(src.IngressURL, ""))
	upd := `{"update_id":100,"message":{"message_id":5,"date":1700000000,"chat":{"id":-42,"type":"group"},"from":{"id":7,"username":"ann"},"text":"Grace"}}`
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(upd), map[string]string{"X-Telegram-Bot-Api-Secret-Token": "tg-secret-token-2"}))
	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(upd), map[string]string{"X-Telegram-Bot-Api-Secret-Token": "tg-secret-token-1"}), &ack)
	r := h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusDispatched)
	run := h.waitRun(op, *r.RunID, "succeeded")
	var in map[string]any
	is.NoErr(json.Unmarshal(run.State.Input, &in))
	is.Equal(in["name"], "Grace")
}

// A GitHub push, signed with the webhook secret, starts a run; ping is
// acknowledged and ignored.
func TestGitHubPushStartsRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "gh", "provider": "github", "config": map[string]string{"account_id": "acme"},
		"secrets": map[string]string{"webhook_secret": "It's a Secret to Everybody"}})
	src := h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.repository}`}))
	signed := func(event, delivery, body string) map[string]string {
		m := metaSigned("It's a Secret to Everybody", body)
		m["X-GitHub-Event"], m["X-GitHub-Delivery"] = event, delivery
		return m
	}
	ping := `{"zen":"Keep it logically awesome.","hook_id":1,"repository":{"full_name":"acme/app","owner":{"login":"acme"}}}`
	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(ping), signed("ping", "d-1", ping)), &ack)
	r := h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusIgnored)
	is.Equal(*r.Reason, source.ReasonLifecycle)
	push := `{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"acme/app","owner":{"login":"acme"}},"sender":{"login":"ann"}}`
	h.problem(401, "PF-UNAUTHENTICATED", h.ingest(src, []byte(push), signed("push", "d-2", push+" ")))
	h.must(200, h.ingest(src, []byte(push), signed("push", "d-2", push)), &ack)
	r = h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusDispatched)
	run := h.waitRun(op, *r.RunID, "succeeded")
	var in map[string]any
	is.NoErr(json.Unmarshal(run.State.Input, &in))
	is.Equal(in["name"], "acme/app")
	var runs struct {
		Items []engine.Run `json:"items"`
	}
	h.must(200, h.get(ePath(h)+"/runs?limit=100", op), &runs)
	is.Equal(len(runs.Items), 1)
}

// A failure of the admission commit answers 500 and acknowledges nothing:
// no receipt is stored, and the provider's retry is admitted once the
// store works again.
func TestIngressFailureBeforeCommit(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "config": map[string]string{"account_id": "T1"},
		"secrets": map[string]string{"signing_secret": slackSecret}})
	src := h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))
	exec := func(q string) error {
		return h.d.DB.Write(context.Background(), func(tx *sql.Tx) error { _, err := tx.Exec(q); return err })
	}
	is.NoErr(exec(`CREATE TRIGGER fail_admission BEFORE INSERT ON platform_provider_receipts BEGIN SELECT RAISE(ABORT, 'disk gone'); END`))
	msg := slackMessage("Ev1", "T1", "Ada")
	h.problem(500, "PF-INTERNAL", h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())))
	is.Equal(len(h.receipts(op, "")), 0)
	is.NoErr(exec(`DROP TRIGGER fail_admission`))
	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), &ack)
	is.Equal(ack.Events[0].Duplicate, false)
	is.Equal(h.waitReceipt(op, ack.Events[0].ReceiptID).Status, source.StatusDispatched)
}

// The lists' limit is 1..100 on both sides, and a cursor pages on.
func TestProviderListsPage(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "secrets": map[string]string{"signing_secret": slackSecret}})
	h.mustConnection(op, map[string]any{"name": "ws2", "provider": "slack", "secrets": map[string]string{"signing_secret": slackSecret}})
	src := h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))
	h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.user}`}))
	for i := range 2 {
		msg := slackMessage(fmt.Sprintf("Ev%d", i), "T1", "x")
		h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), nil)
	}
	for _, path := range []string{connectionsPath(h), sourcesPath(h), receiptsPath(h)} {
		h.problem(422, "PF-VALIDATION", h.get(path+"?limit=0", op))
		h.problem(422, "PF-VALIDATION", h.get(path+"?limit=101", op))
		h.must(200, h.get(path+"?limit=100", op), nil)
		var first struct {
			Items      []map[string]any `json:"items"`
			NextCursor *string          `json:"next_cursor"`
		}
		h.must(200, h.get(path+"?limit=1", op), &first)
		is.Equal(len(first.Items), 1)
		is.True(first.NextCursor != nil)
		var second struct {
			Items      []map[string]any `json:"items"`
			NextCursor *string          `json:"next_cursor"`
		}
		h.must(200, h.get(path+"?limit=1&cursor="+*first.NextCursor, op), &second)
		is.Equal(len(second.Items), 1)
		is.True(second.Items[0]["id"] != first.Items[0]["id"])
		h.problem(422, "PF-VALIDATION", h.get(path+"?cursor=garbage", op))
	}
	// A receipt cursor is bound to its filters.
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	h.must(200, h.get(receiptsPath(h)+"?limit=1&source_id="+src.ID, op), &page)
	h.problem(422, "PF-VALIDATION", h.get(receiptsPath(h)+"?limit=1&cursor="+*page.NextCursor, op))
}

// seedProviderSources makes one of each provider resource for the route
// sweeps (TestHeadForEveryGet): a connection, a Slack source starting act
// (whose input needs customerId) with a receipt, and a WhatsApp source
// whose GET challenge answers. It answers the path replacements.
func seedProviderSources(h *harness, op, act string) (ids map[string]string, conn string) {
	h.t.Helper()
	c := h.mustConnection(op, map[string]any{"name": "seed", "provider": "slack", "secrets": map[string]string{"signing_secret": slackSecret}})
	src := h.mustSource(op, h.sourceBody(op, c, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"customerId": input.event.text}`}))
	msg := slackMessage("EvSeed", "T1", "c-1")
	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), &ack)
	wc := h.mustConnection(op, map[string]any{"name": "seed-wa", "provider": "whatsapp",
		"secrets": map[string]string{"app_secret": "meta-app-secret", "verify_token": "verify-me-please"}})
	wa := h.mustSource(op, h.sourceBody(op, wc, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"customerId": input.event.from}`}))
	return map[string]string{"provider-sources": src.ID, "provider-receipts": ack.Events[0].ReceiptID,
		"provider-ingress": wa.ID + "?hub.mode=subscribe&hub.verify_token=verify-me-please&hub.challenge=1"}, c.ID
}

// An owner who lost its grant: the receipt is blocked (authority_lost);
// a retry is refused while the owner still lacks it, and dispatches once
// the grant is back, with the same event identity.
func TestReceiptBlockedWhenOwnerLosesAuthority(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t)
	op := h.localToken()
	act := setupFlow(h)
	owner := h.link("human", "owner-1")
	grant := h.grant(owner, h.localScope(), "tenant_admin")
	tok := h.ext.token(h.t, "owner-1", nil)
	conn := h.mustConnection(tok, map[string]any{"name": "ws", "provider": "slack", "secrets": map[string]string{"signing_secret": slackSecret}})
	src := h.mustSource(tok, h.sourceBody(tok, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))
	h.must(200, h.do(req{method: "DELETE", path: "/admin/grants/" + grant, token: op}), nil)

	msg := slackMessage("Ev1", "T1", "Ada")
	var ack source.IngressAck
	h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), &ack)
	r := h.waitReceipt(op, ack.Events[0].ReceiptID)
	is.Equal(r.Status, source.StatusBlocked)
	is.Equal(*r.Reason, source.ReasonAuthorityLost)
	h.problem(403, "PF-FORBIDDEN", h.post(receiptsPath(h)+"/"+r.ID+"/retry", op, nil))

	h.grant(owner, h.localScope(), "tenant_admin")
	var retried source.Receipt
	h.must(200, h.post(receiptsPath(h)+"/"+r.ID+"/retry", op, nil), &retried)
	is.Equal(retried.Status, source.StatusPending)
	r = h.waitReceipt(op, r.ID)
	is.Equal(r.Status, source.StatusDispatched)
	is.Equal(r.EventID, "Ev1")
	is.Equal(r.Attempts, 2)
	h.waitRun(op, *r.RunID, "succeeded")
}
