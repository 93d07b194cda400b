//go:build !windows

package platform_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/source"
)

// TestProviderEventsSurviveSigkill: a daemon process is killed with
// SIGKILL right after acknowledging batches of Slack events, while their
// receipts are being dispatched. After each restart every acknowledged
// event is dispatched exactly once: one run per event identity, no run
// lost and none started twice.
func TestProviderEventsSurviveSigkill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns daemon processes")
	}
	is := is.New(t)
	ext := newExtIdP(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	d := &chaosDaemon{t: t, dir: t.TempDir(), port: port, jwks: ext.srv.URL}
	d.start()
	defer func() { d.kill() }()
	h := d.client(ext)
	op := h.localToken()
	act := setupFlow(h)
	conn := h.mustConnection(op, map[string]any{"name": "ws", "provider": "slack", "config": map[string]string{"account_id": "T1"},
		"secrets": map[string]string{"signing_secret": slackSecret}})
	src := h.mustSource(op, h.sourceBody(op, conn, map[string]any{"kind": "run", "activation_id": act, "mapping": `{"name": input.event.text}`}))

	acked := map[string]string{} // receipt id -> event id
	for round := range 3 {
		for i := range 20 {
			msg := slackMessage(fmt.Sprintf("Ev%d-%d", round, i), "T1", fmt.Sprintf("n%d-%d", round, i))
			var ack source.IngressAck
			h.must(200, h.ingest(src, []byte(msg), slackSigned(slackSecret, msg, time.Now())), &ack)
			acked[ack.Events[0].ReceiptID] = ack.Events[0].EventID
		}
		time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
		d.kill()
		d.start()
	}

	deadline := time.Now().Add(30 * time.Second)
	var items []source.Receipt
	for {
		items = h.receipts(op, "")
		done := 0
		for _, r := range items {
			if r.Status == source.StatusDispatched {
				done++
			}
		}
		if done == len(acked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	is.Equal(len(items), len(acked))
	runs := map[string]bool{}
	for _, r := range items {
		is.Equal(r.Status, source.StatusDispatched)
		is.Equal(acked[r.ID], r.EventID)
		is.True(!runs[*r.RunID])
		runs[*r.RunID] = true
	}
	var page struct {
		Items []struct{ ID string } `json:"items"`
	}
	h.must(200, h.get(ePath(h)+"/runs?limit=100", op), &page)
	is.Equal(len(page.Items), len(acked))
	for _, r := range page.Items {
		is.True(runs[r.ID])
	}
}
