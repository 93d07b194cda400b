package platform_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/compat"
	"github.com/agentbridge/bridge/platform/source"
)

// A start refused by a real transient condition (the compatibility gate,
// 503 PF-COMPATIBILITY) leaves the receipt pending with reason
// transient_failure, due 30 seconds later: it is not dispatched before
// then, and is once the condition has cleared and the cooldown passed. A
// receipt cooling down on a source disabled meanwhile ends blocked
// (binding_revoked). Time is the daemon's injected clock.
func TestReceiptTransientCooldown(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	clk := &fakeClock{t: clockStart()}
	h := newHarness(t, withClock(clk))
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "secrets": map[string]string{"signing_secret": slackSecret}})
	body := h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`})
	src := h.mustSource(op, body)
	body["name"] = "src-2"
	doomed := h.mustSource(op, body)
	admit := func(s source.Source, id, text string) string {
		h.t.Helper()
		msg := slackMessage(id, "T1", text)
		var ack source.IngressAck
		h.must(200, h.ingest(s, []byte(msg), slackSigned(slackSecret, msg, clk.Now())), &ack)
		return ack.Events[0].ReceiptID
	}
	get := func(id string) source.Receipt {
		h.t.Helper()
		var r source.Receipt
		h.must(200, h.get(receiptsPath(h)+"/"+id, op), &r)
		return r
	}

	// Restrict the project: new runs answer 503 PF-COMPATIBILITY.
	path := pPath(h) + "/operations/compatibility"
	bad := h.injectVersion("action", "acme/future", `{"format":"agentbridge.action/v9"}`)
	var rep compat.Report
	h.must(200, h.post(path+"/check", op, nil), &rep)
	is.Equal(rep.Verdict, compat.Restricted)

	refusedAt := clk.Now()
	ev := admit(src, "EvT1", "Ada")
	gone := admit(doomed, "EvT2", "Eve")
	var r source.Receipt
	for _, id := range []string{ev, gone} {
		h.waitFor("the transient refusal of "+id, func() bool { r = get(id); return r.Reason != nil })
		is.Equal(r.Status, source.StatusPending)
		is.Equal(*r.Reason, source.ReasonTransient)
		is.Equal(r.Attempts, 1)
		is.Equal(r.RunID, nil)
		is.True(r.NextAttemptAt != nil)
		is.Equal(r.NextAttemptAt.Sub(refusedAt), source.Cooldown) // the 30 second cooldown
	}
	var page struct{ Items []any }
	h.must(200, h.get(ePath(h)+"/runs", op), &page)
	is.Equal(len(page.Items), 0)
	h.must(200, h.post(sourcesPath(h)+"/"+doomed.ID+"/disable", op, nil), nil)

	// The condition clears; 1 ms short of the cooldown the receipt is not
	// retried: a fresh event dispatched at that time proves the
	// dispatcher turned, and the cooling one kept its attempt count.
	h.dbExec(`DROP TRIGGER platform_definition_versions_no_delete`)
	h.dbExec(`DELETE FROM platform_definition_versions WHERE id = ?`, bad)
	h.must(200, h.post(path+"/check", op, nil), &rep)
	is.Equal(rep.Verdict, compat.Compatible)
	clk.Set(refusedAt.Add(source.Cooldown - time.Millisecond))
	fresh := h.waitReceipt(op, admit(src, "EvT3", "Bob"))
	is.Equal(fresh.Status, source.StatusDispatched)
	for _, id := range []string{ev, gone} {
		r = get(id)
		is.Equal(r.Status, source.StatusPending)
		is.Equal(r.Attempts, 1)
	}
	is.Equal(len(h.receipts(op, "&status=pending")), 2)

	// At the cooldown: dispatched, same identity, second attempt; the
	// disabled source's receipt is blocked.
	clk.Set(refusedAt.Add(source.Cooldown))
	r = h.waitReceipt(op, ev)
	is.Equal(r.Status, source.StatusDispatched)
	is.Equal(r.EventID, "EvT1")
	is.Equal(r.Attempts, 2)
	is.Equal(r.Reason, nil)
	run := h.waitRun(op, *r.RunID, "succeeded")
	is.Equal(run.Activation.ID, act)
	r = h.waitReceipt(op, gone)
	is.Equal(r.Status, source.StatusBlocked)
	is.Equal(*r.Reason, source.ReasonBindingRevoked)
	is.Equal(r.Attempts, 2)
	h.problem(409, "PF-CONFLICT", h.post(receiptsPath(h)+"/"+gone+"/retry", op, nil))
}
