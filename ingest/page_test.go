package ingest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/julienschmidt/httprouter"
	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
	"github.com/agentbridge/bridge/daemon"
	"github.com/agentbridge/bridge/httpx"
)

// TestCursorSurvivesRestart: a page cursor issued by one daemon is honoured
// by the next one started on the same data directory (issue 20, item 18),
// while a tampered cursor or one used with other filters answers 400
// problem+json.
func TestCursorSurvivesRestart(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h := newHarness(t, harnessOpt{})
	for i := range 3 {
		readProblem(t, h.post(fmt.Sprintf("p%d", i%2), nil, "Content-Type", jsonCT), 400) // dead-lettered
	}
	var all Page[DLQEntry]
	waitFor(t, "3 dead letters", func() bool {
		all = Page[DLQEntry]{}
		h.owner(http.MethodGet, pathDLQ+"?limit=500", &all)
		return len(all.Items) == 3
	})
	var first Page[DLQEntry]
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit=2", &first), 200)
	is.True(first.NextCursor != "")

	// The "restarted" daemon: a new service on the same data directory.
	svc, err := New(daemon.Deps{DataDir: h.dir, DB: h.db, Broker: h.broker, Config: config.Empty(),
		IsOwner: func(r *http.Request) bool { tok, ok := daemon.BearerToken(r); return ok && tok == testOwnerToken }})
	is.NoErr(err)
	t.Cleanup(func() { _ = svc.Close() })
	router := httprouter.New()
	svc.Routes(router)
	srv := httptest.NewServer(httpx.WithRequestID("X-Request-ID", router))
	t.Cleanup(srv.Close)
	h.srv.Close()
	h.srv = srv

	var next Page[DLQEntry]
	is.Equal(h.owner(http.MethodGet, pathDLQ+"?limit=2&cursor="+url.QueryEscape(first.NextCursor), &next), 200)
	is.Equal(len(next.Items), 1)
	is.Equal(next.Items[0].EventID, all.Items[2].EventID)

	owner := []string{"Authorization", "Bearer " + testOwnerToken}
	p := readProblem(t, h.do(http.MethodGet, pathDLQ+"?limit=2&provider=p0&cursor="+url.QueryEscape(first.NextCursor), nil, owner...), 400)
	is.Equal(p.Code, "WH-INVALID-CURSOR")
	p = readProblem(t, h.do(http.MethodGet, pathDLQ+"?limit=2&pending=true&cursor="+url.QueryEscape(first.NextCursor), nil, owner...), 400)
	is.Equal(p.Code, "WH-INVALID-CURSOR")
	p = readProblem(t, h.do(http.MethodGet, pathDLQ+"?limit=2&cursor="+url.QueryEscape("x"+first.NextCursor), nil, owner...), 400)
	is.Equal(p.Code, "WH-INVALID-CURSOR")
	// A listing's cursor does not open another listing.
	p = readProblem(t, h.do(http.MethodGet, pathEvents+"?limit=2&cursor="+url.QueryEscape(first.NextCursor), nil, owner...), 400)
	is.Equal(p.Code, "WH-INVALID-CURSOR")
}
