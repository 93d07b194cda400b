package ingest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestManagementRequiresOwner(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, pathEvents}, {http.MethodGet, pathStream}, {http.MethodGet, pathDLQ},
		{http.MethodGet, "/api/v1/webhook-dlq/x"}, {http.MethodPost, "/api/v1/webhook-dlq/x/replay"},
	} {
		readProblem(t, h.do(r.method, r.path, nil), http.StatusUnauthorized)
		readProblem(t, h.do(r.method, r.path, nil, "Authorization", "Bearer wrong"), http.StatusUnauthorized)
	}
}

func TestDLQListPaginationAndReplayErrors(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	for i := range 5 {
		readProblem(t, h.post(fmt.Sprintf("p%d", i%2), nil, "Content-Type", jsonCT), 400) // empty body
	}
	readProblem(t, h.post("p0", jsonBody(1<<20+1), "Content-Type", jsonCT), 413)
	var all Page[DLQEntry]
	waitFor(t, "6 dead letters", func() bool {
		all = Page[DLQEntry]{}
		h.owner(http.MethodGet, pathDLQ+"?limit=500", &all)
		return len(all.Items) == 6
	})
	is.Equal(all.NextCursor, "")
	// Pages of 2 cover everything once, newest first.
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		var p Page[DLQEntry]
		is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit=2&cursor="+url.QueryEscape(cursor), &p), 200)
		for _, e := range p.Items {
			seen = append(seen, e.EventID)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
		is.True(page < 5)
	}
	is.Equal(len(seen), 6)
	for i, e := range all.Items {
		is.Equal(seen[i], e.EventID)
	}
	// A cursor is bound to its filters and signed.
	var p Page[DLQEntry]
	h.owner(http.MethodGet, pathDLQ+"?limit=2", &p)
	var prob problem
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit=2&provider=p0&cursor="+url.QueryEscape(p.NextCursor), &prob), 400)
	is.Equal(prob.Code, "WH-INVALID-CURSOR")
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?cursor="+url.QueryEscape(p.NextCursor[:len(p.NextCursor)-2]+"AA"), nil), 400)
	for _, l := range []string{"0", "501", "x"} {
		is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit="+l, nil), 400)
	}
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit=500", nil), 200)
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit=1", nil), 200)

	// Provider filter.
	var p1 Page[DLQEntry]
	h.owner(http.MethodGet, pathDLQ+"?provider=p1", &p1)
	is.Equal(len(p1.Items), 2)

	// Replay: unknown → 404; payload omitted (413) → 409; kept → 202 and
	// then no longer pending.
	is.Equal(h.owner(http.MethodPost, "/api/v1/webhook-dlq/nope/replay", &prob), 404)
	var big DLQEntry
	for _, e := range all.Items {
		if e.Reason == "payload_too_large" {
			big = e
		}
	}
	is.Equal(h.owner(http.MethodPost, "/api/v1/webhook-dlq/"+big.EventID+"/replay", &prob), 409)
	is.Equal(prob.Code, "WH-NOT-REPLAYABLE")
	target := p1.Items[0]
	var replayed DLQEntry
	is.Equal(h.owner(http.MethodPost, "/api/v1/webhook-dlq/"+target.EventID+"/replay", &replayed), 202)
	is.Equal(replayed.Replays, 1)
	is.Equal(replayed.Topic, "p1")
	var pending Page[DLQEntry]
	h.owner(http.MethodGet, pathDLQ+"?pending=true&limit=500", &pending)
	is.Equal(len(pending.Items), 5)
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?pending=maybe", nil), 400)

	var one DLQEntry
	is.Equal(h.owner(http.MethodGet, "/api/v1/webhook-dlq/"+target.EventID, &one), 200)
	is.Equal(one.Headers[hDLQReason], "empty_body")
	is.Equal(h.owner(http.MethodGet, "/api/v1/webhook-dlq/nope", nil), 404)
}

func TestEventsList(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	body := []byte(`{}`)
	good := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-Hub-Signature-256", githubSig(testSecret, body)))
	bad := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-Hub-Signature-256", githubSig("x", body)))
	h.record(good.EventID)
	h.record(bad.EventID)
	var p Page[Record]
	is.Equal(h.owner(http.MethodGet, pathEvents+"?status=failed", &p), 200)
	is.Equal(len(p.Items), 1)
	is.Equal(p.Items[0].EventID, bad.EventID)
	is.Equal(h.owner(http.MethodGet, pathEvents+"?provider=github&limit=1", &p), 200)
	is.Equal(len(p.Items), 1)
	is.True(p.NextCursor != "")
}

// The tail stream shows acceptance, rejection and processing as they happen.
func TestStreamShowsActivity(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := processorHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+pathStream+"?provider=github", nil)
	req.Header.Set("Authorization", "Bearer "+testOwnerToken)
	resp, err := h.srv.Client().Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	is.Equal(resp.Header.Get("Content-Type"), "text/event-stream")
	sc := bufio.NewScanner(resp.Body)
	sc.Scan() // ": connected"

	body := []byte(`{"a":1}`)
	ack := readAck(t, h.post("github", body, "Content-Type", jsonCT, "X-GitHub-Delivery", "tail-1", "X-Hub-Signature-256", githubSig(testSecret, body)))
	readProblem(t, h.post("github", nil, "Content-Type", jsonCT), 400)
	readAck(t, h.post("stripe", body, "Content-Type", jsonCT)) // filtered out

	kinds := map[string]Activity{}
	for len(kinds) < 3 && sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var a Activity
		is.NoErr(json.Unmarshal([]byte(data), &a))
		is.Equal(a.Provider, "github")
		kinds[a.Kind] = a
	}
	is.Equal(kinds[KindAccepted].EventID, ack.EventID)
	is.Equal(kinds[KindVerified].EventID, ack.EventID)
	is.Equal(kinds[KindVerified].DeliveryID, "tail-1")
	is.Equal(kinds[KindRejected].Reason, "empty_body")
}
