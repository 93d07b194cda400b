package platform_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/agentbridge/bridge/platform/identity"
	"github.com/agentbridge/bridge/platform/trigger"
)

func triggersPath(h *harness) string { return ePath(h) + "/triggers" }

func (h *harness) createTrigger(tok string, body any) resp {
	h.t.Helper()
	return h.do(req{method: "POST", path: triggersPath(h), token: tok, body: body})
}

func (h *harness) mustCreateTrigger(tok string, body any) trigger.CreatedTrigger {
	h.t.Helper()
	var t trigger.CreatedTrigger
	h.must(201, h.createTrigger(tok, body), &t)
	return t
}

// delivery is a webhook request: body and the Standard Webhooks headers.
type delivery struct {
	id, timestamp, signature string
	body                     []byte
	more                     map[string]string
}

// signed signs body for secret with the Standard Webhooks Go library, as
// any sender would.
func signed(t testing.TB, secret, id string, at time.Time, body []byte) delivery {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	return delivery{id: id, timestamp: strconv.FormatInt(at.Unix(), 10), signature: sig, body: body}
}

func (h *harness) deliver(url string, d delivery) resp {
	h.t.Helper()
	hdr := map[string]string{"Content-Type": "application/json"}
	for k, v := range map[string]string{"webhook-id": d.id, "webhook-timestamp": d.timestamp, "webhook-signature": d.signature} {
		if v != "" {
			hdr[k] = v
		}
	}
	for k, v := range d.more {
		hdr[k] = v
	}
	return h.do(req{method: "POST", path: url, body: d.body, hdr: hdr})
}

// refused asserts a delivery refused for its signature: 401
// PF-UNAUTHENTICATED with the Standard Webhooks challenge (never Bearer),
// and answers the diagnostic code.
func (h *harness) refused(r resp) string {
	h.t.Helper()
	if r.status != 401 || r.header.Get("WWW-Authenticate") != `Standard-Webhooks realm="webhooks"` {
		h.t.Fatalf("status %d, WWW-Authenticate %q: %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
	checkPlatformHeaders(h.t, r)
	var p problem
	r.json(h.t, &p)
	if p.Code != "PF-UNAUTHENTICATED" || len(p.Diagnostics) != 1 || p.RequestID == "" {
		h.t.Fatalf("problem %s", r.body)
	}
	return p.Diagnostics[0].Code
}

func TestWebhookTrigger(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	op := h.localToken()
	now := clk.Now()

	res := h.createTrigger(op, map[string]any{"name": "orders", "activation_id": act})
	var tr trigger.CreatedTrigger
	h.must(201, res, &tr)
	is.Equal(res.header.Get("ETag"), `"1"`)
	is.True(strings.HasSuffix(res.header.Get("Location"), "/triggers/"+tr.ID))
	is.True(strings.HasPrefix(tr.Secret, "whsec_"))
	is.Equal(tr.URL, "/webhooks/"+tr.ID)
	is.Equal(tr.Status, trigger.TriggerEnabled)
	is.Equal(tr.Tolerance, 300)
	is.Equal(tr.PrincipalID, h.principalOf(op))
	// The secret is shown once: never in reads or lists, never stored in
	// clear.
	got := h.get(triggersPath(h)+"/"+tr.ID, op)
	h.must(200, got, nil)
	is.True(!strings.Contains(string(got.body), "whsec_"))
	list := h.get(triggersPath(h), op)
	h.must(200, list, nil)
	is.True(!strings.Contains(string(list.body), tr.Secret[6:]))
	var stored string
	is.NoErr(h.d.DB.Reader().QueryRow(`SELECT secret FROM platform_triggers WHERE id = ?`, tr.ID).Scan(&stored))
	is.True(!strings.Contains(stored, tr.Secret[6:]))

	// A delivery signed by the Standard Webhooks library starts a run with
	// the body as input, once the start has committed.
	body := []byte(`{"name":"hook"}`)
	d := signed(t, tr.Secret, "msg_1", now, body)
	var dl trigger.Delivery
	h.must(200, h.deliver(tr.URL, d), &dl)
	is.Equal(dl.Replayed, false)
	is.Equal(dl.WebhookID, "msg_1")
	run := h.waitRun(op, dl.RunID, "succeeded")
	is.Equal(string(run.State.Input), `{"name":"hook"}`)
	is.Equal(run.CreatedBy, tr.PrincipalID)
	// The same webhook-id again: the same run, no second one.
	var again trigger.Delivery
	h.must(200, h.deliver(tr.URL, d), &again)
	is.Equal(again.RunID, dl.RunID)
	is.True(again.Replayed)
	is.Equal(countRuns(h, op), 1)
	// The same new webhook-id from eight senders at once: one run.
	race := signed(t, tr.Secret, "msg_race", now, body)
	var wg sync.WaitGroup
	got8 := make([]trigger.Delivery, 8)
	for i := range got8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.doRaw(req{method: "POST", path: tr.URL, body: race.body, hdr: map[string]string{
				"webhook-id": race.id, "webhook-timestamp": race.timestamp, "webhook-signature": race.signature}})
			if err != nil || r.status != 200 {
				t.Errorf("delivery: %v %d %s", err, r.status, r.body)
				return
			}
			_ = json.Unmarshal(r.body, &got8[i])
		}()
	}
	wg.Wait()
	fresh := 0
	for _, g := range got8 {
		is.Equal(g.RunID, got8[0].RunID)
		if !g.Replayed {
			fresh++
		}
	}
	is.Equal(fresh, 1)
	is.Equal(countRuns(h, op), 2)

	// One byte changed: refused, nothing started.
	tampered := d
	tampered.body = []byte(`{"name":"hooK"}`)
	tampered.id = "msg_2"
	is.Equal(h.refused(h.deliver(tr.URL, tampered)), "bad_signature")
	tampered = signed(t, tr.Secret, "msg_2", now, body)
	tampered.timestamp = strconv.FormatInt(now.Unix()+1, 10) // signed over another timestamp
	is.Equal(h.refused(h.deliver(tr.URL, tampered)), "bad_signature")
	// Unsigned, partly signed, or with a bearer token only.
	for _, c := range []struct {
		d    delivery
		code string
	}{
		{delivery{body: body}, "missing_id"},
		{delivery{id: "msg_3", timestamp: d.timestamp, body: body}, "missing_signature"},
		{delivery{id: "msg_3", signature: d.signature, body: body}, "missing_timestamp"},
		{delivery{id: "msg 3", timestamp: d.timestamp, signature: d.signature, body: body}, "bad_id"},
		{delivery{id: "msg_3", timestamp: "1.5", signature: d.signature, body: body}, "bad_timestamp"},
		{delivery{id: "msg_3", timestamp: d.timestamp, signature: "v2," + d.signature[3:], body: body}, "bad_signature"},
	} {
		is.Equal(h.refused(h.deliver(tr.URL, c.d)), c.code)
	}
	is.Equal(h.refused(h.do(req{method: "POST", path: tr.URL, token: op, body: body})), "missing_id") // a bearer token is no credential here
	// Several signatures (a sender rotating its secret): one match is enough.
	rot := signed(t, tr.Secret, "msg_4", now, body)
	other := signed(t, "whsec_"+strings.Repeat("A", 43)+"=", "msg_4", now, body)
	rot.signature = other.signature + " " + rot.signature
	h.must(200, h.deliver(tr.URL, rot), nil)
	is.Equal(countRuns(h, op), 3)

	// The tolerance window, both sides (the clock is the daemon's).
	edge := signed(t, tr.Secret, "msg_5", now.Add(-300*time.Second), body)
	h.must(200, h.deliver(tr.URL, edge), nil)
	edge = signed(t, tr.Secret, "msg_6", now.Add(300*time.Second), body)
	h.must(200, h.deliver(tr.URL, edge), nil)
	for _, off := range []time.Duration{-301 * time.Second, 301 * time.Second} {
		is.Equal(h.refused(h.deliver(tr.URL, signed(t, tr.Secret, "msg_7", now.Add(off), body))), "timestamp_out_of_tolerance")
	}

	// Body bounds: 1 MiB is read, one byte more is 413; the body must be a
	// JSON object the workflow accepts.
	pad := trigger.MaxWebhookBody - len(`{"name":"big","pad":""}`)
	big := []byte(`{"name":"big","pad":"` + strings.Repeat("x", pad) + `"}`)
	h.must(200, h.deliver(tr.URL, signed(t, tr.Secret, "msg_8", now, big)), nil)
	over := append([]byte(`{"name":"big","pad":"x`), big[len(`{"name":"big","pad":"`):]...)
	h.problem(413, "PF-REQUEST-TOO-LARGE", h.deliver(tr.URL, signed(t, tr.Secret, "msg_9", now, over)))
	h.problem(422, "PF-VALIDATION", h.deliver(tr.URL, signed(t, tr.Secret, "msg_10", now, []byte(`not json`))))
	h.problem(422, "PF-VALIDATION", h.deliver(tr.URL, signed(t, tr.Secret, "msg_11", now, []byte(`[1]`))))
	h.problem(422, "PF-VALIDATION", h.deliver(tr.URL, signed(t, tr.Secret, "msg_12", now, []byte(`{"nom":"x"}`)))) // the workflow needs name
	is.Equal(countRuns(h, op), 6)

	// Unknown or malformed trigger ids.
	h.problem(404, "PF-NOT-FOUND", h.deliver("/webhooks/0190a0b0-0000-7000-8000-0000000000dd", signed(t, tr.Secret, "m", now, body)))
	h.problem(404, "PF-NOT-FOUND", h.deliver("/webhooks/nope", signed(t, tr.Secret, "m", now, body)))

	// Replace: a new id, route and secret; the old route is gone.
	res = h.do(req{method: "POST", path: triggersPath(h) + "/" + tr.ID + "/replace", token: op, hdr: map[string]string{"If-Match": "1"},
		body: map[string]any{"activation_id": act, "mapping": `{"name": input.body.user.login + "/" + input.headers["x-mode"]}`, "headers": []string{"X-Mode"}}})
	var next trigger.CreatedTrigger
	h.must(201, res, &next)
	is.True(next.ID != tr.ID)
	is.True(next.Secret != tr.Secret)
	is.Equal(*next.Replaces, tr.ID)
	is.Equal(next.Headers, []string{"x-mode"})
	var prev trigger.Trigger
	h.must(200, h.get(triggersPath(h)+"/"+tr.ID, op), &prev)
	is.Equal(prev.Status, trigger.TriggerDisabled)
	is.Equal(prev.Revision, int64(2))
	is.Equal(*prev.ReplacedBy, next.ID)
	h.problem(404, "PF-NOT-FOUND", h.deliver(tr.URL, signed(t, tr.Secret, "msg_13", now, body)))
	is.Equal(h.refused(h.deliver(next.URL, signed(t, tr.Secret, "msg_13", now, body))), "bad_signature") // the old secret
	mapped := signed(t, next.Secret, "msg_13", now, []byte(`{"user":{"login":"ada"}}`))
	mapped.more = map[string]string{"X-Mode": "live"}
	h.must(200, h.deliver(next.URL, mapped), &dl)
	is.Equal(string(h.waitRun(op, dl.RunID, "succeeded").State.Input), `{"name":"ada/live"}`)
	p := h.problem(422, "PF-VALIDATION", h.deliver(next.URL, signed(t, next.Secret, "msg_14", now, body))) // no user in the body
	is.True(strings.Contains(p.Diagnostics[0].Message, "mapping"))
	h.problem(409, "PF-CONFLICT", h.do(req{method: "POST", path: triggersPath(h) + "/" + tr.ID + "/replace", token: op,
		hdr: map[string]string{"If-Match": "2"}, body: map[string]any{"activation_id": act}}))
	h.problem(412, "PF-ETAG", h.do(req{method: "POST", path: triggersPath(h) + "/" + next.ID + "/disable", token: op, hdr: map[string]string{"If-Match": "2"}}))
	h.problem(422, "PF-ETAG", h.do(req{method: "POST", path: triggersPath(h) + "/" + next.ID + "/disable", token: op}))
	var off trigger.Trigger
	h.must(200, h.do(req{method: "POST", path: triggersPath(h) + "/" + next.ID + "/disable", token: op, hdr: map[string]string{"If-Match": "1"}}), &off)
	is.Equal(off.Status, trigger.TriggerDisabled)
	is.Equal(off.ReplacedBy, nil)
	h.problem(409, "PF-CONFLICT", h.do(req{method: "POST", path: triggersPath(h) + "/" + next.ID + "/disable", token: op, hdr: map[string]string{"If-Match": "2"}}))
	h.problem(404, "PF-NOT-FOUND", h.deliver(next.URL, signed(t, next.Secret, "msg_15", now, body)))
}

func TestWebhookTriggerRules(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, clk, act := scheduleHarness(t)
	op := h.localToken()
	invalid := func(body map[string]any, path string) {
		t.Helper()
		p := h.problem(422, "PF-VALIDATION", h.createTrigger(op, body))
		is.Equal(p.Diagnostics[0].Path, path)
	}
	invalid(map[string]any{}, "/activation_id")
	invalid(map[string]any{"activation_id": "0190a0b0-0000-7000-8000-0000000000ee"}, "/activation_id")
	invalid(map[string]any{"activation_id": act, "tolerance_seconds": 3601}, "/tolerance_seconds")
	invalid(map[string]any{"activation_id": act, "tolerance_seconds": -1}, "/tolerance_seconds")
	invalid(map[string]any{"activation_id": act, "mapping": "{"}, "/mapping")
	invalid(map[string]any{"activation_id": act, "mapping": strings.Repeat(" ", 4097-len("input.body")) + "input.body"}, "/mapping")
	invalid(map[string]any{"activation_id": act, "headers": []string{"webhook-id"}}, "/headers/0")
	invalid(map[string]any{"activation_id": act, "headers": []string{"X-A", "x-a"}}, "/headers/1")
	many := make([]string, 21)
	for i := range many {
		many[i] = "x-h" + strconv.Itoa(i)
	}
	invalid(map[string]any{"activation_id": act, "headers": many}, "/headers")
	invalid(map[string]any{"activation_id": act, "name": strings.Repeat("n", 201)}, "/name")
	invalid(map[string]any{"activation_id": act, "secret": "whsec_x"}, "/secret")
	tr := h.mustCreateTrigger(op, map[string]any{"activation_id": act, "tolerance_seconds": 3600, "headers": many[:20], "name": strings.Repeat("n", 200),
		"mapping": strings.Repeat(" ", 4096-len("input.body")) + "input.body"})
	is.Equal(tr.Tolerance, 3600)

	// Access: managing needs trigger.manage (and run.start to create);
	// listing needs trigger.manage.
	scope := identity.Scope{Tenant: h.ws.TenantID, Project: h.ws.ProjectID, Environment: h.ws.EnvironmentID}
	_, deployer := h.user("dep", "deployer", scope)
	_, viewer := h.user("vic", "viewer", scope)
	erin, erinTok := h.user("erin", "deployer", scope)
	opGrant := h.grant(erin, scope, "operator")
	h.problem(403, "PF-FORBIDDEN", h.createTrigger(deployer, map[string]any{"activation_id": act}))
	h.problem(403, "PF-FORBIDDEN", h.get(triggersPath(h), viewer))
	h.problem(403, "PF-FORBIDDEN", h.get(triggersPath(h)+"/"+tr.ID, viewer))
	h.must(200, h.get(triggersPath(h), deployer), nil)
	for _, bad := range []string{"limit=0", "limit=101", "cursor=x"} {
		h.problem(422, "PF-VALIDATION", h.get(triggersPath(h)+"?"+bad, deployer))
	}
	h.problem(404, "PF-NOT-FOUND", h.get(triggersPath(h)+"/0190a0b0-0000-7000-8000-0000000000ee", op))

	// The owner loses run.start: deliveries are refused, nothing starts.
	mine := h.mustCreateTrigger(erinTok, map[string]any{"activation_id": act})
	h.must(200, h.do(req{method: "DELETE", path: "/admin/grants/" + opGrant, token: op}), nil)
	body := []byte(`{"name":"x"}`)
	h.problem(403, "PF-FORBIDDEN", h.deliver(mine.URL, signed(t, mine.Secret, "m1", clk.Now(), body)))
	// A retired activation: 409.
	h.must(200, h.do(req{method: "POST", path: ePath(h) + "/activations/" + act + "/retire", token: op,
		hdr: map[string]string{"If-Match": "1", "Idempotency-Key": "retire-t"}}), nil)
	h.problem(409, "PF-CONFLICT", h.deliver(tr.URL, signed(t, tr.Secret, "m2", clk.Now(), body)))
	is.Equal(countRuns(h, op), 0)
}
